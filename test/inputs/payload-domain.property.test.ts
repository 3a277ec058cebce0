/**
 * The domain of what arrives over a connection at the network inputs (fast-check), against one real
 * service (src/server.ts with a real worker, real sockets): config-domain.property.test.ts generates the
 * configs, this file the payloads.
 *
 * - GENERIC_MQTT_SERVER (the built-in broker, maxMessageBytes 16384), one MQTT 3.1.1 connection a case,
 *   its bytes written by the test (mqtt.js never sends an empty topic: its publish just never returns):
 *   topics of every form (plain, unicode, control characters, not UTF-8, empty, wildcards, over 100
 *   levels, up to 65,535 bytes); payloads empty, binary, valid JSON (the sample's shape, any JSON, padded
 *   to a size around maxMessageBytes), malformed and deeply nested JSON, up to and beyond maxMessageBytes
 *   and beyond the packet cut-off (maxMessageBytes + 65,539); QoS 0, 1, 2 and the malformed 3, retain, dup.
 * - UDP_SERVER (maxDataLength 512): datagrams of 0 bytes, binary, JSON, exactly maxDataLength, above it,
 *   up to the largest datagram (65,507 bytes).
 *
 * Each input has RHILEX's sample-style rule (`local body = json:J2T(args)` ... `rds:Save`) and a
 * pass-through rule storing the whole `args` in a STRING attribute. After each case: the counters of
 * `inends/stats` add up (messagesIn = stored + refused + failed, nothing queued), a message over the
 * limit is refused and counted (its connection closed, nothing acknowledged; no `ok` for a datagram),
 * one of the sample's shape within the limit is stored and acknowledged (PUBACK, PUBCOMP, `ok`), DUP
 * counts `redelivered`, a PUBLISH aedes refuses (empty topic, wildcards, over 100 levels, QoS 3) closes
 * its connection and counts nothing, and the read endpoints answer 200 (never 500); at the end a fresh
 * mqtt.js publisher's message is acknowledged and stored. The domain is described in docs/models.md
 * (Inputs, "What a network input takes").
 *
 * PAYLOAD_DOMAIN_CASES (default 60) runs per property; PAYLOAD_DOMAIN_SEED replays a run;
 * PAYLOAD_DOMAIN_VERBOSE=1 prints each broker case and its answers.
 */
import dgram from 'node:dgram';
import fc from 'fast-check';
import net from 'node:net';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { compact, describePayload, type Kind, type Payload, payloadArb, sampleOfSize } from './payload-arbs.js';
import { createInput, createModel, createRawModel, createRule, expectReadsAnswer, freePort, inputCounters, inputStats, reading, passThroughRule, ruleFor, waitFor } from './support.js';

const RUNS = Number(process.env.PAYLOAD_DOMAIN_CASES ?? 60);
const SEED = process.env.PAYLOAD_DOMAIN_SEED === undefined ? undefined : Number(process.env.PAYLOAD_DOMAIN_SEED);
const MAX_MESSAGE_BYTES = 16_384;
/**
 * The broker cuts a client off from a packet's length header alone beyond this (src/inputs/mqtt-broker.ts):
 * room for the largest topic (2 + 65,535 bytes) and a packet id (2) on top of the payload, so only a
 * message over maxMessageBytes is ever cut off.
 */
const PACKET_CUT_OFF = MAX_MESSAGE_BYTES + 65_539;
const MAX_DATA_LENGTH = 512;
const UDP_MAX = 65_507;
/** A ceiling for each wait on a busy machine, not a claim. */
const CEILING_MS = 60_000;

let svc: TestService;
let sampleModel: string;
let rawModel: string;
let broker: { uuid: string; token: string; port: number };
let udp: { uuid: string; port: number };

