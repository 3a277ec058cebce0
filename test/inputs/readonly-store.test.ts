/**
 * Issue 33, "a read-only store slows publishers through MQTT flow control and loses nothing", end to end:
 * the real CLI (dist/cli.js, `npm run build` first) with its data directory on a small tmpfs mounted by the
 * test (needs root: skipped with the reason printed otherwise, as test/reliability/disk-full.test.ts and
 * disk-reserve.test.ts are, with their helper), `sync = always`. Real mqtt.js clients publish QoS 1.
 *
 * 1. Below the disk reserve (16 MiB tmpfs, `[store] disk_reserve_bytes` = 4 MiB, a filler file takes the
 *    free space below it): every model turns read-only (contract 14). Publishers to a GENERIC_MQTT_SERVER
 *    input (the built-in broker) get no PUBACK for what they publish then (held in flight, connections
 *    open); a GENERIC_MQTT input subscribed to a real mosquitto takes what mosquitto's in-flight window
 *    lets through (100 here), acknowledges none of it, and leaves the rest with mosquitto. Filler gone: every message is acknowledged, every acknowledged one is stored (at least
 *    once), and a kill -9 and restart loses none.
 * 2. Disk full (8 MiB tmpfs, no reserve, 48 KiB left): publishers keep messages in flight until a write
 *    fails with ENOSPC. Messages published after that get no PUBACK; records appended in memory as the
 *    write failed are kept, not durable, so their messages are acknowledged only once stored again after
 *    space returns (duplicates: at least once). Every acknowledged message is stored, also after a kill -9.
 *
 * Why an earlier attempt "stalled": a tmpfs smaller than the default reserve (256 MiB) leaves the store
 * read-only from the start, so no PUBACK ever comes (as designed); and mqtt.js `end()` without `force`
 * waits for the PUBACKs of messages in flight, so the teardown hung too. Here the reserve is set (or 0) and
 * clients end with force. The read-only phases are short (seconds): a store read-only for longer than 1.5
 * keep-alive periods (mqtt.js default 60 s) makes the publishers drop their connections (docs/models.md).
 * Nothing asserts a duration: every wait polls a condition under a generous ceiling.
 */
import fs from 'node:fs';
import path from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, call, readAll, startService, writeConfig, type ServiceChild } from '../reliability/support/service.mjs';
import { mountTmpfs } from '../reliability/support/tmpfs.js';
import { ATTRS, freePort, reading, ruleFor, startMosquitto, waitFor, type Mosquitto } from './support.js';

const RESERVE_BYTES = 4 * 1_048_576;
/** Broker publishers and how many QoS 1 messages each has in flight while the store is read-only. */
const PUBLISHERS = 4;
const IN_FLIGHT = 50;
/** Messages published to mosquitto while the store is read-only. */
const VIA_MOSQUITTO = 200;
/** mosquitto's max_inflight_messages in startMosquitto's config: what it sends a client before a PUBACK. */
const MOSQUITTO_IN_FLIGHT = 100;
/** A ceiling for each wait (a busy machine makes the waits longer, never the test's claim). */
const CEILING_MS = 120_000;

const reserveDisk = mountTmpfs('inputs-readonly', 16);
const fullDisk = mountTmpfs('inputs-enospc', 8);
// At file level: also when a filter runs only one of the describes (each one's afterAll ends its service first).
afterAll(() => {
  reserveDisk.dispose();
  fullDisk.dispose();
});

function must(answer: { status: number; text: string; body?: any }, what: string): any {
  if (answer.status !== 200) throw new Error(`${what}: HTTP ${answer.status} ${answer.text}`);
  return answer.body.data;
}

async function createModel(base: string, name: string): Promise<string> {
  const uuid = must(await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: '' } }), 'schema/create').uuid as string;
  for (const attr of ATTRS) must(await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: uuid, name: attr, type: 'FLOAT' } }), attr);
  must(await call(base, `/api/v1/schema/publish?uuid=${uuid}`, { method: 'POST' }), 'schema/publish');
  return uuid;
}

