/**
 * The fleet uplink against a real 3-node JetStream cluster on 127.0.0.1 (contract 17): a real store and
 * model registry on the gateway side, the real client, real nats-server processes killed, stopped and
 * restarted by PID. Every case ends with the consumer's upsert by (gateway, model, generation, id)
 * compared with the gateway's own log: 0 records lost, 0 duplicates, the newest value of every id.
 * `npm test` runs the steady state, clear, update-last and close cases; `npm run test:long` the hub leader
 * killed, the quorum lost and the long outage (test/support/suite.ts). UPLINK_LONG=1 runs the longer
 * variants (more records, longer outages).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { ModelRegistry } from '../../src/models/registry.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import { Uplink } from '../../src/uplink/uplink.js';
import { LONG_SUITE } from '../support/suite.js';
import { SKIP_REASON, useHubCluster, upsert } from './nats-cluster.js';

/** A case of `npm test`, skipped by `npm run test:long`. */
const shortCase = it.skipIf(LONG_SUITE);
/** A case of `npm run test:long` (hub nodes killed, hung or down), skipped by `npm test`. */
const longCase = it.runIf(LONG_SUITE);

const LONG = process.env.UPLINK_LONG === '1';
const N = LONG ? 200_000 : 20_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const cleanups: Array<() => Promise<void>> = [];

const nats = useHubCluster();

afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

interface Gateway {
  dir: string;
  store: Store;
  registry: ModelRegistry;
  uplink: Uplink;
  model(name: string): Promise<{ uuid: string; log: ModelLog }>;
  close(): Promise<void>;
}

async function gateway(gatewayId: string, o: { backlogMaxBytes?: number; segmentBytesMax?: number } = {}): Promise<Gateway> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-uplink-gw-'));
  const store = await Store.open(storeOptions({ rootDir: path.join(dir, 'store'), durability: 'interval', syncIntervalMs: 50, ...(o.segmentBytesMax ? { segmentBytesMax: o.segmentBytesMax } : {}) }));
  const registry = await ModelRegistry.open({ dataDir: dir, store });
  const uplink = await Uplink.start({
    config: { engine: 'nats', servers: nats.cluster.urls, credentials: '', subjectPrefix: 'edc', gatewayId, models: [], backlogMaxBytes: o.backlogMaxBytes ?? 0 },
    dataDir: dir,
    registry,
    log: { info: () => {}, warn: () => {} },
    reconnectWaitMs: 200,
    reconnectJitterMs: 200,
  });
  let closed = false;
  const g: Gateway = {
    dir,
    store,
    registry,
    uplink,
    async model(name) {
      const m = await registry.create({ name });
      await registry.createAttribute({ schemaId: m.uuid, name: 'temp', type: 'FLOAT' });
      await registry.createAttribute({ schemaId: m.uuid, name: 'n', type: 'INTEGER' });
      await registry.publish(m.uuid);
      return { uuid: m.uuid, log: registry.log(m.uuid) };
    },
    async close() {
      if (closed) return;
      closed = true;
      await uplink.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  cleanups.push(() => g.close());
  return g;
}

/** Writes `count` records at about `perSecond`, in slices, so shipping runs while writes go on. */
async function write(log: ModelLog, from: number, count: number, perSecond: number): Promise<void> {
  const slice = Math.max(1, Math.round(perSecond / 50));
  for (let i = 0; i < count; i += slice) {
    for (let j = i; j < Math.min(count, i + slice); j++) log.save({ temp: (from + j) / 10, n: from + j });
    await sleep(20);
  }
  await log.durable();
}

async function caughtUp(uplink: Uplink, uuid: string, timeoutMs = 300_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = uplink.status().models.find((x) => x.uuid === uuid);
    if (m !== undefined && m.newestId > 0 && m.lagRecords === 0 && m.inflightBatches === 0) return;
    if (Date.now() > deadline) throw new Error(`not caught up: ${JSON.stringify(m)}`);
    await sleep(50);
  }
}