beforeAll(async () => {
  svc = await startService({ logLevel: 'warn' });
  sampleModel = await createModel(svc.base, 'pd_sample');
  rawModel = await createRawModel(svc.base, 'pd_raw');

  const brokerPort = await freePort('tcp');
  const b = await createInput(svc.base, { name: 'pd-broker', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: brokerPort, maxMessageBytes: MAX_MESSAGE_BYTES } });
  broker = { uuid: b.uuid, token: b.token!, port: brokerPort };
  await createRule(svc.base, b.uuid, ruleFor('GENERIC_MQTT_SERVER', sampleModel));
  await call(svc.base, '/api/v1/rules/create', { method: 'POST', body: { name: 'pd-broker-raw', description: '', fromSource: [b.uuid], actions: passThroughRule(rawModel), success: '', failed: '' } });

  const udpPort = await freePort('udp');
  const u = await createInput(svc.base, { name: 'pd-udp', type: 'UDP_SERVER', config: { host: '127.0.0.1', port: udpPort, maxDataLength: MAX_DATA_LENGTH } });
  udp = { uuid: u.uuid, port: udpPort };
  await createRule(svc.base, u.uuid, ruleFor('UDP_SERVER', sampleModel));
  await call(svc.base, '/api/v1/rules/create', { method: 'POST', body: { name: 'pd-udp-raw', description: '', fromSource: [u.uuid], actions: passThroughRule(rawModel), success: '', failed: '' } });

  await waitFor('listening', async () => [(await inputStats(svc.base, broker.uuid)).connection.state, (await inputStats(svc.base, udp.uuid)).connection.state], (s) => s.every((x) => x === 'listening'), CEILING_MS);
}, 180_000);

afterAll(async () => {
  await svc?.close();
});

// ---- the built-in broker ----

/** Topics of every form, as the bytes sent (0..65,535 of them; not always UTF-8). */
const topicArb: fc.Arbitrary<Buffer> = fc.oneof(
  fc
    .oneof(
      fc.constantFrom('plant/line1', '/', '//', ' ', 'a/b/c/', '$SYS/x', 'sensors/温度/℃', '🚀/💧', 'x\u0000y', 'tab\there', 'é', '', '+', '#', 'a/+/b', 'a/#', 'a#', 'b+'),
      fc.string({ unit: 'binary', maxLength: 40 }),
      fc.array(fc.constantFrom('a', '', 'ü', '0'), { minLength: 95, maxLength: 105 }).map((levels) => levels.join('/')),
      fc.integer({ min: 1, max: 65_535 }).map((n) => 'x'.repeat(n)),
      fc.integer({ min: 1, max: 21_845 }).map((n) => '€'.repeat(n)),
    )
    .map((t) => Buffer.from(t)),
  // Not UTF-8: lone continuation bytes, an overlong NUL, a surrogate half, truncated sequences.
  fc.uint8Array({ minLength: 1, maxLength: 16 }).map((a) => Buffer.from(a)),
  fc.constantFrom(Buffer.from([0x80]), Buffer.from([0xc0, 0x80]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from([0x61, 0xe2, 0x82])),
);

/** The boundaries each run takes first, as fast-check examples. */
function mqttExample(topic: string, bytes: Buffer, kind: Kind, qos: 0 | 1 | 2 | 3, flags = false): [MqttCase] {
  return [compact({ topic: Buffer.from(topic), payload: compact({ bytes, kind }, describePayload), qos, retain: flags, dup: flags }, describeCase)];
}

/** aedes refuses such a PUBLISH (as mqtt-packet decodes the topic) before asking the input: the connection is closed. */
function refusedByAedes(topicBytes: Buffer): boolean {
  const topic = topicBytes.toString('utf8');
  return topic.length === 0 || topic.includes('#') || topic.includes('+') || topic.split('/').length > 100;
}

interface MqttCase {
  topic: Buffer;
  payload: Payload;
  /** 3 (both QoS bits set) is a malformed packet: the connection is closed. */
  qos: 0 | 1 | 2 | 3;
  retain: boolean;
  dup: boolean;
}

const mqttCaseArb: fc.Arbitrary<MqttCase> = fc
  .record({
    topic: topicArb,
    payload: payloadArb(MAX_MESSAGE_BYTES, PACKET_CUT_OFF + 100_000),
    qos: fc.oneof({ weight: 12, arbitrary: fc.constantFrom(0 as const, 1 as const, 2 as const) }, { weight: 1, arbitrary: fc.constant(3 as const) }),
    retain: fc.boolean(),
    dup: fc.boolean(),
  })
  .map((c) => compact(c, describeCase));

function describeCase(c: MqttCase): string {
  const text = c.topic.toString('utf8');
  const t = c.topic.length > 40 ? `${JSON.stringify(text.slice(0, 20))}…(${c.topic.length} bytes)` : `${JSON.stringify(text)} (hex ${c.topic.toString('hex')})`;
  return `topic ${t}, ${describePayload(c.payload)}, qos ${c.qos}${c.retain ? ', retain' : ''}${c.dup ? ', dup' : ''}`;
}


// ---- a raw MQTT 3.1.1 client: every byte of the PUBLISH is the test's (mqtt.js never sends an empty topic) ----

function remainingLength(n: number): Buffer {
  const bytes: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    bytes.push(b);
  } while (n > 0);
  return Buffer.from(bytes);
}