async function createInputWithRule(base: string, input: Record<string, unknown>, actions: (inend: string) => string): Promise<{ uuid: string; token?: string }> {
  const created = must(await call(base, '/api/v1/inends/create', { method: 'POST', body: { description: '', ...input } }), 'inends/create');
  must(
    await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: `rule-${input.name}`, description: '', fromSource: [created.uuid], actions: actions(created.uuid), success: '', failed: '' } }),
    'rules/create',
  );
  return created;
}

async function stats(base: string, inend: string): Promise<any> {
  return must(await call(base, `/api/v1/inends/stats?uuid=${inend}`), 'inends/stats');
}

/** The stored `temp` values (the messages' sequence numbers) of a model, duplicates included. */
async function temps(base: string, model: string): Promise<number[]> {
  return (await readAll(base, model)).records.map((r) => Number(r.temp));
}

async function health(base: string): Promise<{ status: string; reasons?: string[] }> {
  return (await call(base, '/healthz', { token: null })).body.data;
}

/** A publisher to the broker input: each message's PUBACK recorded, none resent by mqtt.js on its own. */
interface Publisher {
  client: mqtt.MqttClient;
  /** Sequence numbers published, and those whose PUBACK came. */
  sent: number[];
  acked: Set<number>;
  /** Sequence numbers whose publish failed (connection closed before the PUBACK). */
  failed: Set<number>;
  publish(seq: number): void;
}

/** Connects publisher `c` to a broker input; `sender` goes into each reading (stored as `resistivity`). */
async function connectPublisher(port: number, token: string | undefined, clientId: string, sender: number): Promise<Publisher> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId, username: 'plc', password: token, reconnectPeriod: 0, connectTimeout: 30_000 });
  const p: Publisher = {
    client,
    sent: [],
    acked: new Set(),
    failed: new Set(),
    publish(seq) {
      p.sent.push(seq);
      client.publish('plant/ro', reading(seq, sender), { qos: 1 }, (err) => (err ? p.failed.add(seq) : p.acked.add(seq)));
    },
  };
  return p;
}

/** Waits until every publish of `publishers` has its PUBACK; none may have failed (a connection closed). */
async function everyPublishAcknowledged(publishers: Publisher[]): Promise<void> {
  await waitFor(
    'every PUBACK',
    async () => publishers.map((p) => ({ acked: p.acked.size, sent: p.sent.length, failed: p.failed.size })),
    (v) => v.every((x) => x.acked + x.failed === x.sent),
    CEILING_MS,
  );
  expect(publishers.map((p) => p.failed.size), 'publishes failed (a connection closed)').toEqual(publishers.map(() => 0));
}

function ackedCount(publishers: Publisher[]): number {
  return publishers.reduce((n, p) => n + p.acked.size, 0);
}

