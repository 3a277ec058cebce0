/**
 * `[uplink] backlog_max_bytes` end to end (contract 17): the service (real HTTP, store, registry and
 * uplink) ships to a real 3-node JetStream cluster; every hub node goes down; the model's unshipped
 * records grow past the limit and retention removes the oldest of them. When the hub is back, gap
 * messages on `<prefix>.<gateway>.<model>.gap` name exactly the ids the hub never got (one message per
 * removed range: batches read before a removal are still sent), /metrics and the
 * status route count them, and every other record arrives: none lost beyond the gap, none twice.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { cursorsPath } from '../../src/uplink/cursors.js';
import { ADMIN, startService, type TestService } from '../support/service.js';
import { SKIP_REASON, useHubCluster, upsert } from './nats-cluster.js';
import { INFLIGHT_BYTES_MAX } from '../../src/uplink/budget.js';

const GATEWAY = 'backlog';
const BACKLOG_MAX_BYTES = 128 * 1024;
/**
 * Written while the hub is down: more message bytes (about 150 B a record: gateway, model, generation,
 * id, create_at_ms, n) than the shipper may hold in flight, so whatever it read before retention ran, the
 * rest is removed unread and must be a gap.
 */
const OUTAGE_RECORDS = Math.ceil((2 * INFLIGHT_BYTES_MAX) / 150);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let service: TestService | undefined;

const nats = useHubCluster();

afterAll(async () => {
  await service?.close();
});

