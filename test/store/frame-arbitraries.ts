/**
 * Frames and msgpack payloads for property tests of what reads stored bytes (chunk codec, summary fold):
 * every scalar tag the scanners know, canonical or not, and frames that follow the id rules.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { FRAME_HEADER_BYTES, FRAME_SAVE, FRAME_SUPERSEDE, sealFrame, type FrameType } from '../../src/store/format/frame.js';

export const packr = new Packr({ useRecords: false });

export interface FrameSpec {
  type: FrameType;
  id: number;
  ts: number;
  payload: Uint8Array;
}

export function frames(specs: readonly FrameSpec[]): Buffer {
  const out = Buffer.alloc(specs.reduce((n, s) => n + FRAME_HEADER_BYTES + s.payload.length, 0));
  let off = 0;
  for (const s of specs) {
    out.set(s.payload, off + FRAME_HEADER_BYTES);
    sealFrame(out, off, s.type, s.id, s.ts, s.payload.length);
    off += FRAME_HEADER_BYTES + s.payload.length;
  }
  return out;
}

export function float64Be(v: number): Uint8Array {
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  return b;
}

export const bytesOf = (...parts: (number | Uint8Array)[]): Uint8Array =>
  Uint8Array.from(parts.flatMap((p) => (typeof p === 'number' ? [p] : [...p])));

/** One msgpack scalar as bytes, any tag the scanner knows, including canonical forms msgpackr would not write. */
export const scalarItem: fc.Arbitrary<Uint8Array> = fc.oneof(
  fc.constantFrom(0xc0, 0xc2, 0xc3).map((t) => bytesOf(t)),
  fc.integer({ min: 0, max: 0x7f }).map((v) => bytesOf(v)),
  fc.integer({ min: 0xe0, max: 0xff }).map((v) => bytesOf(v)),
  fc.uint8Array({ minLength: 8, maxLength: 8 }).map((b) => bytesOf(0xcb, b)),
  fc.double().map((v) => packr.pack(v) as Uint8Array),
  fc.tuple(fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }), fc.integer({ min: 0, max: 11 })).map(([n, k]) => packr.pack(n / 10 ** k) as Uint8Array),
  fc.tuple(fc.maxSafeInteger(), fc.integer({ min: 0, max: 11 })).map(([n, k]) => bytesOf(0xcb, float64Be(n / 10 ** k))),
  fc.constantFrom(-0, 2 ** 51, -(2 ** 51), 2 ** 51 + 1, 2 ** 51 / 1e9, 2 ** 32, -(2 ** 31) - 1, 0.1, -0.1, 1e-300, 5e-324).map((v) => bytesOf(0xcb, float64Be(v))),
  fc.constantFrom(-(2 ** 31), 2 ** 32 - 1, -33, -32, 127, 128, 255, 256, 65535, 65536, -128, -129, -32768, -32769).map((v) => packr.pack(v) as Uint8Array),
  fc.tuple(fc.constantFrom(0xca, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3), fc.uint8Array({ minLength: 8, maxLength: 8 })).map(([t, b]) => {
    const n = { 0xca: 4, 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8 }[t] ?? 0;
    return bytesOf(t, b.subarray(0, n));
  }),
  fc.oneof(fc.string(), fc.string({ unit: 'binary', maxLength: 300 })).map((s) => packr.pack(s) as Uint8Array),
  fc.uint8Array({ maxLength: 40 }).map((b) => bytesOf(0xc4, b.length, b)),
  fc.uint8Array({ maxLength: 40 }).map((b) => bytesOf(0xd9, b.length, b)),
  fc.uint8Array({ maxLength: 40 }).map((b) => bytesOf(0xda, 0, b.length, b)),
  fc.uint8Array({ maxLength: 40 }).map((b) => bytesOf(0xc7, b.length, 5, b)),
  fc.tuple(fc.constantFrom([0xd4, 1], [0xd5, 2], [0xd6, 4], [0xd7, 8], [0xd8, 16]), fc.uint8Array({ minLength: 17, maxLength: 17 })).map(([[t, n], b]) => bytesOf(t, b.subarray(0, n + 1))),
);

/** A msgpack array of scalars, with its canonical header or a longer one. */
export const scalarArray: fc.Arbitrary<Uint8Array> = fc.tuple(fc.array(scalarItem, { maxLength: 20 }), fc.constantFrom('fix', 'u16', 'u32')).map(([items, form]) => {
  const n = items.length;
  const head = form === 'u32' ? bytesOf(0xdd, 0, 0, 0, n) : form === 'u16' || n > 15 ? bytesOf(0xdc, 0, n) : bytesOf(0x90 + n);
  return bytesOf(head, ...items);
});

export const payload: fc.Arbitrary<Uint8Array> = fc.oneof(
  { weight: 4, arbitrary: scalarArray },
  { weight: 2, arbitrary: fc.array(fc.oneof(fc.double(), fc.integer(), fc.string(), fc.boolean(), fc.constant(null))).map((a) => packr.pack(a) as Uint8Array) },
  { weight: 1, arbitrary: fc.anything().map((v) => packr.pack(v) as Uint8Array) },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 64 }) },
  { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1050, maxLength: 1100 }).map((a) => packr.pack(a) as Uint8Array) },
);

export const timestamp: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: 0, max: 5 }).map((k) => 1_767_225_600_000 + k * 100),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.constantFrom(-0, 0, Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 2 ** 60, Number.MAX_VALUE, -Number.MAX_VALUE, 0.5),
  fc.maxSafeInteger(),
);

/** Frames following the id rules: a SAVE takes the next id (or a higher one, frames lost), a SUPERSEDE repeats it. */
export const validFrames: fc.Arbitrary<FrameSpec[]> = fc
  .tuple(
    fc.oneof(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER - 10_000 })),
    fc.array(fc.tuple(fc.constantFrom<FrameType>(FRAME_SAVE, FRAME_SAVE, FRAME_SUPERSEDE), fc.constantFrom(1, 1, 1, 2, 50), timestamp, payload), { maxLength: 80 }),
  )
  .map(([first, rows]) => {
    let id = first - 1;
    return rows.map(([type, step, ts, p], i) => {
      id = type === FRAME_SUPERSEDE && i > 0 ? id : id + step;
      return { type, id, ts, payload: p };
    });
  });
