/**
 * JsonOut prints numbers itself (page answers and uplink lines are built from stored bytes): every text
 * must be exactly what JSON.stringify gives, for the short decimals it prints digit by digit, the doubles
 * it keeps in its table and the integers it prints in parts.
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JsonOut } from '../../src/store/read/json-out.js';

function printed(v: number): string {
  const out = new JsonOut(64);
  const b = Buffer.alloc(8);
  b.writeDoubleBE(v);
  out.float64(b, 0);
  out.float64(b, 0); // the second time from the kept text, if it was kept
  const text = out.buf.toString('latin1', 0, out.pos);
  return text.slice(0, text.length / 2);
}

describe('JsonOut numbers', () => {
  it('prints any double as JSON.stringify does', () => {
    fc.assert(
      fc.property(fc.double(), (v) => {
        expect(printed(v)).toBe(JSON.stringify(v));
      }),
      { numRuns: 20_000 },
    );
  });

  it('prints short decimals, the digit-by-digit path, as JSON.stringify does, at the edges of its range', () => {
    const decimal = fc.tuple(fc.integer({ min: -(2 ** 47), max: 2 ** 47 }), fc.integer({ min: 0, max: 7 })).map(([n, k]) => n / 10 ** k);
    fc.assert(
      fc.property(decimal, (v) => {
        expect(printed(v)).toBe(JSON.stringify(v));
      }),
      { numRuns: 20_000 },
    );
    const edges = [0, -0, 0.0001, -0.0001, 0.00001, 1e-7, 0.1, 0.2, 0.3, 1.0001, 2 ** 33, 2 ** 33 - 0.5, 2 ** 33 - 0.0001, 2 ** 33 + 0.5, 8589934591.9999, 999999999.9999, 1e9, 1e9 + 0.5, 123456789.1234, 4294967295.5, 1013.25, 20.07, -40.5];
    for (const v of edges) for (const x of [v, -v, v + Number.EPSILON * v, v - Number.EPSILON * v]) expect(printed(x), String(x)).toBe(JSON.stringify(x));
  });

  it('prints safe integers in parts as String does', () => {
    fc.assert(
      fc.property(fc.maxSafeInteger().filter((v) => v >= 0), (v) => {
        const out = new JsonOut(32);
        out.uint(v);
        expect(out.buf.toString('latin1', 0, out.pos)).toBe(String(v));
      }),
      { numRuns: 20_000 },
    );
    for (const v of [0, 9, 10, 999_999_999, 1_000_000_000, 1_000_000_001, 1_767_225_600_000, Number.MAX_SAFE_INTEGER]) {
      const out = new JsonOut(32);
      out.uint(v);
      expect(out.buf.toString('latin1', 0, out.pos)).toBe(String(v));
    }
  });
});