/** The consumer's view of one model must equal the gateway's log, id for id and value for value. */
async function expectHubHolds(g: Gateway, gatewayId: string, uuid: string, log: ModelLog): Promise<{ lines: number; records: number }> {
  const hub = upsert((await nats.cluster.readAll()).filter((m) => m.subject.startsWith(`edc.${gatewayId}.${uuid}`)));
  const generation = log.generation;
  let records = 0;
  const missing: number[] = [];
  const wrong: number[] = [];
  for await (const r of log.iterate()) {
    records++;
    const got = hub.byKey.get(`${gatewayId}/${uuid}/${generation}/${String(r.id)}`);
    if (got === undefined) missing.push(r.id as number);
    else if (got.temp !== r.temp || got.n !== r.n || got.create_at_ms !== r.create_at) wrong.push(r.id as number);
  }
  // Ids below the log's first were shipped before retention removed them (it may, once they are acknowledged).
  const { firstId } = log.idRange();
  const ofGeneration = [...hub.byKey.keys()].filter((k) => k.includes(`/${generation}/`) && Number(k.slice(k.lastIndexOf('/') + 1)) >= firstId).length;
  expect(missing.slice(0, 10), `${missing.length} ids missing at the hub`).toEqual([]);
  expect(wrong.slice(0, 10), `${wrong.length} ids with another value at the hub`).toEqual([]);
  expect(ofGeneration, 'keys at the hub that the gateway does not have').toBe(records);
  expect(hub.gaps).toEqual([]);
  return { lines: hub.lines, records };
}

