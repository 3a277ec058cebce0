/** copyBytes: the bytes Buffer.copy would copy, on both sides of the length where it switches to a loop. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { copyBytes, SMALL_COPY_BYTES_MAX } from '../../src/store/format/byte-copy.js';

describe('copyBytes', () => {
  it('copies src[start, end) to dst at `at` exactly as Buffer.copy does, and answers the offset after them', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 3 * SMALL_COPY_BYTES_MAX }),
        fc.nat(),
        fc.nat(),
        fc.nat({ max: 2 * SMALL_COPY_BYTES_MAX }),
        (bytes, a, b, at) => {
          const src = Buffer.from(bytes);
          const start = src.length === 0 ? 0 : a % (src.length + 1);
          const end = start + (src.length - start === 0 ? 0 : b % (src.length - start + 1));
          const dst = Buffer.alloc(at + (end - start) + 8, 0xaa);
          const expected = Buffer.from(dst);
          src.copy(expected, at, start, end);
          expect(copyBytes(src, start, end, dst, at)).toBe(at + end - start);
          expect(dst).toEqual(expected);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('copies out of and into the middle of a larger buffer, at the threshold and one byte past it', () => {
    for (const n of [0, 1, SMALL_COPY_BYTES_MAX, SMALL_COPY_BYTES_MAX + 1]) {
      const pool = Buffer.from(Array.from({ length: 300 }, (_, i) => i & 0xff));
      const src = pool.subarray(7, 7 + n + 10);
      const dst = Buffer.alloc(n + 20);
      expect(copyBytes(src, 5, 5 + n, dst, 3)).toBe(3 + n);
      expect([...dst.subarray(3, 3 + n)]).toEqual([...pool.subarray(12, 12 + n)]);
      expect(dst.subarray(0, 3).every((x) => x === 0) && dst.subarray(3 + n).every((x) => x === 0)).toBe(true);
    }
  });
});