async function admin(path: string): Promise<{ json: unknown; text: string }> {
  const res = await fetch(`${service?.base}${path}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
  const text = await res.text();
  expect(res.status, `${path}: ${text}`).toBe(200);
  return { json: path === '/metrics' ? undefined : (JSON.parse(text) as { data: unknown }).data, text };
}

interface ModelStatus {
  uuid: string;
  lagRecords: number;
  inflightBatches: number;
  droppedRecords: number;
  gaps: number;
}

async function modelStatus(uuid: string): Promise<ModelStatus | undefined> {
  const status = (await admin('/api/v1/uplink/status')).json as { models: ModelStatus[] };
  return status.models.find((m) => m.uuid === uuid);
}

/**
 * Until `<data_dir>/uplink/cursors.json` says the hub acknowledged every id before `nextId` of this
 * generation: what is on disk is the retention floor (cursors.ts), written at most once per flush period.
 */
async function cursorOnDisk(uuid: string, generation: string, nextId: number, timeoutMs: number): Promise<void> {
  const file = cursorsPath(service!.config.main.dataDir);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await readFile(file, 'utf8').catch(() => '{}');
    let cursor: { generation?: string; nextId?: number } | undefined;
    try {
      cursor = (JSON.parse(text) as { models?: Record<string, { generation: string; nextId: number }> }).models?.[uuid];
    } catch {
      cursor = undefined; // read while it was replaced: try again
    }
    if (cursor?.generation === generation && cursor.nextId === nextId) return;
    if (Date.now() > deadline) throw new Error(`cursor file not caught up: ${text}`);
    await sleep(100);
  }
}

async function caughtUp(uuid: string, timeoutMs: number): Promise<ModelStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await modelStatus(uuid);
    if (m !== undefined && m.lagRecords === 0 && m.inflightBatches === 0) return m;
    if (Date.now() > deadline) throw new Error(`not caught up: ${JSON.stringify(m)}`);
    await sleep(100);
  }
}

describe.skipIf(SKIP_REASON !== undefined)('backlog_max_bytes while the hub is down', () => {
  it('retention removes unshipped records past the limit; the gap messages name exactly them, the rest arrives once', async () => {
    service = await startService({
      logLevel: 'silent',
      ini: {
        // Compacted, the outage's segments fit in backlog_max_bytes: the floor would then keep them all.
        store: ['sync = interval', 'sync_interval_ms = 50', 'segment_bytes = 65536', 'compact_sealed = off'],
        uplink: ['engine = nats', `servers = ${nats.cluster.urls.join(', ')}`, `gateway_id = ${GATEWAY}`, `backlog_max_bytes = ${BACKLOG_MAX_BYTES}`],
      },
    });
    const { registry } = service;
    const model = await registry.create({ name: 'backlog' });
    await registry.createAttribute({ schemaId: model.uuid, name: 'n', type: 'INTEGER' });
    await registry.publish(model.uuid);
    await registry.setRetention(model.uuid, { maxRecords: 1000, maxBytes: 0, maxAgeHours: 0 });
    const log = registry.log(model.uuid);
    const write = async (from: number, count: number): Promise<void> => {
      for (let i = from; i < from + count; i++) {
        log.save({ n: i });
        if (i % 500 === 0) await sleep(5);
      }
      await log.durable();
    };

    await write(0, 2000);
    // Waited for, however long a busy machine takes (the ceilings only turn a hang into a failure).
    await caughtUp(model.uuid, 300_000);
    await cursorOnDisk(model.uuid, log.generation, 2001, 300_000); // the cursor file (the retention floor) catches up too

    for (const n of nats.cluster.names()) await nats.cluster.kill(n);
    await write(2000, OUTAGE_RECORDS);
    await sleep(500);
    await log.enforceRetention();
    const lastId = log.idRange().lastId;
    const firstKept = log.idRange().firstId;
    // Far more unshipped than backlog_max_bytes: retention applied its own limit (1000 records) over them.
    expect(lastId).toBe(2000 + OUTAGE_RECORDS);
    expect(firstKept).toBeGreaterThan(2001 + OUTAGE_RECORDS / 2);

    for (const n of nats.cluster.names()) nats.cluster.restart(n);
    const status = await caughtUp(model.uuid, 300_000);

    const hub = upsert((await nats.cluster.readAll()).filter((m) => m.subject.startsWith(`edc.${GATEWAY}.${model.uuid}`)));
    // Records read before retention removed them were sent (they were in memory): the lost ids may form
    // more than one range, one gap message each, in id order.
    expect(hub.gaps.length, 'gap messages').toBeGreaterThanOrEqual(1);
    const named: number[] = [];
    for (const gap of hub.gaps) {
      expect(gap.subject).toBe(`edc.${GATEWAY}.${model.uuid}.gap`);
      const body = gap.lines[0] as { fromId: number; toId: number; records: number };
      expect(body).toMatchObject({ gateway: GATEWAY, model: model.uuid, generation: log.generation, reason: 'backlog_max_bytes' });
      expect(body.records).toBe(body.toId - body.fromId + 1);
      expect(gap.headers).toMatchObject({ 'Edc-Kind': 'gap', 'Edc-First-Id': String(body.fromId), 'Edc-Last-Id': String(body.toId) });
      expect(body.fromId).toBeGreaterThan(named.at(-1) ?? 2000);
      for (let id = body.fromId; id <= body.toId; id++) named.push(id);
    }

    // Exactly the ids the hub does not have are named, and only ids retention removed.
    const atHub = new Set([...hub.byKey.values()].map((l) => l.id as number));
    const missing: number[] = [];
    for (let id = 1; id <= lastId; id++) if (!atHub.has(id)) missing.push(id);
    expect(missing).toEqual(named);
    expect(named.at(-1)).toBeLessThan(firstKept);
    // Every other record arrived with its value, and none of them twice.
    for (const l of hub.byKey.values()) expect(l.n).toBe((l.id as number) - 1);
    expect(hub.byKey.size).toBe(lastId - named.length);
    expect(hub.lines, 'lines stored twice').toBe(hub.byKey.size);

    expect(status).toMatchObject({ droppedRecords: named.length, gaps: hub.gaps.length });
    const metrics = (await admin('/metrics')).text;
    expect(metrics).toContain(`edge_uplink_dropped_records_total{model="${model.uuid}"} ${named.length}`);
    console.log(`backlog_max_bytes: ${named.length} records removed unshipped, named by ${hub.gaps.length} gap message(s); ${hub.byKey.size} records at the hub`);
  }, 900_000);
});
