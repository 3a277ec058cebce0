/**
 * The domain of what a GENERIC_MQTT input (src/inputs/mqtt-client.ts, a client of an existing broker)
 * receives (fast-check), against one real service (src/server.ts with a real worker) and one real
 * mosquitto (started in beforeAll, stopped in afterAll): payload-domain.property.test.ts does the same for
 * the built-in broker and UDP, config-domain.property.test.ts generates the configs.
 *
 * The input (maxMessageBytes 16384, qos 1) subscribes to `pd/#`; each case is one message published to
 * mosquitto by a fresh mqtt.js client: topics under the subscription (plain, unicode, empty levels, up to
 * the 201 levels mosquitto takes, up to 65,535 bytes; mosquitto closes the connection of a publisher
 * whose topic has control characters, noncharacters or more levels, so none reaches the input); payloads
 * empty, binary (not UTF-8), valid JSON (the sample's shape, any JSON, padded to a size around
 * maxMessageBytes), malformed and deeply nested JSON, up to 8 MiB (8 times the largest maxMessageBytes;
 * mosquitto takes up to 268,435,455 bytes by default); QoS 0, 1, 2 of the publish (the input subscribes
 * at QoS 1), retain.
 *
 * The input has RHILEX's sample rule (`json:J2T(args)`, `json:base64J2T(body.payload)` ... `rds:Save`)
 * and a pass-through rule storing the whole `args` in a STRING attribute. After each case, once
 * `inends/stats` counts the message and nothing is queued: the counters add up (one message in, and
 * messagesIn = stored + refused + failed), a message over maxMessageBytes is refused and counted, one of
 * the sample's shape within the limit is stored and its `args` is RHILEX's `{"topic", "payload": <base64>}`
 * with the topic and bytes as published, nothing counts `redelivered`, and the read endpoints answer 200
 * (never 500). At the end a fresh publisher's plain sample is stored and the input is still `connected`,
 * on the connection it had before the first case. The domain is described in docs/models.md (Inputs,
 * "What a network input takes").
 *
 * CLIENT_PAYLOAD_DOMAIN_CASES (default 40) runs; CLIENT_PAYLOAD_DOMAIN_SEED replays a run;
 * CLIENT_PAYLOAD_DOMAIN_VERBOSE=1 prints each case and its counters.
 */
import fc from 'fast-check';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { compact, describePayload, type Kind, type Payload, payloadArb, sampleOfSize } from './payload-arbs.js';
import { createInput, createModel, createRawModel, createRule, expectReadsAnswer, inputCounters, inputStats, reading, passThroughRule, ruleFor, startMosquitto, storedTemps, waitFor, type Mosquitto } from './support.js';

const RUNS = Number(process.env.CLIENT_PAYLOAD_DOMAIN_CASES ?? 40);
const SEED = process.env.CLIENT_PAYLOAD_DOMAIN_SEED === undefined ? undefined : Number(process.env.CLIENT_PAYLOAD_DOMAIN_SEED);
const VERBOSE = process.env.CLIENT_PAYLOAD_DOMAIN_VERBOSE === '1';
const MAX_MESSAGE_BYTES = 16_384;
/** The largest payload drawn: 8 times the largest maxMessageBytes a config may set (1 MiB). */
const LARGEST = 8 * 1_048_576;
/** The most levels mosquitto 2.0 takes in a topic name (it closes the publisher's connection beyond). */
const MOSQUITTO_LEVELS_MAX = 201;
const TOPIC_BYTES_MAX = 65_535;
/** A ceiling for each wait on a busy machine, not a claim. */
const CEILING_MS = 60_000;

let mosquitto: Mosquitto;
let svc: TestService;
let sampleModel: string;
let rawModel: string;
let inend: string;
/** When the input's connection was made: the same at the end means no case cost it its connection. */
let connectedSince: string;

