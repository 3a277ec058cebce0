/**
 * A slow rule behind a tiny queue ([scripts] queue_max = 8): 10 publishers with 40 QoS 1 messages in
 * flight each (400, fifty times the queue) through the built-in broker, and 300 messages through a real
 * mosquitto to the client input. An HTTP push would be refused (503) here; the MQTT inputs hold the
 * messages unacknowledged instead (aedes leaves the socket unread, mqtt.js the next packet unhandled):
 * every message is acknowledged in the end, stored, and none is refused.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../support/service.js';
import { createInput, createModel, createRule, freePort, inputStats, reading, ruleFor, startMosquitto, storedTemps, waitFor, type Mosquitto } from './support.js';

const QUEUE_MAX = 8;
let svc: TestService;
let broker: Mosquitto;

/** The decoding rule of the input type, after a busy loop of some milliseconds per payload. */
function slow(actions: string): string {
  return actions.replace('function(args)', 'function(args)\n        local n = 0; for i = 1, 20000 do n = n + i end;');
}

beforeAll(async () => {
  broker = await startMosquitto();
  svc = await startService({ ini: { scripts: [`queue_max = ${QUEUE_MAX}`] } });
});

afterAll(async () => {
  await svc?.close();
  await broker?.stop();
});

describe('flow control, nothing dropped', () => {
  it('built-in broker: 400 QoS 1 messages in flight against a queue of 8 are all acknowledged and stored', async () => {
    const model = await createModel(svc.base, 'flow_b');
    const port = await freePort('tcp');
    const { uuid, token } = await createInput(svc.base, { name: 'flow-broker', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port } });
    await createRule(svc.base, uuid, slow(ruleFor('GENERIC_MQTT_SERVER', model)));
    await waitFor('listening', () => inputStats(svc.base, uuid), (s) => s.connection.state === 'listening');
    let outstandingMax = 0;
    let outstanding = 0;
    const clients = await Promise.all(
      Array.from({ length: 10 }, (_, c) => mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: `flow-${c}`, username: 'u', password: token, reconnectPeriod: 0 })),
    );
    try {
      await Promise.all(
        clients.flatMap((client, c) =>
          Array.from({ length: 40 }, async (_, i) => {
            outstanding++;
            outstandingMax = Math.max(outstandingMax, outstanding);
            await client.publishAsync('flow', reading(c * 1000 + i, c), { qos: 1 });
            outstanding--;
          }),
        ),
      );
    } finally {
      await Promise.all(clients.map((c) => c.endAsync()));
    }
    // Far more were waiting for their PUBACK than the queue holds: held, not refused.
    expect(outstandingMax).toBeGreaterThan(QUEUE_MAX * 10);
    const stored = await storedTemps(svc.base, model);
    expect(stored.length).toBe(400);
    expect(new Set(stored).size).toBe(400);
    expect(await inputStats(svc.base, uuid)).toMatchObject({ messagesIn: 400, stored: 400, refused: 0, failed: 0 });
  });

  it('client of mosquitto: 300 messages published at once against a queue of 8 are all stored', async () => {
    const model = await createModel(svc.base, 'flow_c');
    const { uuid } = await createInput(svc.base, { name: 'flow-client', type: 'GENERIC_MQTT', config: { host: '127.0.0.1', port: broker.port, clientId: 'edc-flow', subTopics: ['flow/#'] } });
    await createRule(svc.base, uuid, slow(ruleFor('GENERIC_MQTT', model)));
    await waitFor('connected', () => inputStats(svc.base, uuid), (s) => s.connection.state === 'connected');
    const pub = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: 'flow-pub', reconnectPeriod: 0 });
    await Promise.all(Array.from({ length: 300 }, (_, i) => pub.publishAsync('flow/x', reading(i), { qos: 1 })));
    await pub.endAsync();
    const stored = await waitFor('300 stored', () => storedTemps(svc.base, model), (t) => t.length >= 300, 120_000);
    expect(new Set(stored).size).toBe(300);
    expect(await inputStats(svc.base, uuid)).toMatchObject({ messagesIn: 300, stored: 300, refused: 0, failed: 0 });
  });
});