function packet(first: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([first]), remainingLength(body.length), body]);
}

function str(b: Buffer | string): Buffer {
  const bytes = typeof b === 'string' ? Buffer.from(b) : b;
  const len = Buffer.alloc(2);
  len.writeUInt16BE(bytes.length);
  return Buffer.concat([len, bytes]);
}

function connectPacket(clientId: string, username: string, password: string): Buffer {
  // Protocol "MQTT" level 4, flags: user name, password, clean session; keep-alive 60 s.
  return packet(0x10, Buffer.concat([str('MQTT'), Buffer.from([4, 0xc2, 0, 60]), str(clientId), str(username), str(password)]));
}

function publishPacket(c: MqttCase, packetId: number): Buffer {
  const first = 0x30 | (c.dup ? 0x08 : 0) | (c.qos << 1) | (c.retain ? 0x01 : 0);
  const id = Buffer.alloc(c.qos > 0 ? 2 : 0);
  if (c.qos > 0) id.writeUInt16BE(packetId);
  return packet(first, Buffer.concat([str(c.topic), id, c.payload.bytes]));
}

/** What came back for a PUBLISH: the acknowledgement's packet types in order, and whether the broker closed the connection. */
interface RawOutcome {
  answers: string[];
  closed: boolean;
}

/** The acknowledgements of an exchange (the PINGRESP aside) and whether the connection closed. */
function refusal(r: RawOutcome): { acknowledgements: string[]; closed: boolean } {
  return { acknowledgements: r.answers.filter((a) => a !== 'pingresp'), closed: r.closed };
}

const NAMES: Record<number, string> = { 2: 'connack', 4: 'puback', 5: 'pubrec', 7: 'pubcomp', 9: 'suback', 13: 'pingresp' };

/**
 * Connects with the push token, sends the case's PUBLISH and then a PINGREQ; resolves once the exchange is
 * over: PUBACK (QoS 1) or PUBCOMP (QoS 2, PUBREL sent on PUBREC) and PINGRESP, or the connection closed.
 */
function publishRaw(c: MqttCase): Promise<RawOutcome> {
  return new Promise((resolve, reject) => {
    const answers: string[] = [];
    const socket = net.connect(broker.port, '127.0.0.1');
    let buffered = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ answers, closed });
    };
    const timer = setTimeout(() => {
      if (settled) return;
      settled = true;
      socket.destroy();
      reject(new Error(`no end of the exchange within ${CEILING_MS} ms, answers so far: ${answers.join(', ')}`));
    }, CEILING_MS);
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      finish(true);
    });
    socket.on('connect', () => socket.write(connectPacket(`pd${Math.random().toString(36).slice(2, 12)}`, 'pd', broker.token)));
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      // Answers are short: a type byte, one length byte, at most 4 bytes of body.
      while (buffered.length >= 2 && buffered.length >= 2 + buffered[1]) {
        const type = buffered[0] >> 4;
        const body = buffered.subarray(2, 2 + buffered[1]);
        buffered = buffered.subarray(2 + buffered[1]);
        const name = NAMES[type] ?? `type ${type}`;
        if (name === 'connack') {
          if (body[1] !== 0) return reject(new Error(`CONNACK ${body[1]}`));
          socket.write(Buffer.concat([publishPacket(c, 7), Buffer.from([0xc0, 0])]));
          continue;
        }
        answers.push(name);
        if (name === 'pubrec') socket.write(Buffer.from([0x62, 2, body[0], body[1]]));
        // aedes answers the PINGREQ while the PUBLISH waits for its store: the acknowledgement may come after.
        if (answers.includes('pingresp') && (c.qos === 0 || answers.includes(c.qos === 1 ? 'puback' : 'pubcomp'))) {
          clearTimeout(timer);
          finish(false);
        }
      }
    });
  });
}

