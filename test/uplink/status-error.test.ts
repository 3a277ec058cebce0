/**
 * `uplink/status` (contract 17) against a real 3-node JetStream cluster: a gateway that starts while
 * every hub node is down shows each model's `lastError` ("not connected to the hub"); once the hub is
 * back and a batch is acknowledged, the error is gone, so a status that says `connected: true` with
 * records acknowledged no longer carries an error of the outage.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { ModelRegistry } from '../../src/models/registry.js';
import { Uplink } from '../../src/uplink/uplink.js';
import { SKIP_REASON, useHubCluster } from './nats-cluster.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const nats = useHubCluster();
const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
});

async function until<T>(what: string, read: () => T, ok: (v: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: ${JSON.stringify(v)}`);
    await sleep(50);
  }
}

describe.skipIf(SKIP_REASON !== undefined)('uplink/status after an outage', () => {
  it('lastError is cleared once a batch is acknowledged after it', async () => {
    for (const n of nats.cluster.names()) await nats.cluster.kill(n);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-uplink-status-'));
    const store = await Store.open(storeOptions({ rootDir: path.join(dir, 'store'), durability: 'interval', syncIntervalMs: 50 }));
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    const uplink = await Uplink.start({
      config: { engine: 'nats', servers: nats.cluster.urls, credentials: '', subjectPrefix: 'edc', gatewayId: 'status', models: [], backlogMaxBytes: 0 },
      dataDir: dir,
      registry,
      log: { info: () => {}, warn: () => {} },
      reconnectWaitMs: 200,
      reconnectJitterMs: 200,
    });
    cleanups.push(async () => {
      await uplink.close(0);
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    const m = await registry.create({ name: 'status-a' });
    await registry.createAttribute({ schemaId: m.uuid, name: 'n', type: 'INTEGER' });
    await registry.publish(m.uuid);
    const log = registry.log(m.uuid);
    for (let i = 1; i <= 100; i++) log.save({ n: i });
    await log.durable();

    const model = () => uplink.status().models.find((x) => x.uuid === m.uuid);
    await until('an error while the hub is down', model, (s) => s?.lastError !== undefined);
    expect(model()?.lastError).toBe('not connected to the hub');

    for (const n of nats.cluster.names()) nats.cluster.restart(n);
    await until('caught up', model, (s) => s !== undefined && s.lagRecords === 0 && s.inflightBatches === 0 && s.ackedRecords >= 100, 120_000);
    expect(uplink.status().connected).toBe(true);
    expect(model()).toMatchObject({ ackedRecords: 100, lastError: undefined });
  }, 300_000);
});
