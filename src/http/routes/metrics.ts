/**
 * `GET /metrics`: Prometheus text format from prom-client, in a Registry of its own (never the global
 * one, so two servers in one process, as in tests, do not collide). Almost everything is read at scrape
 * time in `collect()` callbacks from the state the service keeps anyway (ModelLog.stats(), the rule
 * engine's stats and queues, the router's request counts, the connection gate and the auth throttle):
 * the request path only increments a Map entry.
 *
 * Label cardinality stays bounded: `route` is the route pattern (`/api/v1/schema/list`), or `/api/*`
 * for unknown API paths, `static` for UI files, `none` before routing (414); `method` is one of the
 * usual methods or OTHER; `model`, `rule` and `input` are the uuids the operator created.
 */
import { collectDefaultMetrics, Counter, Gauge, type Metric, Registry } from 'prom-client';
import type { LatencySnapshot } from '../../store/base/latency.js';
import type { NetworkInputStats, RuleStats } from '../../scripts/shared/types.js';
import type { ModelLogStats } from '../../store/base/types.js';
import type { ConnectionGate } from '../guards/connections.js';
import type { EngineView, RegistryView } from '../core/deps.js';
import type { Router } from '../core/router.js';
import type { AuthThrottle } from '../guards/throttle.js';

export interface MetricsSources {
  registry: RegistryView;
  engine: EngineView;
  router: Router;
  connections: ConnectionGate;
  throttle: AuthThrottle;
}

const STORE_STATES = ['ok', 'read-only'] as const;

function num(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : 0;
}

/** The published models' logs, each with its stats; a model deleted meanwhile is skipped. */
function modelStats(registry: RegistryView): Array<[string, ModelLogStats]> {
  const out: Array<[string, ModelLogStats]> = [];
  for (const model of registry.list()) {
    if (!model.published) continue;
    try {
      out.push([model.uuid, registry.log(model.uuid).stats()]);
    } catch {
      // deleted or unpublished between list() and log()
    }
  }
  return out;
}

/**
 * A histogram whose buckets are counted elsewhere (the store's LatencySnapshot): prom-client's Histogram
 * can only observe single values, so this object gives the Registry the finished series.
 */
function snapshotHistogram(name: string, help: string, read: () => Array<[string, LatencySnapshot]>): Metric {
  const metric = {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    reset(): void {},
    get() {
      const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
      for (const [model, snap] of read()) {
        let cumulative = 0;
        snap.bounds.forEach((bound, i) => {
          cumulative += snap.counts[i];
          values.push({ metricName: `${name}_bucket`, labels: { model, le: bound }, value: cumulative });
        });
        cumulative += snap.counts[snap.bounds.length];
        values.push({ metricName: `${name}_bucket`, labels: { model, le: '+Inf' }, value: cumulative });
        values.push({ metricName: `${name}_sum`, labels: { model }, value: snap.sumS });
        values.push({ metricName: `${name}_count`, labels: { model }, value: snap.count });
      }
      return Promise.resolve({ name, help, type: 'histogram', aggregator: 'sum', values });
    },
  };
  return metric as unknown as Metric;
}

export interface Metrics {
  readonly registry: Registry;
  /** The exposition text; collects everything first. */
  text(): Promise<string>;
  readonly contentType: string;
}