describe.skipIf(reserveDisk.skipReason !== undefined)('below the disk reserve (tmpfs 16 MiB, reserve 4 MiB): both MQTT inputs', () => {
  const { root, mnt } = reserveDisk;
  const filler = path.join(mnt, 'filler');
  let file: string;
  let svc: ServiceChild;
  let mosquitto: Mosquitto;
  let brokerPort: number;
  let brokerModel: string;
  let clientModel: string;
  let brokerInput: { uuid: string; token?: string };
  let clientInput: { uuid: string };
  const publishers: Publisher[] = [];
  /** Sequence numbers published to mosquitto (mosquitto acknowledged each: it keeps them for our session). */
  const viaMosquitto: number[] = [];
  /** Messages acknowledged before the store turned read-only. */
  let ackedBefore = 0;

  async function publishToMosquitto(seqs: number[]): Promise<void> {
    const pub = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosquitto.port}`, { clientId: `ro-mq-pub-${seqs[0]}`, reconnectPeriod: 0 });
    try {
      // QoS 1 to mosquitto: each resolves once mosquitto has the message (for our input's session).
      await Promise.all(seqs.map((seq) => pub.publishAsync('ro/line', reading(seq), { qos: 1 })));
      viaMosquitto.push(...seqs);
    } finally {
      await pub.endAsync();
    }
  }

  beforeAll(async () => {
    mosquitto = await startMosquitto();
    ({ file } = writeConfig(root, {
      dataDir: path.join(mnt, 'data'),
      store: { sync: 'always', segment_bytes: 65536, disk_reserve_bytes: RESERVE_BYTES },
    }));
    svc = await startService(file);
    brokerModel = await createModel(svc.base, 'ro_broker');
    clientModel = await createModel(svc.base, 'ro_client');
    brokerPort = await freePort('tcp');
    brokerInput = await createInputWithRule(svc.base, { name: 'ro-broker', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: brokerPort } }, () => ruleFor('GENERIC_MQTT_SERVER', brokerModel));
    clientInput = await createInputWithRule(
      svc.base,
      { name: 'ro-client', type: 'GENERIC_MQTT', config: { host: '127.0.0.1', port: mosquitto.port, clientId: 'edc-ro-client', qos: 1, subTopics: ['ro/#'] } },
      () => ruleFor('GENERIC_MQTT', clientModel),
    );
    await waitFor('broker listening', () => stats(svc.base, brokerInput.uuid), (s) => s.connection.state === 'listening', CEILING_MS);
    await waitFor('client connected', () => stats(svc.base, clientInput.uuid), (s) => s.connection.state === 'connected', CEILING_MS);
    for (let c = 0; c < PUBLISHERS; c++) publishers.push(await connectPublisher(brokerPort, brokerInput.token, `ro-pub-${c}`, c));
  }, 300_000);

  afterAll(async () => {
    for (const p of publishers) p.client.end(true);
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
    await mosquitto?.stop();
  });

  it('while the space is there, each QoS 1 message is acknowledged once stored', async () => {
    for (const [c, p] of publishers.entries()) for (let i = 0; i < 20; i++) p.publish(c * 100_000 + i);
    await waitFor('all acknowledged', async () => publishers.every((p) => p.acked.size === p.sent.length), (ok) => ok, CEILING_MS);
    ackedBefore = ackedCount(publishers);
    await publishToMosquitto(Array.from({ length: 20 }, (_, i) => i));
    await waitFor('stored via mosquitto', () => temps(svc.base, clientModel), (t) => t.length >= 20, CEILING_MS);
    const stored = new Set(await temps(svc.base, brokerModel));
    for (const p of publishers) for (const seq of p.acked) expect(stored.has(seq), `acknowledged ${seq} is stored`).toBe(true);
  }, 300_000);

  it('below the reserve: nothing published is acknowledged, the client input holds no more than mosquitto lets through, reads go on', async () => {
    const st = fs.statfsSync(mnt);
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, st.bavail * st.bsize - RESERVE_BYTES + 1_048_576)));
    await waitFor('read-only', () => health(svc.base), (h) => h.status === 'degraded' && (h.reasons ?? []).join(' ').includes('below the reserve'), CEILING_MS);
    const brokerIn = (await stats(svc.base, brokerInput.uuid)).messagesIn as number;
    const clientBefore = await stats(svc.base, clientInput.uuid);

    for (const [c, p] of publishers.entries()) for (let i = 0; i < IN_FLIGHT; i++) p.publish(c * 100_000 + 1000 + i);
    await publishToMosquitto(Array.from({ length: VIA_MOSQUITTO }, (_, i) => 1000 + i));

    // The broker input has read messages of every publisher, and the client input some from mosquitto: each
    // is offered to the read-only store again and again (a refusal, retried after at most 2 s).
    await waitFor('broker input holds messages', () => stats(svc.base, brokerInput.uuid), (s) => s.messagesIn >= brokerIn + PUBLISHERS, CEILING_MS);
    await waitFor('client input holds some', () => stats(svc.base, clientInput.uuid), (s) => s.messagesIn > clientBefore.messagesIn, CEILING_MS);
    // Give the retries time to go round a few times (a wait, not a claim: anything acknowledged meanwhile fails).
    await new Promise((r) => setTimeout(r, 5000));

    expect((await health(svc.base)).status).toBe('degraded');
    const ackedDuring = ackedCount(publishers) - ackedBefore;
    expect(ackedDuring, 'PUBACKs while the store is read-only').toBe(0);
    expect(publishers.map((p) => [p.failed.size, p.client.connected]), 'publishes failed or connections closed').toEqual(publishers.map(() => [0, true]));
    const broker = await stats(svc.base, brokerInput.uuid);
    expect(broker).toMatchObject({ refused: 0 });
    expect(broker.stored).toBe(ackedBefore);
    const client = await stats(svc.base, clientInput.uuid);
    // Held, none acknowledged: mosquitto sends no more than its in-flight window (max_inflight_messages
    // 100, test/inputs/support.ts) before a PUBACK; the rest wait at mosquitto.
    expect(client.messagesIn - clientBefore.messagesIn).toBeGreaterThanOrEqual(1);
    expect(client.messagesIn - clientBefore.messagesIn).toBeLessThanOrEqual(MOSQUITTO_IN_FLIGHT);
    expect(client.stored).toBe(clientBefore.stored);
    expect(client.connection.state).toBe('connected');

    // Reads go on, and nothing of this phase is stored.
    const last = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${brokerModel}&secrets=${SECRET}`, { token: null });
    expect(last.status, last.text).toBe(200);
    expect((await temps(svc.base, brokerModel)).some((t) => t % 100_000 >= 1000)).toBe(false);
  }, 300_000);

  it('space back: every message is acknowledged and every acknowledged one is stored, without a restart', async () => {
    fs.rmSync(filler);
    await everyPublishAcknowledged(publishers);
    expect((await health(svc.base)).status).toBe('ok');
    const stored = new Set(await temps(svc.base, brokerModel));
    const missing = publishers.flatMap((p) => [...p.acked].filter((seq) => !stored.has(seq)));
    expect(missing, 'acknowledged but not stored').toEqual([]);

    const viaClient = await waitFor('every message via mosquitto stored', () => temps(svc.base, clientModel), (t) => viaMosquitto.every((seq) => t.includes(seq)), CEILING_MS);
    expect(new Set(viaClient).size).toBe(viaMosquitto.length);
    const brokerStats = await stats(svc.base, brokerInput.uuid);
    expect(brokerStats).toMatchObject({ refused: 0 });
    // At least once: a message whose records were appended as the store turned read-only is stored again.
    expect(brokerStats.stored).toBeGreaterThanOrEqual(publishers.reduce((n, p) => n + p.sent.length, 0));
  }, 300_000);

  it('after a kill -9 and a restart nothing acknowledged is missing', async () => {
    for (const p of publishers) await p.client.endAsync(true);
    // kill -9: with sync = always a PUBACK came after the fdatasync of the message's records.
    await svc.kill('SIGKILL');
    svc = await startService(file);
    const stored = new Set(await temps(svc.base, brokerModel));
    expect(publishers.flatMap((p) => [...p.acked].filter((seq) => !stored.has(seq)))).toEqual([]);
    const viaClient = new Set(await temps(svc.base, clientModel));
    expect(viaMosquitto.filter((seq) => !viaClient.has(seq))).toEqual([]);
  }, 300_000);
});