describe('payload domain of the network inputs', () => {
  it('GENERIC_MQTT_SERVER: every topic, payload, QoS, retain and dup is stored, failed by a rule, refused or cut off, and counted so', async () => {
    const seen = { stored: 0, failed: 0, refused: 0, aedes: 0 };
    await fc.assert(
      fc.asyncProperty(mqttCaseArb, async (c) => {
        const before = inputCounters(await inputStats(svc.base, broker.uuid));
        const what = describeCase(c);
        if (process.env.PAYLOAD_DOMAIN_VERBOSE) console.log(new Date().toISOString(), what);
        const result = await publishRaw(c);
        if (process.env.PAYLOAD_DOMAIN_VERBOSE) console.log(new Date().toISOString(), '->', JSON.stringify(result));
        const oversize = c.payload.bytes.length > MAX_MESSAGE_BYTES;
        // The packet's remaining length: topic length and topic, packet id (QoS 1, 2), payload.
        const cutOff = c.qos !== 3 && 2 + c.topic.length + (c.qos > 0 ? 2 : 0) + c.payload.bytes.length > PACKET_CUT_OFF;
        // A malformed header, or a topic aedes refuses, closes the connection before the input sees it: nothing is counted.
        const aedesRefuses = c.qos === 3 || (!cutOff && refusedByAedes(c.topic));
        const acked = result.answers.includes(c.qos === 1 ? 'puback' : 'pubcomp');
        const expectIn = aedesRefuses ? 0 : 1;
        const after = inputCounters(
          await waitFor(
            `settled: ${what}`,
            () => inputStats(svc.base, broker.uuid),
            (s) => s.queued === 0 && s.stored + s.refused + s.failed - (before.stored + before.refused + before.failed) >= expectIn,
            CEILING_MS,
          ),
        );
        const d = { in: after.in - before.in, stored: after.stored - before.stored, refused: after.refused - before.refused, failed: after.failed - before.failed, redelivered: after.redelivered - before.redelivered };
        expect(d.stored + d.refused + d.failed, `counters add up (${what}): ${JSON.stringify(d)}`).toBe(d.in);
        expect(d.in, `messages in (${what}): ${JSON.stringify(d)}`).toBe(expectIn);
        if (expectIn === 1) {
          expect(d.refused, `refused iff over maxMessageBytes (${what}): ${JSON.stringify(d)}`).toBe(oversize ? 1 : 0);
          if (oversize) expect(refusal(result), `connection closed, nothing acknowledged (${what})`).toEqual({ acknowledgements: [], closed: true });
          else {
            if (c.qos > 0) expect(acked, `acknowledged (${what}): ${JSON.stringify(result)}`).toBe(true);
            expect(result.closed, `connection open (${what})`).toBe(false);
            expect(d.redelivered).toBe(c.dup ? 1 : 0);
            if (c.payload.kind === 'sample') expect(d.stored, `sample stored (${what})`).toBe(1);
          }
        } else {
          expect(refusal(result), `connection closed, nothing acknowledged (${what})`).toEqual({ acknowledgements: [], closed: true });
        }
        seen.stored += d.stored;
        seen.failed += d.failed;
        seen.refused += d.refused;
        if (expectIn === 0) seen.aedes++;
        await expectReadsAnswer(svc.base, sampleModel, rawModel, [broker.uuid, udp.uuid]);
      }),
      {
        numRuns: RUNS,
        ...(SEED === undefined ? {} : { seed: SEED }),
        // A case can take a while (its waits have ceilings of a minute): the first failure is reported as drawn.
        endOnFailure: true,
        // The boundaries, always: the largest topic with the largest payload; one byte over; the cut-off.
        examples: [
          mqttExample('x'.repeat(65_535), sampleOfSize(9_000_001, MAX_MESSAGE_BYTES), 'sample', 1),
          mqttExample('x'.repeat(65_535), sampleOfSize(9_000_002, MAX_MESSAGE_BYTES + 1), 'sample', 2),
          mqttExample('plant/edge', sampleOfSize(9_000_003, MAX_MESSAGE_BYTES + 1), 'sample', 1),
          mqttExample('plant/edge', Buffer.alloc(PACKET_CUT_OFF + 1, 0x20), 'other', 1, true),
          mqttExample('', Buffer.from(reading(9_000_004)), 'sample', 1),
          mqttExample('plant/q3', Buffer.from(reading(9_000_005)), 'sample', 3),
          mqttExample('plant/q0', Buffer.from(reading(9_000_006)), 'sample', 0, true),
        ],
      },
    );
    // Both sides of the domain were drawn.
    expect(seen.stored, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.refused, JSON.stringify(seen)).toBeGreaterThan(0);

    // Still serving: a fresh publisher's message is acknowledged and stored.
    const probe = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: 'pd-probe', username: 'pd', password: broker.token, reconnectPeriod: 0 });
    await probe.publishAsync('plant/probe', reading(8_000_000), { qos: 1 });
    await probe.endAsync();
    const last = await query(svc.base, `/api/v1/datacenter/queryDataList?uuid=${sampleModel}&size=50`);
    expect(last.body.data.records.map((r: any) => r.temp)).toContain(8_000_000);
  }, 600_000);

  it('UDP_SERVER: datagrams of 0 bytes up to 65,507 are stored, failed by a rule or refused over maxDataLength, and counted so', async () => {
    const socket = dgram.createSocket('udp4');
    const replies: string[] = [];
    socket.on('message', (m) => replies.push(m.toString()));
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    let okExpected = 0;
    const seen = { stored: 0, failed: 0, refused: 0 };
    try {
      await fc.assert(
        fc.asyncProperty(payloadArb(MAX_DATA_LENGTH, UDP_MAX), async (p) => {
          const what = `${p.kind} datagram of ${p.bytes.length} bytes`;
          const before = inputCounters(await inputStats(svc.base, udp.uuid));
          await new Promise<void>((resolve, reject) => socket.send(p.bytes, udp.port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
          const after = inputCounters(
            await waitFor(`settled: ${what}`, () => inputStats(svc.base, udp.uuid), (s) => s.messagesIn > before.in && s.queued === 0 && s.stored + s.refused + s.failed >= before.stored + before.refused + before.failed + 1, CEILING_MS),
          );
          const d = { in: after.in - before.in, stored: after.stored - before.stored, refused: after.refused - before.refused, failed: after.failed - before.failed };
          expect(d.in, `one datagram in (${what})`).toBe(1);
          expect(d.stored + d.refused + d.failed, `counters add up (${what}): ${JSON.stringify(d)}`).toBe(1);
          const oversize = p.bytes.length > MAX_DATA_LENGTH;
          expect(d.refused, `refused iff over maxDataLength (${what})`).toBe(oversize ? 1 : 0);
          if (!oversize && p.kind === 'sample') expect(d.stored, `sample stored (${what})`).toBe(1);
          // `ok` answers a queued datagram, never a refused one.
          if (!oversize) okExpected++;
          await waitFor(`ok replies (${what})`, async () => replies.length, (n) => n >= okExpected, CEILING_MS);
          expect(replies.length, `replies (${what})`).toBe(okExpected);
          seen.stored += d.stored;
          seen.failed += d.failed;
          seen.refused += d.refused;
          await expectReadsAnswer(svc.base, sampleModel, rawModel, [broker.uuid, udp.uuid]);
        }),
        {
          numRuns: RUNS,
          ...(SEED === undefined ? {} : { seed: SEED }),
          endOnFailure: true,
          examples: [
            [compact({ bytes: Buffer.alloc(0), kind: 'other' as Kind }, describePayload)],
            [compact({ bytes: sampleOfSize(9_100_001, MAX_DATA_LENGTH), kind: 'sample' as Kind }, describePayload)],
            [compact({ bytes: sampleOfSize(9_100_002, MAX_DATA_LENGTH + 1), kind: 'sample' as Kind }, describePayload)],
            [compact({ bytes: Buffer.alloc(UDP_MAX, 0xff), kind: 'other' as Kind }, describePayload)],
          ],
        },
      );
      expect(replies.every((r) => r === 'ok\r\n')).toBe(true);
      expect(seen.stored, JSON.stringify(seen)).toBeGreaterThan(0);
      expect(seen.refused, JSON.stringify(seen)).toBeGreaterThan(0);
    } finally {
      socket.close();
    }
  }, 600_000);
});