export function createMetrics(src: MetricsSources): Metrics {
  const registry = new Registry();
  const registers = [registry];
  collectDefaultMetrics({ register: registry });

  // ---- HTTP ----
  new Counter({
    name: 'edge_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status (status "aborted": the client left first).',
    labelNames: ['route', 'method', 'status'],
    registers,
    collect() {
      this.reset();
      for (const c of src.router.requestCounts()) this.inc({ route: c.route, method: c.method, status: c.status }, c.count);
    },
  });
  new Gauge({
    name: 'edge_http_connections_open',
    help: 'Client connections open now.',
    registers,
    collect() {
      this.set(src.connections.open);
    },
  });
  new Gauge({
    name: 'edge_http_connections_max',
    help: 'The configured max_connections (0 = no limit).',
    registers,
    collect() {
      this.set(src.connections.max);
    },
  });
  new Counter({
    name: 'edge_http_connections_refused_total',
    help: 'Connections answered 503 and closed because max_connections was reached.',
    registers,
    collect() {
      this.reset();
      this.inc(src.connections.refused);
    },
  });
  new Counter({
    name: 'edge_http_auth_failures_total',
    help: 'Wrong secrets and tokens presented.',
    registers,
    collect() {
      this.reset();
      this.inc(src.throttle.failures);
    },
  });
  new Counter({
    name: 'edge_http_auth_throttled_total',
    help: 'Wrong credentials answered 429 because their address had presented too many of that kind.',
    registers,
    collect() {
      this.reset();
      this.inc(src.throttle.refused);
    },
  });
  new Gauge({
    name: 'edge_http_auth_throttle_addresses',
    help: 'Client address and credential kind pairs with recent wrong credentials (bounded table).',
    registers,
    collect() {
      this.set(src.throttle.size);
    },
  });

  // ---- models and store ----
  new Gauge({
    name: 'edge_models',
    help: 'Data models, by state.',
    labelNames: ['published'],
    registers,
    collect() {
      let published = 0;
      const all = src.registry.list();
      for (const m of all) if (m.published) published++;
      this.set({ published: 'true' }, published);
      this.set({ published: 'false' }, all.length - published);
    },
  });
  // stats() is a few field reads per model: each metric takes its own pass.
  const storeGauge = (name: string, help: string, pick: (s: ModelLogStats) => number): void => {
    new Gauge({
      name,
      help,
      labelNames: ['model'],
      registers,
      collect() {
        this.reset();
        for (const [model, stats] of modelStats(src.registry)) this.set({ model }, pick(stats));
      },
    });
  };
  storeGauge('edge_store_records', 'Records stored per published model.', (s) => s.total);
  storeGauge('edge_store_bytes', 'Bytes of segment files per published model.', (s) => s.bytes);
  storeGauge('edge_store_segments', 'Segment files per published model.', (s) => s.segments);
  storeGauge('edge_store_summary_bytes', 'Memory held by the aggregation summaries per published model (queryAggregate).', (s) => s.summaryBytes);
  storeGauge('edge_store_pending_sync_bytes', 'Bytes accepted but not yet covered by an fdatasync.', (s) => s.pendingSyncBytes);
  storeGauge(
    'edge_store_recovery_truncated_bytes',
    'Bytes of torn or unsynced tails cut at open, not yet acknowledged (POST /api/v1/schema/recovery/ack).',
    (s) => s.recoveryTruncatedBytes,
  );
  storeGauge(
    'edge_store_recovery_lost_ids',
    'Ids lost to corruption (found at open or by a read), not yet acknowledged (POST /api/v1/schema/recovery/ack).',
    (s) => s.recoveryLostIds,
  );
  new Gauge({
    name: 'edge_store_state',
    help: 'Store state per published model: 1 for the current state (ok, read-only), 0 for the others.',
    labelNames: ['model', 'state'],
    registers,
    collect() {
      this.reset();
      for (const [model, stats] of modelStats(src.registry)) {
        for (const state of STORE_STATES) this.set({ model, state }, stats.state === state ? 1 : 0);
      }
    },
  });
  const diskGauge = (name: string, help: string, pick: (d: { freeBytes: number; totalBytes: number; reserveBytes: number }) => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const disk = src.registry.diskSpace();
        if (disk === undefined) this.reset();
        else this.set(pick(disk));
      },
    });
  };
  diskGauge('edge_store_disk_free_bytes', 'Free bytes on the filesystem of the data directory (for unprivileged use).', (d) => d.freeBytes);
  diskGauge('edge_store_disk_total_bytes', 'Size of the filesystem of the data directory.', (d) => d.totalBytes);
  diskGauge('edge_store_disk_reserve_bytes', '[store] disk_reserve_bytes: below this much free space writes are refused.', (d) => d.reserveBytes);
  registry.registerMetric(
    snapshotHistogram('edge_store_fsync_seconds', 'Duration of fdatasync calls on segment files, per model.', () => {
      const out: Array<[string, LatencySnapshot]> = [];
      for (const [model, stats] of modelStats(src.registry)) {
        if (stats.fsync !== undefined) out.push([model, stats.fsync]);
      }
      return out;
    }),
  );

  // ---- rules and inputs ----
  const engine = src.engine;
  const readRules = (): Array<[string, RuleStats]> => {
    const out: Array<[string, RuleStats]> = [];
    for (const { uuid } of engine.listRules()) {
      try {
        out.push([uuid, engine.ruleStats(uuid)]);
      } catch {
        // deleted meanwhile
      }
    }
    return out;
  };
  const ruleCounter = (name: string, help: string, pick: (s: RuleStats) => number): void => {
    new Counter({
      name,
      help,
      labelNames: ['rule'],
      registers,
      collect() {
        const rules = readRules();
        this.reset();
        for (const [rule, stats] of rules) this.inc({ rule }, num(pick(stats)));
      },
    });
  };
  // The engine's stats are in memory; each metric reads them itself, so none sees a stale copy.
  ruleCounter('edge_rule_invocations_total', 'Rule invocations.', (s) => s.invocations);
  ruleCounter('edge_rule_successes_total', 'Rule invocations that succeeded.', (s) => s.successes);
  ruleCounter('edge_rule_failures_total', 'Rule invocations that failed (error, Throw, limits).', (s) => s.failures);
  new Counter({
    name: 'edge_rule_overruns_total',
    help: 'Rule tasks run without the instruction hook that ran past the soft time limit, and ran again with it.',
    registers,
    collect() {
      this.reset();
      this.inc(engine.ruleOverruns());
    },
  });
  new Gauge({
    name: 'edge_rule_latency_seconds',
    help: 'Rule invocation latency: upper bound of the histogram bucket holding the quantile (0 before any run).',
    labelNames: ['rule', 'quantile'],
    registers,
    collect() {
      const rules = readRules();
      this.reset();
      for (const [rule, stats] of rules) {
        this.set({ rule, quantile: '0.5' }, num(stats.p50Ms) / 1000);
        this.set({ rule, quantile: '0.99' }, num(stats.p99Ms) / 1000);
      }
    },
  });
  new Gauge({
    name: 'edge_input_queue_depth',
    help: 'Payloads waiting per input.',
    labelNames: ['input'],
    registers,
    collect() {
      this.reset();
      for (const { uuid } of engine.listInends()) this.set({ input: uuid }, engine.queueDepth(uuid));
    },
  });
  // The UDP and MQTT inputs (src/inputs/): their message counters and connection state.
  const inputCounter = (name: string, help: string, pick: (s: NetworkInputStats) => number): void => {
    new Counter({
      name,
      help,
      labelNames: ['input', 'type'],
      registers,
      collect() {
        const inputs = engine.networkInputs();
        this.reset();
        for (const { uuid, type, stats } of inputs) this.inc({ input: uuid, type }, num(pick(stats)));
      },
    });
  };
  inputCounter('edge_input_messages_in_total', 'Messages (UDP datagrams, MQTT PUBLISH) that reached a network input.', (s) => s.messagesIn);
  inputCounter('edge_input_messages_stored_total', 'Messages of a network input whose records are stored (MQTT: acknowledged then).', (s) => s.stored);
  inputCounter('edge_input_messages_refused_total', 'Messages a network input refused: too long, queue full (UDP), over the size limit.', (s) => s.refused);
  inputCounter('edge_input_messages_redelivered_total', 'MQTT messages that arrived with DUP set (may be stored twice: at least once).', (s) => s.redelivered);
  new Gauge({
    name: 'edge_input_connection_state',
    help: 'The state of each network input: 1 for its current state (listening, connected, reconnecting, error, stopped).',
    labelNames: ['input', 'type', 'state'],
    registers,
    collect() {
      this.reset();
      for (const { uuid, type, stats } of engine.networkInputs()) this.set({ input: uuid, type, state: stats.connection.state }, 1);
    },
  });

  return {
    registry,
    contentType: registry.contentType,
    async text() {
      return registry.metrics();
    },
  };
}
