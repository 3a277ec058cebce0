import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32c, crc32cInt32 } from '../../src/store/format/crc32c.js';
import { FRAME_HEADER_BYTES, FRAME_INVALID, FRAME_SAVE, FRAME_TRUNCATED, checkFrame, findNextFrame, frameId, sealFrame } from '../../src/store/format/frame.js';

function frame(id: number, payload: Buffer): Buffer {
  const b = Buffer.alloc(FRAME_HEADER_BYTES + payload.length);
  payload.copy(b, FRAME_HEADER_BYTES);
  sealFrame(b, 0, FRAME_SAVE, id, 1000 + id, payload.length);
  return b;
}

describe('crc32c', () => {
  it('has the Castagnoli check value', () => {
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(0))).toBe(0);
  });

  it('matches a bitwise reference on every length and can be continued', () => {
    const ref = (b: Buffer): number => {
      let c = ~0;
      for (const x of b) {
        c ^= x;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
      }
      return ~c >>> 0;
    };
    const data = Buffer.from(Array.from({ length: 100 }, (_, i) => (i * 37 + 11) & 0xff));
    for (let n = 0; n <= data.length; n++) expect(crc32c(data, 0, n)).toBe(ref(data.subarray(0, n)));
    expect(crc32c(data, 40, 100, crc32c(data, 0, 40))).toBe(ref(data));
  });

  it('gives the same bits as a signed integer (the hot paths), continued from either form', () => {
    const data = Buffer.from(Array.from({ length: 64 }, (_, i) => (i * 91 + 7) & 0xff));
    let high = 0;
    for (let n = 0; n <= data.length; n++) {
      const signed = crc32cInt32(data, 0, n);
      expect(signed | 0).toBe(signed);
      expect(signed >>> 0).toBe(crc32c(data, 0, n));
      if (signed < 0) high++;
    }
    expect(high).toBeGreaterThan(0); // some CRCs are >= 2^31: the case that differs
    expect(crc32cInt32(data, 20, 64, crc32cInt32(data, 0, 20)) >>> 0).toBe(crc32c(data));
    expect(crc32cInt32(data, 20, 64, crc32c(data, 0, 20)) >>> 0).toBe(crc32c(data));
  });
});

describe('frame', () => {
  it('validates, and rejects any flipped bit (the CRC covers the length)', () => {
    const f = frame(7, Buffer.from('hello payload'));
    expect(checkFrame(f, 0, f.length)).toBe(f.length);
    expect(frameId(f, 0)).toBe(7);
    for (let bit = 0; bit < f.length * 8; bit++) {
      const g = Buffer.from(f);
      g[bit >> 3] ^= 1 << (bit & 7);
      expect(checkFrame(g, 0, g.length)).toBeLessThanOrEqual(0);
    }
  });

  it('tells a torn frame from garbage', () => {
    const f = frame(1, Buffer.from('abc'));
    expect(checkFrame(f, 0, f.length - 1)).toBe(FRAME_TRUNCATED);
    expect(checkFrame(Buffer.alloc(64), 0, 64)).toBe(FRAME_INVALID);
  });

  it('resynchronises on the next valid frame with a higher id', () => {
    const a = frame(1, Buffer.from('one'));
    const b = frame(2, Buffer.from('two'));
    const buf = Buffer.concat([Buffer.from('garbage!'), a, b]);
    expect(findNextFrame(buf, 0, buf.length, 1)).toBe(8);
    expect(findNextFrame(buf, 0, buf.length, 2)).toBe(8 + a.length);
    expect(findNextFrame(buf, 0, buf.length, 3)).toBe(-1);
  });
});

describe('sealFrame', () => {
  it('writes the layout of docs/storage-format.md, as Buffer’s little-endian writers spell it, at any offset', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 200 }),
        fc.nat({ max: 40 }),
        fc.constantFrom(1, 2),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        (payload, off, type, id, ts) => {
          const got = Buffer.alloc(off + FRAME_HEADER_BYTES + payload.length + 5, 0xee);
          Buffer.from(payload).copy(got, off + FRAME_HEADER_BYTES);
          const want = Buffer.from(got);
          const len = FRAME_HEADER_BYTES - 8 + payload.length;
          want.writeUInt32LE(len, off);
          want[off + 8] = type;
          want[off + 9] = 0;
          want.writeDoubleLE(id, off + 10);
          want.writeDoubleLE(ts, off + 18);
          const crc = crc32c(want, off + 8, off + 8 + len, crc32c(want, off, off + 4));
          want.writeUInt32LE(crc, off + 4);
          expect(sealFrame(got, off, type as 1 | 2, id, ts, payload.length)).toBe(crc);
          expect(got).toEqual(want);
          expect(checkFrame(got, off, off + FRAME_HEADER_BYTES + payload.length)).toBe(FRAME_HEADER_BYTES + payload.length);
        },
      ),
      { numRuns: 300 },
    );
  });
});
