/**
 * GENERIC_MQTT_SERVER against real mqtt.js clients: a PUBACK means the records are readable, RHILEX's
 * event shape reaches the rule, the push token is the password (a wrong one is refused and audited),
 * anonymous only when configured (with a warning), over-size packets and subscriptions are refused,
 * and inends/stats shows the connection and the counters.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { createInput, createModel, createRule, freePort, inputStats, reading, ruleFor, storedTemps, waitFor } from './support.js';

let svc: TestService;
let model: string;
let inend: string;
let token: string;
let port: number;

beforeAll(async () => {
  svc = await startService();
  model = await createModel(svc.base, 'broker');
  port = await freePort('tcp');
  const created = await createInput(svc.base, { name: 'broker', type: 'GENERIC_MQTT_SERVER', config: { serverName: 'plant', host: '127.0.0.1', port, anonymous: false } });
  inend = created.uuid;
  token = created.token!;
  await createRule(svc.base, inend, ruleFor('GENERIC_MQTT_SERVER', model));
  await waitFor('listening', () => inputStats(svc.base, inend), (s) => s.connection.state === 'listening');
});

afterAll(async () => {
  await svc?.close();
});

function connect(options: mqtt.IClientOptions): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 10_000, ...options });
}

describe('GENERIC_MQTT_SERVER', () => {
  it('answers a push token on create and names its listener in the log', async () => {
    expect(token).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(svc.logs.some((l) => l.msg.includes(`listening on mqtt://127.0.0.1:${port}`))).toBe(true);
  });

  it('sends each PUBACK once the message is stored: every acknowledged message is readable at that moment', async () => {
    const client = await connect({ clientId: 'dev-1', username: 'plc', password: token });
    try {
      const seqs = Array.from({ length: 200 }, (_, i) => 1000 + i);
      // 200 in flight at once: aedes handles a chunk of them together, each PUBACK after its store.
      await Promise.all(seqs.map((seq) => client.publishAsync('plant/line1', reading(seq), { qos: 1 })));
      const stored = await storedTemps(svc.base, model);
      for (const seq of seqs) expect(stored).toContain(seq);
      await client.publishAsync('plant/line1', reading(5000), { qos: 2 });
      expect(await storedTemps(svc.base, model)).toContain(5000);
    } finally {
      await client.endAsync();
    }
    const stats = await inputStats(svc.base, inend);
    expect(stats.connection).toMatchObject({ state: 'listening', lastError: null });
    expect(Date.parse(stats.connection.since)).not.toBeNaN();
    expect(stats.messagesIn).toBeGreaterThanOrEqual(201);
    expect(stats.stored).toBeGreaterThanOrEqual(201);
    expect(stats).toMatchObject({ refused: 0, redelivered: 0 });
  });

  it('hands the rule RHILEX event shape {action, clientid, username, ipaddress, ts, topic, payload}', async () => {
    const seen = await createInput(svc.base, { name: 'echo', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: await freePort('tcp'), anonymous: true } });
    // The rule throws its args: the input's last error carries them as the rule saw them.
    await createRule(svc.base, seen.uuid, 'Actions = { function(args) local b = json:J2T(args); if b.action == "publish" then Throw(args) end; return true, args end }');
    const cfg = (await call(svc.base, `/api/v1/inends/detail?uuid=${seen.uuid}`)).body.data.config;
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${cfg.port}`, { clientId: 'dev-echo', username: 'who', reconnectPeriod: 0 });
    const before = Date.now();
    await client.publishAsync('a/b', 'héllo {"x":1}', { qos: 1 });
    await client.endAsync();
    const stats = await inputStats(svc.base, seen.uuid);
    const json = /(\{"action".*\})/.exec(stats.lastError.message)?.[1];
    const event = JSON.parse(json!);
    expect(Object.keys(event)).toEqual(['action', 'clientid', 'username', 'ipaddress', 'ts', 'topic', 'payload']);
    expect(event).toMatchObject({ action: 'publish', clientid: 'dev-echo', username: 'who', topic: 'a/b', payload: 'héllo {"x":1}' });
    expect(event.ipaddress).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(event.ts).toBeGreaterThanOrEqual(before - 1000);
    expect(svc.logs.some((l) => l.level === 40 && l.msg.includes('takes anonymous clients'))).toBe(true);
  });

  it('hands the rule RHILEX connect and disconnect events {action, clientid, username, ipaddress, ts}', async () => {
    const seen = await createInput(svc.base, { name: 'echo-connect', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: await freePort('tcp'), anonymous: true } });
    // The rule throws each connect or disconnect event: the input's last error carries the last one.
    await createRule(svc.base, seen.uuid, 'Actions = { function(args) local b = json:J2T(args); if b.action ~= "publish" then Throw(args) end; return true, args end }');
    const cfg = (await call(svc.base, `/api/v1/inends/detail?uuid=${seen.uuid}`)).body.data.config;
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${cfg.port}`, { clientId: 'dev-hello', username: 'who', reconnectPeriod: 0 });
    const eventOf = (stats: any) => JSON.parse(/(\{"action".*\})/.exec(stats.lastError?.message ?? '')?.[1] ?? 'null');
    const connected = eventOf(await waitFor('connect event', () => inputStats(svc.base, seen.uuid), (s) => eventOf(s)?.action === 'connect'));
    await client.endAsync();
    const disconnected = eventOf(await waitFor('disconnect event', () => inputStats(svc.base, seen.uuid), (s) => eventOf(s)?.action === 'disconnect'));
    for (const event of [connected, disconnected]) {
      expect(Object.keys(event)).toEqual(['action', 'clientid', 'username', 'ipaddress', 'ts']);
      expect(event).toMatchObject({ clientid: 'dev-hello', username: 'who' });
      expect(event.ipaddress).toMatch(/^127\.0\.0\.1:\d+$/);
      expect(typeof event.ts).toBe('number');
    }
  });

  it('refuses a wrong or missing password (CONNACK 4) and writes the failures to the audit log', async () => {
    await expect(connect({ clientId: 'bad-1', username: 'plc', password: 'not-the-token' })).rejects.toThrow(/Bad username or password/i);
    await expect(connect({ clientId: 'bad-2' })).rejects.toThrow(/Bad username or password/i);
  });

  it('refuses a subscription: the broker is an input, not a relay', async () => {
    const client = await connect({ clientId: 'sub-1', password: token, username: 'x' });
    try {
      // SUBACK 0x80: mqtt.js turns a refused subscription into an error.
      await expect(client.subscribeAsync('plant/#', { qos: 1 })).rejects.toThrow(/Subscribe error/);
    } finally {
      await client.endAsync();
    }
  });

  it('cuts off a client whose packet is over maxMessageBytes and counts it refused', async () => {
    const before = (await inputStats(svc.base, inend)).refused;
    const client = await connect({ clientId: 'big-1', username: 'x', password: token });
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish('plant/big', Buffer.alloc(200_000, 1), { qos: 1 }, () => undefined);
    await closed;
    client.end(true);
    expect((await inputStats(svc.base, inend)).refused).toBeGreaterThan(before);
  });

  it('stops listening when the input is deleted', async () => {
    const other = await createInput(svc.base, { name: 'gone', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: await freePort('tcp'), anonymous: true } });
    const cfg = (await call(svc.base, `/api/v1/inends/detail?uuid=${other.uuid}`)).body.data.config;
    const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${cfg.port}`, { reconnectPeriod: 0 });
    await c.endAsync();
    expect((await call(svc.base, `/api/v1/inends/del?uuid=${other.uuid}`, { method: 'DELETE' })).status).toBe(200);
    await expect(mqtt.connectAsync(`mqtt://127.0.0.1:${cfg.port}`, { reconnectPeriod: 0, connectTimeout: 2000 })).rejects.toThrow();
  });

  it('audits the failed logins as auth.failed with kind mqtt-password (written at the latest on close)', async () => {
    await svc.close();
    const line = svc.logs.find((l) => l.audit === 'auth.failed' && Array.isArray(l.kinds) && (l.kinds as string[]).includes('mqtt-password'));
    expect(line).toMatchObject({ client: '127.0.0.1', count: 2 });
  });
});