/**
 * The disk really full (ENOSPC), no reserve: publishers keep QoS 1 messages in flight until the store's
 * writes fail. Records appended in memory when a write fails are kept (written once space returns) but not
 * durable, so their messages are not acknowledged yet; deliver.ts offers them again, which may store them
 * twice (at least once). Messages published once the store is read-only get no PUBACK until space returns.
 */
describe.skipIf(fullDisk.skipReason !== undefined)('disk full, ENOSPC (tmpfs 8 MiB, no reserve): the built-in broker', () => {
  const { root, mnt } = fullDisk;
  const filler = path.join(mnt, 'filler');
  const WINDOW = 20;
  let file: string;
  let svc: ServiceChild;
  let port: number;
  let model: string;
  let input: { uuid: string; token?: string };
  const publishers: Publisher[] = [];
  /** Published once the store was seen read-only: none may be acknowledged before space returns. */
  const afterReadOnly: number[] = [];

  beforeAll(async () => {
    ({ file } = writeConfig(root, {
      dataDir: path.join(mnt, 'data'),
      store: { sync: 'always', segment_bytes: 65536, disk_reserve_bytes: 0, compact_sealed: 'off' },
    }));
    svc = await startService(file);
    model = await createModel(svc.base, 'full_broker');
    port = await freePort('tcp');
    input = await createInputWithRule(svc.base, { name: 'full-broker', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port } }, () => ruleFor('GENERIC_MQTT_SERVER', model));
    await waitFor('broker listening', () => stats(svc.base, input.uuid), (s) => s.connection.state === 'listening', CEILING_MS);
    for (let c = 0; c < PUBLISHERS; c++) publishers.push(await connectPublisher(port, input.token, `full-pub-${c}`, c));
  }, 300_000);

  afterAll(async () => {
    for (const p of publishers) p.client.end(true);
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
  });

  it('publishers filling the disk: once it is full, nothing published is acknowledged', async () => {
    const st = fs.statfsSync(mnt);
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, st.bavail * st.bsize - 48 * 1024)));
    // Each publisher keeps WINDOW messages in flight, a new one for each PUBACK, until the store fails.
    let filling = true;
    let next = 0;
    for (const [c, p] of publishers.entries()) {
      const original = p.publish;
      const refill = (): void => {
        if (filling && p.sent.length - p.acked.size < WINDOW) original(c * 1_000_000 + next++);
      };
      p.client.on('packetreceive', (packet) => {
        if (packet.cmd === 'puback') setImmediate(refill);
      });
      for (let i = 0; i < WINDOW; i++) refill();
    }
    // ~70 bytes a record on disk: 48 KiB is full after several hundred messages.
    const full = await waitFor('store read-only', () => health(svc.base), (h) => h.status === 'degraded', 300_000);
    filling = false;
    expect(full.reasons?.join(' ')).toMatch(/read-only since .*ENOSPC/);
    const ackedAtFull = ackedCount(publishers);
    expect(ackedAtFull).toBeGreaterThan(100);
    for (const [c, p] of publishers.entries()) {
      for (let i = 0; i < WINDOW; i++) {
        const seq = c * 1_000_000 + 900_000 + i;
        afterReadOnly.push(seq);
        p.publish(seq);
      }
    }
    // The messages in flight when the disk filled hold their sockets: the new ones stay unread behind them
    // (TCP flow control). The retries go round meanwhile (a wait, not a claim: a PUBACK fails the test).
    await new Promise((r) => setTimeout(r, 5000));
    expect((await health(svc.base)).status).toBe('degraded');
    const acked = afterReadOnly.filter((seq) => publishers.some((p) => p.acked.has(seq)));
    expect(acked, 'PUBACKs of messages published while the disk is full').toEqual([]);
    expect(publishers.map((p) => [p.failed.size, p.client.connected]), 'publishes failed or connections closed').toEqual(publishers.map(() => [0, true]));
    // Reads go on.
    const page = await call(svc.base, `/api/v1/datacenter/queryDataList?uuid=${model}&secrets=${SECRET}&size=10&current=1`, { token: null });
    expect(page.status, page.text).toBe(200);
  }, 600_000);

  it('space back: every message is acknowledged, and each acknowledged one is stored (at least once), also after a kill -9', async () => {
    fs.rmSync(filler);
    await everyPublishAcknowledged(publishers);
    const missing = async (): Promise<number[]> => {
      const stored = new Set(await temps(svc.base, model));
      return publishers.flatMap((p) => [...p.acked].filter((seq) => !stored.has(seq)));
    };
    expect(await missing(), 'acknowledged but not stored').toEqual([]);
    const sent = publishers.reduce((n, p) => n + p.sent.length, 0);
    const s = await stats(svc.base, input.uuid);
    expect(s).toMatchObject({ refused: 0 });
    expect(s.stored).toBeGreaterThanOrEqual(sent);
    for (const p of publishers) await p.client.endAsync(true);
    await svc.kill('SIGKILL');
    svc = await startService(file);
    expect(await missing(), 'acknowledged but not stored after kill -9').toEqual([]);
  }, 600_000);
});
