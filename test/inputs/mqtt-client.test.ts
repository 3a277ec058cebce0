/**
 * GENERIC_MQTT against a real mosquitto (started on a free port by the test, stopped in afterAll):
 * messages on the subscribed topics reach the rule as RHILEX's `{"topic", "payload": <base64>}`, are
 * stored, and the input shows connected; when the broker goes away the input shows reconnecting with
 * the error and comes back by itself; a RHILEX export of the config is accepted as it is.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { createInput, createModel, createRule, inputStats, reading, ruleFor, startMosquitto, storedTemps, waitFor, type Mosquitto } from './support.js';

let broker: Mosquitto;
let svc: TestService;
let model: string;
let inend: string;

beforeAll(async () => {
  broker = await startMosquitto();
  svc = await startService();
  model = await createModel(svc.base, 'client');
  // A RHILEX export of a GENERIC_MQTT input, as RHILEX's generic_mqtt_source.md shows it, port aside.
  const created = await createInput(svc.base, {
    name: 'plant-broker',
    type: 'GENERIC_MQTT',
    config: { clientId: 'rhilexg19791', host: '127.0.0.1', port: broker.port, username: 'hootrhino', password: '12345678', qos: 1, subTopics: ['/topic1/#', '/topic2/#', 'plant/+/data'] },
  });
  inend = created.uuid;
  await createRule(svc.base, inend, ruleFor('GENERIC_MQTT', model));
  await waitFor('connected', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected');
});

afterAll(async () => {
  await svc?.close();
  await broker?.stop();
});

async function publisher(): Promise<mqtt.MqttClient> {
  return mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: `pub-${Math.random().toString(16).slice(2)}`, reconnectPeriod: 0 });
}

describe('GENERIC_MQTT', () => {
  it('keeps the exported config and says it is connected', async () => {
    const detail = (await call(svc.base, `/api/v1/inends/detail?uuid=${inend}`)).body.data;
    expect(detail.config).toMatchObject({ clientId: 'rhilexg19791', qos: 1, subTopics: ['/topic1/#', '/topic2/#', 'plant/+/data'] });
    const stats = await inputStats(svc.base, inend);
    expect(stats.connection).toMatchObject({ state: 'connected' });
    expect(svc.logs.some((l) => l.msg.includes(`connected to mqtt://127.0.0.1:${broker.port} as rhilexg19791`))).toBe(true);
  });

  it('stores every message published on a subscribed topic, and none of another topic', async () => {
    const pub = await publisher();
    try {
      for (let seq = 1; seq <= 100; seq++) await pub.publishAsync(seq % 2 === 0 ? '/topic1/dev' : 'plant/l1/data', reading(seq), { qos: 1 });
      await pub.publishAsync('other/topic', reading(999), { qos: 1 });
    } finally {
      await pub.endAsync();
    }
    const stored = await waitFor('100 stored', () => storedTemps(svc.base, model), (t) => t.length >= 100);
    expect([...stored].sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    const stats = await inputStats(svc.base, inend);
    expect(stats).toMatchObject({ messagesIn: 100, stored: 100, refused: 0 });
  });

  it('hands the rule {"topic", "payload": <base64 of the message>}', async () => {
    const echo = await createInput(svc.base, { name: 'echo', type: 'GENERIC_MQTT', config: { host: '127.0.0.1', port: broker.port, clientId: 'edc-echo', qos: 0, subTopics: ['echo/#'] } });
    await createRule(svc.base, echo.uuid, 'Actions = { function(args) Throw(args); return true, args end }');
    await waitFor('echo connected', () => inputStats(svc.base, echo.uuid), (s) => s.connection.state === 'connected');
    const pub = await publisher();
    const message = Buffer.from([0, 1, 2, 250, 255, 0x41]);
    await pub.publishAsync('echo/x', message, { qos: 1 });
    await pub.endAsync();
    const stats = await waitFor('echo seen', () => inputStats(svc.base, echo.uuid), (s) => s.lastError !== null);
    const args = JSON.parse(/(\{"topic".*\})/.exec(stats.lastError.message)![1]);
    expect(Object.keys(args)).toEqual(['topic', 'payload']);
    expect(args).toEqual({ topic: 'echo/x', payload: message.toString('base64') });
  });

  it('shows reconnecting with the error while the broker is down, comes back by itself, and gets what the broker kept', async () => {
    const sinceBefore = (await inputStats(svc.base, inend)).connection.since;
    // 500 acknowledged by mosquitto, then it restarts while the input is still storing them: the rest
    // come from mosquitto's persisted session once the input is back.
    const early = await publisher();
    await Promise.all(Array.from({ length: 500 }, (_, i) => early.publishAsync('/topic1/burst', reading(10_000 + i), { qos: 1 })));
    await early.endAsync();
    await broker.restart();
    const back = await waitFor('connected again', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected' && s.connection.since !== sinceBefore);
    expect(back.connection.lastError).not.toBeNull();
    expect(svc.logs.filter((l) => typeof l.msg === 'string' && l.msg.includes(' connected to mqtt://')).length).toBeGreaterThanOrEqual(2);
    const pub = await publisher();
    await pub.publishAsync('/topic2/after', reading(500), { qos: 1 });
    await pub.endAsync();
    const stored = await waitFor('stored after reconnect', () => storedTemps(svc.base, model), (t) => t.includes(500) && Array.from({ length: 500 }, (_, i) => 10_000 + i).every((s) => t.includes(s)));
    expect(stored.length).toBeGreaterThanOrEqual(601);
  });
});
