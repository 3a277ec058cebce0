/**
 * The payloads the network input property tests generate (fast-check), shared by
 * payload-domain.property.test.ts (GENERIC_MQTT_SERVER, UDP_SERVER) and
 * client-payload-domain.property.test.ts (GENERIC_MQTT): empty, binary (mostly not UTF-8), the sample's
 * shape (padded to a size around a limit), any JSON, malformed and deeply nested JSON, up to `largest`
 * bytes. No tests here: a test file imported by another would have its tests registered twice.
 */
import fc from 'fast-check';
import { reading } from './support.js';

/** A Buffer of exactly `size` bytes: the sample's JSON padded with spaces (valid JSON), or as much of it as fits. */
export function sampleOfSize(seq: number, size: number): Buffer {
  const json = reading(seq);
  return Buffer.from(json.length >= size ? json.slice(0, size) : json + ' '.repeat(size - json.length));
}

export type Kind = 'sample' | 'other';
export interface Payload {
  bytes: Buffer;
  /** 'sample': the sample's shape as valid JSON, stored by both rules when within the limit. */
  kind: Kind;
}

/** A counterexample prints as a line, not megabytes of topic and payload. */
export function compact<T extends object>(value: T, text: (v: T) => string): T {
  return Object.assign(value, { [fc.toStringMethod]: () => text(value) });
}

export function describePayload(p: Payload): string {
  const head = p.bytes.subarray(0, 24);
  return `${p.kind} payload of ${p.bytes.length} bytes starting ${JSON.stringify(head.toString('latin1'))}`;
}

/** The sequence numbers of the generated samples (their stored `temp`), from 1 in each test file. */
let nextSeq = 1;

/** Payloads of every kind, with sizes at and around `limit` and up to `largest` bytes. */
export function payloadArb(limit: number, largest: number): fc.Arbitrary<Payload> {
  const other = (b: Buffer): Payload => compact({ bytes: b, kind: 'other' as Kind }, describePayload);
  const size = fc.oneof(
    fc.constantFrom(0, 1, limit - 1, limit, limit + 1, largest),
    fc.integer({ min: 0, max: limit + 16 }),
    fc.integer({ min: 0, max: largest }),
  );
  return fc.oneof(
    fc.constant(other(Buffer.alloc(0))),
    // Binary: any bytes, mostly not UTF-8.
    fc.uint8Array({ maxLength: 64 }).map((a) => other(Buffer.from(a))),
    size.chain((n) => fc.integer({ min: 0, max: 255 }).map((fill) => other(Buffer.alloc(n, fill)))),
    fc.constantFrom(Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from([0xc3, 0x28]), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('\u0000')).map(other),
    // The sample's shape, padded to a size (valid JSON while it fits).
    fc.constant(0).map(() => compact({ bytes: Buffer.from(reading(nextSeq++)), kind: 'sample' as Kind }, describePayload)),
    size.map((n) => {
      const seq = nextSeq++;
      const bytes = sampleOfSize(seq, n);
      // Cut shorter than the JSON it is no longer JSON.
      return compact({ bytes, kind: (n >= reading(seq).length ? 'sample' : 'other') as Kind }, describePayload);
    }),
    // Any JSON, unicode included; malformed JSON; deep nesting.
    fc.json().map((j) => other(Buffer.from(j))),
    fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => other(Buffer.from(s))),
    fc.json().map((j) => other(Buffer.from(j.slice(0, Math.max(0, j.length - 1)) + '\u0001{'))),
    fc.constantFrom('{', '[', '{"a":', '[{"tag":"t1","value":}]', 'null', '"x"', '1e309', '[1,2', '{"a":1}}', '\ufeff[]').map((s) => other(Buffer.from(s))),
    fc.integer({ min: 1, max: 6000 }).map((d) => other(Buffer.from('['.repeat(d) + ']'.repeat(d)))),
    fc.integer({ min: 1, max: 3000 }).map((d) => other(Buffer.from('{"a":'.repeat(d) + '1' + '}'.repeat(d)))),
  );
}