beforeAll(async () => {
  mosquitto = await startMosquitto();
  svc = await startService({ logLevel: 'warn' });
  sampleModel = await createModel(svc.base, 'cpd_sample');
  rawModel = await createRawModel(svc.base, 'cpd_raw');

  const created = await createInput(svc.base, {
    name: 'cpd-client',
    type: 'GENERIC_MQTT',
    config: { host: '127.0.0.1', port: mosquitto.port, clientId: 'edc-cpd', qos: 1, subTopics: ['pd/#'], maxMessageBytes: MAX_MESSAGE_BYTES },
  });
  inend = created.uuid;
  await createRule(svc.base, inend, ruleFor('GENERIC_MQTT', sampleModel));
  await call(svc.base, '/api/v1/rules/create', { method: 'POST', body: { name: 'cpd-raw', description: '', fromSource: [inend], actions: passThroughRule(rawModel), success: '', failed: '' } });
  // Retained: whether the input has subscribed yet or not (the SUBACK is not in stats), mosquitto sends
  // it once, live or when the subscription is made; once it is stored nothing else is on its way.
  await publish({ topic: 'pd/ready', payload: compact({ bytes: Buffer.from(reading(7_000_000)), kind: 'sample' as Kind }, describePayload), qos: 1, retain: true });
  const ready = await waitFor('subscribed', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected' && s.stored === 1 && s.queued === 0, CEILING_MS);
  expect(inputCounters(ready)).toMatchObject({ in: 1, stored: 1, refused: 0, failed: 0 });
  expect(await storedTemps(svc.base, sampleModel)).toEqual([7_000_000]);
  connectedSince = ready.connection.since;
}, 180_000);

afterAll(async () => {
  await svc?.close();
  await mosquitto?.stop();
});

// ---- cases ----

interface ClientCase {
  /** A topic name under `pd/#` that mosquitto takes (well-formed UTF-8, no control characters or noncharacters, at most 201 levels). */
  topic: string;
  payload: Payload;
  qos: 0 | 1 | 2;
  retain: boolean;
}

function describeCase(c: ClientCase): string {
  const bytes = Buffer.byteLength(c.topic);
  const t = bytes > 60 ? `${JSON.stringify(c.topic.slice(0, 20))}…(${bytes} bytes, ${c.topic.split('/').length} levels)` : JSON.stringify(c.topic);
  return `topic ${t}, ${describePayload(c.payload)}, qos ${c.qos}${c.retain ? ', retain' : ''}`;
}

/**
 * What mosquitto 2.0 takes in a topic name: it closes the connection of a publisher whose topic has a
 * control character (U+0000..U+001F, U+007F..U+009F), a noncharacter (U+FDD0..U+FDEF, U+xFFFE, U+xFFFF),
 * `+` or `#`, more than 201 levels, or over 65,535 bytes.
 */
function mosquittoTakes(topic: string): boolean {
  if (Buffer.byteLength(topic) > TOPIC_BYTES_MAX || topic.split('/').length > MOSQUITTO_LEVELS_MAX || topic.includes('+') || topic.includes('#')) return false;
  for (const ch of topic) {
    const cp = ch.codePointAt(0)!;
    if (cp <= 0x1f || (cp >= 0x7f && cp <= 0x9f) || (cp >= 0xfdd0 && cp <= 0xfdef) || (cp & 0xfffe) === 0xfffe || (cp >= 0xd800 && cp <= 0xdfff)) return false;
  }
  return true;
}

const topicArb: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('pd/plant/line1', 'pd/', 'pd//', 'pd/ ', 'pd/a/b/c/', 'pd/$SYS/x', 'pd/sensors/温度/℃', 'pd/🚀/💧', 'pd/é', 'pd/a b/"q"/\\', 'pd/{"json":1}'),
  // Any well-formed unicode mosquitto takes (graphemes: no lone surrogate).
  fc
    .string({ unit: 'grapheme', maxLength: 40 })
    .map((s) => `pd/${s}`)
    .filter(mosquittoTakes),
  // Many levels, empty ones too, up to mosquitto's 201.
  fc.array(fc.constantFrom('a', '', 'ü', '0', '🚀'), { minLength: 1, maxLength: MOSQUITTO_LEVELS_MAX - 1 }).map((levels) => `pd/${levels.join('/')}`),
  // Long: up to 65,535 bytes, one byte or three a character.
  fc.integer({ min: 1, max: TOPIC_BYTES_MAX - 3 }).map((n) => `pd/${'x'.repeat(n)}`),
  fc.integer({ min: 1, max: Math.floor((TOPIC_BYTES_MAX - 3) / 3) }).map((n) => `pd/${'€'.repeat(n)}`),
);

const caseArb: fc.Arbitrary<ClientCase> = fc
  .record({
    topic: topicArb,
    payload: payloadArb(MAX_MESSAGE_BYTES, LARGEST),
    qos: fc.constantFrom(0 as const, 1 as const, 2 as const),
    retain: fc.boolean(),
  })
  .map((c) => compact(c, describeCase));

/** The boundaries each run takes first, as fast-check examples. */
function example(topic: string, bytes: Buffer, kind: Kind, qos: 0 | 1 | 2, retain = false): [ClientCase] {
  return [compact({ topic, payload: compact({ bytes, kind }, describePayload), qos, retain }, describeCase)];
}

/**
 * Publishes the case from a fresh mqtt.js client and ends it: resolved once mosquitto has it (QoS 0:
 * written; 1: PUBACK; 2: PUBCOMP); a connection mosquitto closes first (a topic it does not take) fails.
 */