describe.skipIf(SKIP_REASON !== undefined)('uplink to a 3-node JetStream cluster', () => {
  shortCase('steady state: every record once, in id order per model, nothing duplicated in the stream', async () => {
    const g = await gateway('steady');
    const a = await g.model('steady-a');
    const b = await g.model('steady-b');
    await Promise.all([write(a.log, 0, N / 2, 5000), write(b.log, 0, N / 2, 5000)]);
    await caughtUp(g.uplink, a.uuid);
    await caughtUp(g.uplink, b.uuid);
    for (const m of [a, b]) {
      const { lines, records } = await expectHubHolds(g, 'steady', m.uuid, m.log);
      expect(records).toBe(N / 2);
      expect(lines).toBe(records);
    }
    const ids = (await nats.cluster.readAll())
      .filter((m) => m.subject === `edc.steady.${a.uuid}`)
      .flatMap((m) => m.lines.map((l) => l.id as number));
    expect(ids).toEqual([...ids].sort((x, y) => x - y));
    expect(g.uplink.status()).toMatchObject({ connected: true, gateway: 'steady' });
    await g.close();
  }, 600_000);

  longCase('hub leader killed while shipping: resumes on the new leader, 0 lost, 0 duplicates after upsert', async () => {
    const g = await gateway('leader');
    const a = await g.model('leader-a');
    const writing = write(a.log, 0, N, 4000);
    await sleep(1000);
    const killed = await nats.cluster.killLeader();
    await sleep(2000);
    nats.cluster.restart(killed);
    await writing;
    await caughtUp(g.uplink, a.uuid);
    expect((await expectHubHolds(g, 'leader', a.uuid, a.log)).records).toBe(N);
    await g.close();
  }, 600_000);

  longCase('quorum lost (two of three nodes hung) and regained: catches up, 0 lost, 0 duplicates after upsert', async () => {
    const g = await gateway('quorum');
    const a = await g.model('quorum-a');
    const writing = write(a.log, 0, N, 4000);
    await sleep(800);
    const [n1, n2] = nats.cluster.names();
    nats.cluster.pause(n1);
    nats.cluster.pause(n2);
    await sleep(LONG ? 20_000 : 4000);
    nats.cluster.resume(n1);
    nats.cluster.resume(n2);
    await writing;
    await caughtUp(g.uplink, a.uuid);
    expect((await expectHubHolds(g, 'quorum', a.uuid, a.log)).records).toBe(N);
    await g.close();
  }, 900_000);

  longCase('long outage (every hub node down): the log is the buffer, then catch-up; retention kept every unshipped record', async () => {
    const g = await gateway('outage', { segmentBytesMax: 64 * 1024 });
    const a = await g.model('outage-a');
    await g.registry.setRetention(a.uuid, { maxRecords: 1000, maxBytes: 0, maxAgeHours: 0 });
    await write(a.log, 0, 2000, 10_000);
    await caughtUp(g.uplink, a.uuid);
    for (const n of nats.cluster.names()) await nats.cluster.kill(n);
    const outage = LONG ? 4 * N : N;
    await write(a.log, 2000, outage, 50_000);
    await a.log.enforceRetention();
    // Retention's limit is 1000 records, but nothing unshipped may go.
    expect(a.log.idRange().firstId).toBeLessThanOrEqual(2001);
    expect(g.uplink.status().models[0].lagRecords).toBeGreaterThanOrEqual(outage);
    for (const n of nats.cluster.names()) nats.cluster.restart(n);
    const t0 = Date.now();
    await caughtUp(g.uplink, a.uuid);
    const catchUpS = (Date.now() - t0) / 1000;
    console.log(`uplink outage: ${outage} records caught up in ${catchUpS.toFixed(1)} s after the hub restarted`);
    const { records } = await expectHubHolds(g, 'outage', a.uuid, a.log);
    expect(records).toBeGreaterThanOrEqual(outage);
    // Acknowledged now: retention may remove them.
    await g.uplink.flush();
    await a.log.enforceRetention();
    expect(a.log.idRange().firstId).toBeGreaterThan(2001);
    await g.close();
  }, 900_000);

  shortCase('clear: the new generation starts at id 1 and both generations reach the hub complete', async () => {
    const g = await gateway('clear');
    const a = await g.model('clear-a');
    await write(a.log, 0, 3000, 20_000);
    await caughtUp(g.uplink, a.uuid);
    const before = a.log.generation;
    const firstHub = upsert(await nats.cluster.readAll()).byKey;
    await a.log.clear();
    expect(a.log.generation).not.toBe(before);
    await write(a.log, 10_000, 1500, 20_000);
    await caughtUp(g.uplink, a.uuid);
    expect((await expectHubHolds(g, 'clear', a.uuid, a.log)).records).toBe(1500);
    expect([...firstHub.keys()].filter((k) => k.startsWith(`clear/${a.uuid}/${before}/`)).length).toBe(3000);
    await g.close();
  }, 600_000);

  shortCase('update-last: the hub ends with the newest value of every id, also when it changed after it was shipped', async () => {
    const g = await gateway('update');
    const a = await g.model('update-a');
    for (let i = 0; i < 300; i++) {
      a.log.save({ temp: i, n: i });
      for (let k = 1; k <= 3; k++) a.log.updateLast({ n: i * 10 + k });
      if (i % 10 === 0) await sleep(30);
    }
    await a.log.durable();
    await caughtUp(g.uplink, a.uuid);
    // A change long after the id was acknowledged is sent again too.
    a.log.updateLast({ temp: -1 });
    await a.log.durable();
    await sleep(200);
    await caughtUp(g.uplink, a.uuid);
    await expectHubHolds(g, 'update', a.uuid, a.log);
    expect(g.uplink.status().models[0].resends).toBeGreaterThan(0);
    await g.close();
  }, 600_000);

  shortCase('closing while the hub is down waits its grace for acks in flight without blocking the event loop', async () => {
    const g = await gateway('grace');
    const a = await g.model('grace-a');
    await write(a.log, 0, 500, 10_000);
    await caughtUp(g.uplink, a.uuid);
    for (const n of nats.cluster.names()) await nats.cluster.kill(n);
    try {
      await write(a.log, 500, 2000, 20_000);
      const deadline = Date.now() + 10_000;
      while (g.uplink.status().models[0].inflightBatches === 0 && Date.now() < deadline) await sleep(20);
      expect(g.uplink.status().models[0].inflightBatches, 'batches in flight to a hub that is down').toBeGreaterThan(0);
      let ticks = 0;
      const timer = setInterval(() => ticks++, 10);
      const t0 = Date.now();
      await g.uplink.close(2000);
      const elapsedMs = Date.now() - t0;
      clearInterval(timer);
      // The grace is waited (no ack comes), and timers run meanwhile: a spin on resolved promises starves
      // them. A 10 ms timer ticks about 200 times in the 2 s grace; 10 leave room for a busy machine.
      expect(elapsedMs).toBeGreaterThanOrEqual(1950);
      expect(ticks, `${ticks} timer ticks in ${elapsedMs} ms`).toBeGreaterThanOrEqual(10);
    } finally {
      for (const n of nats.cluster.names()) nats.cluster.restart(n);
      await g.close();
    }
  }, 600_000);
});
