/**
 * The built-in broker hands the messages of one turn of the event loop, across clients, to the queue as
 * one push (src/inputs/mqtt-broker.ts). Here the broker input runs on loopback with real mqtt.js clients,
 * its sink forwarding each push to a real service's HTTP input (the same rule, engine and store as a
 * GENERIC_MQTT_SERVER input; the push answer is the engine's): 10 clients publish 20 QoS 1 messages each
 * at once, one of which its rule fails on. Checked: a push carried the messages of several clients; each
 * PUBACK came only after the push holding its message was answered (its records stored); the message
 * the rule failed on is acknowledged too, not stored, and not counted stored; a push refused with a full
 * queue (503) is offered again and its messages acknowledged only after that.
 *
 * Also here: a client's message ends at the rules (aedes' publish fan-out is skipped): a publish to
 * `$SYS/<broker>/new/clients` no longer closes the client it names, and a will still reaches the rules.
 */
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors.js';
import { MqttBrokerInput } from '../../src/inputs/mqtt-broker.js';
import type { InputSink } from '../../src/inputs/deliver.js';
import type { PushResult } from '../../src/scripts/shared/types.js';
import { startService, type TestService } from '../support/service.js';
import { freePort, httpStandIn, reading, storedTemps } from './support.js';

const CLIENTS = 10;
const PER_CLIENT = 20;
/** The message whose payload is not JSON: the rule's json:J2T fails on it. */
const BAD = { client: 3, index: 7 };

let svc: TestService;
let model: string;
let standIn: Awaited<ReturnType<typeof httpStandIn>>;

beforeAll(async () => {
  svc = await startService();
  // An HTTP input with the broker input's rule: it takes the broker's events as NDJSON lines.
  standIn = await httpStandIn(svc.base, 'batched', 'GENERIC_MQTT_SERVER');
  model = standIn.model;
});

afterAll(async () => {
  await svc?.close();
});

interface Push {
  /** The `seq` of each publish event of the push (connect events carry none). */
  seqs: number[];
  clientIds: Set<string>;
  answered: boolean;
}

/** The broker input on a free loopback port, anonymous, handing its pushes to `sink`. */
async function startAnonymousBroker(label: string, sink: InputSink): Promise<{ broker: MqttBrokerInput; port: number }> {
  const port = await freePort('tcp');
  const config = { serverName: 'test', host: '127.0.0.1', port, anonymous: true, tls: false, maxClients: 100, maxMessageBytes: 65_536 };
  const broker = new MqttBrokerInput(label, config, sink, { checkPassword: () => true, failed: () => undefined }, () => undefined, undefined);
  await broker.start();
  return { broker, port };
}