async function publish(c: ClientCase): Promise<void> {
  const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosquitto.port}`, { clientId: `cpd-pub-${Math.random().toString(36).slice(2, 10)}`, reconnectPeriod: 0 });
  try {
    await new Promise<void>((resolve, reject) => {
      const closed = (): void => reject(new Error(`mosquitto closed the publisher's connection: ${describeCase(c)}`));
      client.once('close', closed);
      client.publish(c.topic, c.payload.bytes, { qos: c.qos, retain: c.retain }, (err) => {
        client.off('close', closed);
        if (err) reject(err);
        else resolve();
      });
    });
  } finally {
    // Not forced: a QoS 0 message is written before the DISCONNECT.
    await client.endAsync();
  }
}


describe('payload domain of the GENERIC_MQTT input (mosquitto)', () => {
  it('every topic, payload, QoS and retain published to mosquitto is stored, failed by a rule or refused over maxMessageBytes, and counted so', async () => {
    const seen = { stored: 0, failed: 0, refused: 0 };
    await fc.assert(
      fc.asyncProperty(caseArb, async (c) => {
        const what = describeCase(c);
        const before = inputCounters(await inputStats(svc.base, inend));
        if (VERBOSE) console.log(new Date().toISOString(), what);
        await publish(c);
        const settled = await waitFor(
          `settled: ${what}`,
          () => inputStats(svc.base, inend),
          (s) => s.messagesIn > before.in && s.queued === 0 && s.stored + s.refused + s.failed >= before.stored + before.refused + before.failed + 1,
          CEILING_MS,
        );
        const after = inputCounters(settled);
        const d = { in: after.in - before.in, stored: after.stored - before.stored, refused: after.refused - before.refused, failed: after.failed - before.failed, redelivered: after.redelivered - before.redelivered };
        if (VERBOSE) console.log(new Date().toISOString(), '->', JSON.stringify(d));
        expect(d.in, `one message in (${what}): ${JSON.stringify(d)}`).toBe(1);
        expect(d.stored + d.refused + d.failed, `counters add up (${what}): ${JSON.stringify(d)}`).toBe(d.in);
        const oversize = c.payload.bytes.length > MAX_MESSAGE_BYTES;
        expect(d.refused, `refused iff over maxMessageBytes (${what}): ${JSON.stringify(d)}`).toBe(oversize ? 1 : 0);
        expect(d.redelivered, `nothing sent again (${what})`).toBe(0);
        if (!oversize && c.payload.kind === 'sample') expect(d.stored, `sample stored (${what}): ${JSON.stringify(d)}, lastError ${JSON.stringify(settled.lastError)}`).toBe(1);
        if (d.stored === 1) {
          // What the rules got: RHILEX's args, with the topic and every byte of the payload as published.
          const last = await query(svc.base, `/api/v1/datacenter/queryLastData?uuid=${rawModel}`);
          expect(last.body.data.args === JSON.stringify({ topic: c.topic, payload: c.payload.bytes.toString('base64') }), `args of the stored message (${what}): ${String(last.body.data.args).slice(0, 200)}`).toBe(true);
        }
        seen.stored += d.stored;
        seen.failed += d.failed;
        seen.refused += d.refused;
        await expectReadsAnswer(svc.base, sampleModel, rawModel, [inend]);
      }),
      {
        numRuns: RUNS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        // A case can take a while (its waits have ceilings of a minute): the first failure is reported as drawn.
        endOnFailure: true,
        examples: [
          // The longest topic with a payload of exactly maxMessageBytes: stored (the limit is the payload's).
          example(`pd/${'x'.repeat(TOPIC_BYTES_MAX - 3)}`, sampleOfSize(9_200_001, MAX_MESSAGE_BYTES), 'sample', 1),
          // One byte over, QoS 2, retained: refused.
          example('pd/edge', sampleOfSize(9_200_002, MAX_MESSAGE_BYTES + 1), 'sample', 2, true),
          // 201 levels, QoS 0.
          example(`pd/${Array(MOSQUITTO_LEVELS_MAX - 1).fill('l').join('/')}`, Buffer.from(reading(9_200_003)), 'sample', 0),
          // Empty and retained (mosquitto deletes the retained message, and still delivers it).
          example('pd/empty', Buffer.alloc(0), 'other', 1, true),
          example('pd/largest', Buffer.alloc(LARGEST, 0xff), 'other', 2),
        ],
      },
    );
    // Both sides of the domain were drawn.
    expect(seen.stored, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.refused, JSON.stringify(seen)).toBeGreaterThan(0);

    // Still serving: a fresh publisher's plain sample is stored, on the connection the input had before the first case.
    await publish({ topic: 'pd/probe', payload: compact({ bytes: Buffer.from(reading(8_000_000)), kind: 'sample' as Kind }, describePayload), qos: 1, retain: false });
    await waitFor('probe stored', () => storedTemps(svc.base, sampleModel), (t) => t.includes(8_000_000), CEILING_MS);
    const end = await inputStats(svc.base, inend);
    expect(end.connection).toMatchObject({ state: 'connected', since: connectedSince });
  }, 600_000);
});
