/**
 * The fleet uplink (contract 17, docs/uplink.md): one NATS link, one Shipper per shipped model, one
 * cursor file. It follows the registry (publish, delete, fix, restore all change the set of logs or
 * replace a log) and holds each shipped log's retention floor at the cursor that is on disk.
 */
import type { Config } from '../config/types.js';
import type { ModelRegistry } from '../models/registry.js';
import { InflightBudget } from './budget.js';
import { LoopShare } from './loop-share.js';
import { CursorBook } from './cursors.js';
import type { NatsLink, Publisher } from './nats-link.js';
import { Shipper, type ShippedLog, type ShipperStatus } from './shipper.js';
import type { ModelLog } from '../store/log/model-log.js';

export const CURSOR_FLUSH_MS = 1000;
const RESCAN_MS = 1000;

type UplinkLog = ShippedLog & Pick<ModelLog, 'setRetentionFloor' | 'stats'>;
export type UplinkRegistry = Pick<ModelRegistry, 'list' | 'onChange'> & { log(uuid: string): UplinkLog };

export interface UplinkLogger {
  info(message: string): void;
  warn(message: string): void;
}

export interface UplinkOptions {
  config: Config['uplink'];
  dataDir: string;
  registry: UplinkRegistry;
  log: UplinkLogger;
  /** Tests: another publisher, shorter reconnects. */
  link?: Publisher & { start(): void; close(): Promise<void> };
  reconnectWaitMs?: number;
  reconnectJitterMs?: number;
}

export interface UplinkStatus {
  engine: 'nats';
  gateway: string;
  subjectPrefix: string;
  servers: readonly string[];
  connected: boolean;
  server: string | undefined;
  reconnects: number;
  inflightBytes: number;
  models: Array<{ uuid: string; name: string } & ShipperStatus & { backlogBytes: number }>;
}

interface Running {
  log: UplinkLog;
  shipper: Shipper;
}

export class Uplink {
  private readonly shippers = new Map<string, Running>();
  private readonly budget = new InflightBudget();
  private readonly share = new LoopShare();
  private readonly timers: NodeJS.Timeout[] = [];
  private readonly stopWatching: () => void;
  private closed = false;
  private flushing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly o: UplinkOptions,
    private readonly cursors: CursorBook,
    private readonly link: Publisher & { start(): void; close(): Promise<void> },
  ) {
    this.stopWatching = o.registry.onChange(() => this.follow());
  }

  static async start(o: UplinkOptions): Promise<Uplink> {
    const c = o.config;
    const cursors = await CursorBook.open(o.dataDir, c.gatewayId, (m) => o.log.warn(`uplink: ${m}`));
    const link =
      o.link ??
      new (await import('./nats-link.js')).NatsLink({
        servers: c.servers,
        credentials: c.credentials,
        gateway: c.gatewayId,
        log: o.log,
        ...(o.reconnectWaitMs === undefined ? {} : { reconnectWaitMs: o.reconnectWaitMs }),
        ...(o.reconnectJitterMs === undefined ? {} : { reconnectJitterMs: o.reconnectJitterMs }),
      });
    const uplink = new Uplink(o, cursors, link);
    link.start();
    uplink.follow();
    uplink.timers.push(setInterval(() => uplink.follow(), RESCAN_MS));
    uplink.timers.push(setInterval(() => void uplink.flush(), CURSOR_FLUSH_MS));
    for (const t of uplink.timers) t.unref();
    o.log.info(`uplink: gateway ${c.gatewayId} ships to ${c.subjectPrefix}.${c.gatewayId}.<model> on ${c.servers.join(', ')}`);
    return uplink;
  }

  /** Starts a shipper for each selected published model, replaces those whose log changed, stops the rest. */
  private follow(): void {
    if (this.closed) return;
    const wanted = new Map<string, UplinkLog>();
    const only = this.o.config.models;
    for (const m of this.o.registry.list()) {
      if (!m.published || (only.length > 0 && !only.includes(m.uuid))) continue;
      try {
        wanted.set(m.uuid, this.o.registry.log(m.uuid));
      } catch {
        // closed or unpublished meanwhile: the next pass sees it
      }
    }
    for (const [uuid, running] of this.shippers) {
      if (wanted.get(uuid) === running.log) continue;
      this.shippers.delete(uuid);
      running.log.setRetentionFloor(undefined);
      void running.shipper.stop(0);
    }
    for (const [uuid, log] of wanted) if (!this.shippers.has(uuid)) this.ship(uuid, log);
  }

  private ship(uuid: string, log: UplinkLog): void {
    const c = this.o.config;
    const shipper = new Shipper({
      prefix: c.subjectPrefix,
      gateway: c.gatewayId,
      model: uuid,
      log,
      link: this.link,
      budget: this.budget,
      share: this.share,
      cursor: this.cursors.get(uuid),
      onCursor: (cursor) => this.cursors.set(uuid, cursor),
      warn: (m) => this.o.log.warn(m),
    });
    // Until the cursor of this generation is on disk, a crash resumes from the log's first id: keep it all.
    log.setRetentionFloor({
      keepFromId: () => {
        const onDisk = this.cursors.persisted(uuid);
        return onDisk?.generation === log.generation ? onDisk.nextId : 0;
      },
      backlogMaxBytes: c.backlogMaxBytes,
    });
    this.shippers.set(uuid, { log, shipper });
    shipper.start();
  }

  flush(): Promise<void> {
    this.flushing = this.flushing
      .then(() => this.cursors.flush())
      .catch((err: Error) => this.o.log.warn(`uplink: cursor file not written: ${err.message}`));
    return this.flushing;
  }

  status(): UplinkStatus {
    const c = this.o.config;
    const link = this.link as Partial<NatsLink> & Publisher;
    const names = new Map(this.o.registry.list().map((m) => [m.uuid, m.name]));
    return {
      engine: 'nats',
      gateway: c.gatewayId,
      subjectPrefix: c.subjectPrefix,
      servers: c.servers,
      connected: link.connected,
      server: link.server,
      reconnects: link.reconnects ?? 0,
      inflightBytes: this.budget.used,
      models: [...this.shippers].map(([uuid, r]) => {
        const s = r.shipper.status();
        return { uuid, name: names.get(uuid) ?? uuid, ...s, backlogBytes: backlogBytesOf(r.log, s) };
      }),
    };
  }

  /** Stops shipping (batches in flight get `graceMs` to be acknowledged), writes the cursors, closes the link. */
  async close(graceMs = 2000): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopWatching();
    for (const t of this.timers) clearInterval(t);
    await Promise.all([...this.shippers.values()].map((r) => r.shipper.stop(graceMs)));
    await this.flush();
    for (const r of this.shippers.values()) r.log.setRetentionFloor(undefined);
    this.shippers.clear();
    await this.link.close();
  }
}

/** Bytes of the log not yet acknowledged, estimated from the average record size (stats() has no per-id bytes). */
function backlogBytesOf(log: UplinkLog, s: ShipperStatus): number {
  const stats = log.stats();
  if (stats.total === 0) return 0;
  return Math.round((stats.bytes / stats.total) * Math.min(s.lagRecords, stats.total));
}
