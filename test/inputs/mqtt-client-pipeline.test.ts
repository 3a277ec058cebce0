/**
 * GENERIC_MQTT takes mosquitto's messages several at a time and holds their PUBACKs until they are stored
 * (src/inputs/mqtt-client.ts, ack-hold.ts). The input runs against a real mosquitto with real mqtt.js
 * publishers; its sink forwards each push to a real service's HTTP input with the GENERIC_MQTT rule.
 * Checked: a burst arrives in fewer pushes than messages and is stored whole; and while a push is not
 * answered its messages are not acknowledged: an input stopped then leaves all of them with mosquitto,
 * which hands every one to the next input of the same session (a PUBACK sent early would have lost them).
 */
import mqtt, { MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InputSink } from '../../src/inputs/deliver.js';
import { MqttClientInput } from '../../src/inputs/mqtt-client.js';
import type { MqttClientConfig, PushResult } from '../../src/scripts/shared/types.js';
import { startService, type TestService } from '../support/service.js';
import { httpStandIn, reading, startMosquitto, storedTemps, waitFor, type Mosquitto } from './support.js';

let broker: Mosquitto;
let svc: TestService;
let standIn: Awaited<ReturnType<typeof httpStandIn>>;

beforeAll(async () => {
  broker = await startMosquitto();
  svc = await startService();
  standIn = await httpStandIn(svc.base, 'pipelined', 'GENERIC_MQTT');
});

afterAll(async () => {
  await svc?.close();
  await broker?.stop();
});

function config(clientId: string, topic: string): MqttClientConfig {
  return { host: '127.0.0.1', port: broker.port, clientId, username: '', password: '', qos: 1, subTopics: [topic], tls: false, maxMessageBytes: 65_536 };
}

async function startInput(clientId: string, topic: string, sink: InputSink): Promise<MqttClientInput> {
  const input = new MqttClientInput(`${clientId} (test)`, config(clientId, topic), sink, () => undefined);
  await input.start();
  await waitFor('connected', async () => input.status.view(), (s) => s.connection.state === 'connected');
  return input;
}

/** Publishes every reading QoS 1 at once and waits for mosquitto's PUBACKs. */
async function publishAll(topic: string, seqs: number[]): Promise<void> {
  const pub = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: `pub-${Math.random().toString(16).slice(2)}`, reconnectPeriod: 0 });
  try {
    await Promise.all(seqs.map((seq) => pub.publishAsync(topic, reading(seq), { qos: 1 })));
  } finally {
    await pub.endAsync();
  }
}

const forward: InputSink = async (payloads) => {
  const answer = await standIn.push(payloads);
  if (answer.status !== 200) throw new Error(`push: ${answer.status} ${answer.msg}`);
  return answer.data;
};

describe('GENERIC_MQTT pipelined', () => {
  it('takes a burst in fewer pushes than messages and stores every one', async () => {
    const sizes: number[] = [];
    const input = await startInput('edc-pipe-burst', 'burst/#', (payloads, options) => {
      sizes.push(payloads.length);
      return forward(payloads, options);
    });
    try {
      const seqs = Array.from({ length: 300 }, (_, i) => 1000 + i);
      await publishAll('burst/x', seqs);
      const stored = await waitFor('300 stored', () => storedTemps(svc.base, standIn.model), (t) => seqs.every((s) => t.includes(s)), 120_000);
      expect(stored.filter((t) => t >= 1000 && t < 2000).length).toBe(300);
      expect(sizes.reduce((a, b) => a + b, 0)).toBe(300);
      expect(sizes.length).toBeLessThan(300);
      expect(input.status.view()).toMatchObject({ messagesIn: 300, stored: 300, refused: 0 });
    } finally {
      await input.stop();
    }
  });

  it('acknowledges nothing of a push not answered: the next input of the session gets all of it again', async () => {
    const held: string[] = [];
    const stalled = await startInput('edc-pipe-hold', 'hold/#', (payloads) => {
      held.push(...payloads);
      return new Promise<PushResult>(() => undefined);
    });
    const seqs = Array.from({ length: 50 }, (_, i) => 5000 + i);
    await publishAll('hold/x', seqs);
    // Several held at once (one at a time would stop at 1), none acknowledged while the push hangs.
    await waitFor('all 50 held', async () => stalled.status.view(), (s) => s.messagesIn === 50);
    expect(held.length).toBe(50);
    await stalled.stop();
    const next = await startInput('edc-pipe-hold', 'hold/#', forward);
    try {
      await waitFor('all 50 stored by the next input', () => storedTemps(svc.base, standIn.model), (t) => seqs.every((s) => t.includes(s)), 120_000);
      expect(next.status.view()).toMatchObject({ messagesIn: 50, redelivered: 50, stored: 50 });
    } finally {
      await next.stop();
    }
  });

  it('does not connect, and says why, with an mqtt.js that has no packet writer to hold PUBACKs with', async () => {
    const proto = MqttClient.prototype as unknown as { _sendPacket?: unknown };
    const writer = proto._sendPacket;
    delete proto._sendPacket;
    const input = new MqttClientInput('no-writer (test)', config('edc-pipe-none', 'none/#'), forward, () => undefined);
    try {
      await input.start();
      expect(input.status.view().connection).toMatchObject({ state: 'error', lastError: expect.stringMatching(/cannot hold PUBACKs/) });
    } finally {
      proto._sendPacket = writer;
      await input.stop();
    }
  });
});
