/**
 * ValuePacker (store/format/value-pack.ts) must write a record's value array byte for byte as the store's
 * msgpackr packer does, for every scalar a record may hold: integers at every boundary of msgpack's
 * forms, -0, NaN, infinities, fractions, huge and tiny numbers, strings of any length and any UTF-16
 * (lone surrogates included, on both sides of the 64-unit switch), booleans, null and undefined as nil.
 * packedArrayFits must take exactly such arrays, and refuse a wrong count, a cut or a longer range, and
 * types a record never holds.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { packedArrayFits, ValuePacker } from '../../src/store/format/value-pack.js';

const RUNS = Number(process.env.VALUE_PACK_RUNS ?? 200);
const storePackr = new Packr({ useRecords: false });

const boundaries = [0, 0x1f, 0x20, 0x7f, 0x80, 0xff, 0x100, 0xffff, 0x10000, 0xffffffff, 0x100000000, 2 ** 53 - 1, 2 ** 53, 2 ** 60];
const boundary = fc.constantFrom(...boundaries.flatMap((n) => [n, -n, n + 1, -n - 1, n - 1, 1 - n]), -0x20, -0x21, -0x80, -0x81, -0x8000, -0x8001, -(2 ** 31), -(2 ** 31) - 1);
const number = fc.oneof(boundary, fc.integer(), fc.double(), fc.double({ min: -1e-300, max: 1e-300 }), fc.constantFrom(-0, NaN, Infinity, -Infinity, 0.1 + 0.2, Number.MIN_VALUE, Number.MAX_VALUE));
const anyUnits = fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 300 }).map((units) => String.fromCharCode(...units));
const text = fc.oneof(
  fc.string({ maxLength: 80 }),
  fc.string({ unit: 'binary', maxLength: 80 }),
  anyUnits,
  fc.constantFrom(...[0x20, 0x40, 0x100, 0x10000].flatMap((n) => [n - 1, n, n + 1])).map((n) => 'x'.repeat(n)),
  fc.integer({ min: 20, max: 100 }).map((n) => 'é'.repeat(n)),
);
const value = fc.oneof(number, text, fc.boolean(), fc.constant(null));
const values = fc.array(value, { maxLength: 20 });

function packed(list: unknown[]): Uint8Array {
  const packer = new ValuePacker();
  packer.arrayHeader(list.length);
  for (const v of list) packer.value(v);
  return packer.take();
}

describe('ValuePacker', () => {
  it("writes msgpackr's bytes for any value array of a record", () => {
    fc.assert(
      fc.property(values, (list) => {
        expect(Buffer.from(packed(list))).toEqual(Buffer.from(storePackr.pack(list)));
      }),
      { numRuns: RUNS },
    );
  });

  it('writes undefined as nil, as the store writes a visible field given undefined', () => {
    expect(Buffer.from(packed([undefined, 1]))).toEqual(Buffer.from(storePackr.pack([null, 1])));
  });

  it('writes arrays of 16 and more values with the longer header', () => {
    const list = Array.from({ length: 70000 }, (_, i) => i % 3);
    expect(Buffer.from(packed(list))).toEqual(Buffer.from(storePackr.pack(list)));
  });

  it('keeps the arrays of one buffer apart and starts again after take()', () => {
    const packer = new ValuePacker();
    for (const list of [[1, 'a'], ['x'.repeat(40000)], [true, null, -1.5]]) {
      packer.arrayHeader(list.length);
      for (const v of list) packer.value(v);
    }
    const all = packer.take();
    expect(Buffer.from(all)).toEqual(Buffer.concat([[1, 'a'], ['x'.repeat(40000)], [true, null, -1.5]].map((l) => storePackr.pack(l))));
    expect(packer.length).toBe(0);
  });

  it('refuses what a record never holds', () => {
    const packer = new ValuePacker();
    for (const v of [{}, [], 1n, Symbol('s'), () => 1]) expect(() => packer.value(v)).toThrow(/a record value is a number, string, boolean or null/);
  });
});

describe('packedArrayFits', () => {
  it('takes exactly the packed array of the given count', () => {
    fc.assert(
      fc.property(values, fc.nat(3), (list, pad) => {
        const bytes = packed(list);
        const framed = new Uint8Array(pad + bytes.length + 2);
        framed.set(bytes, pad);
        expect(packedArrayFits(framed, pad, pad + bytes.length, list.length)).toBe(true);
        expect(packedArrayFits(framed, pad, pad + bytes.length, list.length + 1)).toBe(false);
        if (bytes.length > 1) expect(packedArrayFits(framed, pad, pad + bytes.length - 1, list.length)).toBe(false);
        expect(packedArrayFits(framed, pad, pad + bytes.length + 1, list.length)).toBe(false);
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses values of other kinds and headers of other sizes', () => {
    for (const other of [[{ a: 1 }], [[1]], [new Uint8Array(2)], [new Map([[1, 2]])]]) {
      const bytes = storePackr.pack(other);
      expect(packedArrayFits(bytes, 0, bytes.length, 1)).toBe(false);
    }
    const wide = Uint8Array.from([0xdc, 0, 1, 0x01]);
    expect(packedArrayFits(wide, 0, wide.length, 1)).toBe(false);
    expect(packedArrayFits(Uint8Array.from([]), 0, 0, 0)).toBe(false);
  });
});