describe('GENERIC_MQTT_SERVER batches', () => {
  it('pushes the messages of many clients together; each PUBACK after its push is stored; a failed rule is acknowledged, a full queue retried', async () => {
    const pushes: Push[] = [];
    let refuseNext = true;
    const sink = async (payloads: string[]): Promise<PushResult> => {
      const events = payloads.map((p) => JSON.parse(p) as { action: string; clientid: string; payload?: string });
      const publishes = events.filter((e) => e.action === 'publish');
      if (publishes.length > 0 && refuseNext) {
        // The first push of messages meets a full queue: it must be offered again, none acknowledged meanwhile.
        refuseNext = false;
        throw new UnavailableError('queue is full (test)', 1);
      }
      const push: Push = { seqs: [], clientIds: new Set(publishes.map((e) => e.clientid)), answered: false };
      for (const e of publishes) {
        const seq = /"value":(\d+)/.exec(e.payload ?? '')?.[1];
        push.seqs.push(seq === undefined ? -1 : Number(seq));
      }
      pushes.push(push);
      const answer = await standIn.push(payloads);
      if (answer.status === 503) throw new UnavailableError(answer.msg, 1);
      if (answer.status !== 200) throw new Error(`push: ${answer.status} ${answer.msg}`);
      push.answered = true;
      return answer.data;
    };
    const { broker, port } = await startAnonymousBroker('batched (test)', sink);
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, (_, c) => mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: `batch-${c}`, reconnectPeriod: 0 })),
    );
    /** Per PUBACK: whether the push holding its message had been answered when it arrived. */
    const ackedAfterStore: boolean[] = [];
    try {
      await Promise.all(
        clients.flatMap((client, c) =>
          Array.from({ length: PER_CLIENT }, async (_, i) => {
            const seq = c * 1000 + i;
            const bad = c === BAD.client && i === BAD.index;
            await client.publishAsync('plant/line', bad ? 'not json' : reading(seq, c), { qos: 1 });
            if (!bad) ackedAfterStore.push(pushes.some((p) => p.answered && p.seqs.includes(seq)));
          }),
        ),
      );
    } finally {
      await Promise.all(clients.map((c) => c.endAsync()));
      await broker.stop();
    }
    const good = CLIENTS * PER_CLIENT - 1;
    expect(ackedAfterStore.length).toBe(good);
    expect(ackedAfterStore.every(Boolean)).toBe(true);
    // Batched: fewer pushes than messages, and one push held the messages of several clients.
    const withMessages = pushes.filter((p) => p.seqs.length > 0);
    expect(withMessages.length).toBeLessThan(CLIENTS * PER_CLIENT);
    expect(Math.max(...withMessages.map((p) => p.clientIds.size))).toBeGreaterThan(1);
    // Every message was pushed once after the refusal (the refused push is not in `pushes`).
    expect(withMessages.reduce((n, p) => n + p.seqs.length, 0)).toBe(CLIENTS * PER_CLIENT);
    const stored = await storedTemps(svc.base, model);
    expect(stored.length).toBe(good);
    expect(new Set(stored).size).toBe(good);
    expect(broker.status.view()).toMatchObject({ messagesIn: CLIENTS * PER_CLIENT, stored: good, refused: 0 });
  });

  it('skips the fan-out of client messages: a $SYS/+/new/clients publish closes nobody; a will still reaches the rules', async () => {
    const seen: Array<{ action: string; clientid: string; topic?: string }> = [];
    const sink = async (payloads: string[]): Promise<PushResult> => {
      for (const p of payloads) seen.push(JSON.parse(p));
      return { accepted: payloads.length, failed: 0, errors: [], durable: false };
    };
    const { broker, port } = await startAnonymousBroker('fan-out (test)', sink);
    const url = `mqtt://127.0.0.1:${port}`;
    const victim = await mqtt.connectAsync(url, { clientId: 'victim', reconnectPeriod: 0 });
    let victimClosed = false;
    const closed = new Promise<never>((_, reject) => victim.once('close', () => reject(new Error('the broker closed the victim'))));
    closed.catch(() => (victimClosed = true));
    const other = await mqtt.connectAsync(url, { clientId: 'other', reconnectPeriod: 0, will: { topic: 'plant/will', payload: Buffer.from('gone'), qos: 1, retain: false } });
    try {
      // aedes' cluster listener closes the named client when this reaches its mqemitter.
      await other.publishAsync('$SYS/another-broker/new/clients', 'victim', { qos: 1 });
      await Promise.race([victim.publishAsync('plant/line', reading(1), { qos: 1 }), closed]);
      expect(victimClosed).toBe(false);
      // A lost connection: aedes publishes the will, which authorizePublish hands to the rules.
      other.stream.destroy();
      for (let i = 0; i < 200 && !seen.some((e) => e.topic === 'plant/will'); i++) await new Promise((r) => setTimeout(r, 25));
      expect(seen.filter((e) => e.action === 'publish').map((e) => [e.clientid, e.topic])).toEqual([
        ['other', '$SYS/another-broker/new/clients'],
        ['victim', 'plant/line'],
        ['other', 'plant/will'],
      ]);
      expect(victimClosed).toBe(false);
    } finally {
      other.end(true);
      victim.end(true);
      await broker.stop();
    }
  });
});
