/**
 * The uplink state on a model's Storage tab (contract 17) in a real browser, against a real nats-server
 * (one JetStream node on 127.0.0.1: enough for the page; test/uplink covers the 3-node cluster):
 * connected, lag, backlog, acknowledged and dropped records, then the hub gone and records waiting.
 * The "uplink off" state is checked in storage.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, setup, shot, signIn, type Env } from './harness.js';
import { NatsCluster, SKIP_REASON } from '../uplink/nats-cluster.js';

let env: Env;
let hub: NatsCluster;
let uuid: string;

interface UplinkModel {
  uuid: string;
  lagRecords: number;
  inflightBatches: number;
  ackedRecords: number;
}

beforeAll(async () => {
  if (SKIP_REASON !== undefined) return;
  hub = await NatsCluster.start(1);
  await hub.createStream();
  env = await setup({ ini: { uplink: ['engine = nats', `servers = ${hub.urls[0]}`, 'gateway_id = e2e'] } });
  uuid = (await api<{ uuid: string }>(env.base, 'POST', 'schema/create', { name: 'tank', description: '' })).uuid;
  await api(env.base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'level', type: 'FLOAT' });
  await api(env.base, 'POST', `schema/publish?uuid=${uuid}`);
}, 60_000);

afterAll(async () => {
  await env?.close();
  await hub?.stop();
});

async function shipped(): Promise<UplinkModel | undefined> {
  const status = await api<{ models: UplinkModel[] }>(env.base, 'GET', 'uplink/status');
  return status.models.find((m) => m.uuid === uuid);
}

describe.skipIf(SKIP_REASON !== undefined)('Storage tab: uplink state', () => {
  it('shows connected, lag, backlog and acknowledged records, then the hub gone and records waiting', async () => {
    const { page, base, service } = env;
    const log = service.registry.log(uuid);
    for (let i = 0; i < 250; i++) log.save({ level: i / 10 });
    await log.durable();
    await expect.poll(async () => (await shipped())?.ackedRecords, { timeout: 30_000 }).toBe(250);

    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/storage`);
    await page.getByRole('heading', { name: 'Uplink' }).waitFor();
    expect(await page.locator('#uplink-connected').textContent()).toMatch(/^yes, to /);
    expect(await page.locator('#uplink-lag').textContent()).toBe('0 records, 0.0 s');
    expect(await page.locator('#uplink-acked').textContent()).toBe('250 records since the start');
    expect(await page.locator('#uplink-dropped').textContent()).toBe('0');
    await page.setViewportSize({ width: 1280, height: 1150 });
    await shot(page, 'storage-uplink', { doc: 'storage-uplink' });

    await hub.kill('n1');
    for (let i = 0; i < 40; i++) log.save({ level: i });
    await log.durable();
    await expect.poll(async () => (await shipped())?.lagRecords, { timeout: 10_000 }).toBe(40);
    await page.reload();
    await page.getByRole('heading', { name: 'Uplink' }).waitFor();
    expect(await page.locator('#uplink-connected').textContent()).toBe('no: records wait here');
    expect(await page.locator('#uplink-lag').textContent()).toMatch(/^40 records, /);
    expect(await page.locator('#uplink-backlog').textContent()).not.toBe('0 B');
    expect(env.problems).toEqual([]);
  }, 90_000);
});
