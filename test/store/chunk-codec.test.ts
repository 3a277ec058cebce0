import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { CHUNK_LOGICAL_BYTES_MAX, decodeChunk, encodeChunk, readChunkColumns } from '../../src/store/format/chunk-codec.js';
import { BlockColumnsBuilder, ColumnPlan, type BlockColumns } from '../../src/store/aggregate/block-columns.js';
import { visitFrames } from '../../src/store/read/reader.js';
import { FRAME_SAVE, FRAME_SUPERSEDE, checkFrame, type FrameType } from '../../src/store/format/frame.js';
import { FIELDS, sensorRecord } from '../../bench/records.js';
import { type FrameSpec, bytesOf, float64Be, frames, packr, payload, timestamp, validFrames } from './frame-arbitraries.js';
import { openModel, openStore, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';

function roundtrip(logical: Buffer): Buffer {
  return decodeChunk(encodeChunk(logical), logical.length);
}

/** The chunk of `count` sensor records as the store writes them: ids in a row, one every 100 ms. */
function sensorChunk(first: number, count: number, record: (i: number) => Record<string, unknown>): Buffer {
  const specs: FrameSpec[] = [];
  for (let i = first; i < first + count; i++) {
    const r = record(i);
    specs.push({ type: FRAME_SAVE, id: i + 1, ts: 1_767_225_600_000 + 100 * i, payload: packr.pack(FIELDS.map((f) => r[f])) });
  }
  return frames(specs);
}

afterEach(removeTmpDirs);

describe('chunk codec', () => {
  it('gives back any valid frames byte for byte', () => {
    fc.assert(
      fc.property(validFrames, (specs) => {
        const logical = frames(specs);
        expect(roundtrip(logical).equals(logical)).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it('gives back frames whose ids go down (valid one by one, not in a segment)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.maxSafeInteger().filter((id) => id >= 1), timestamp, payload), { maxLength: 20 }), (rows) => {
        const logical = frames(rows.map(([id, ts, p]) => ({ type: FRAME_SAVE, id, ts, payload: p })));
        expect(roundtrip(logical).equals(logical)).toBe(true);
      }),
    );
  });

  it('stores input that is not whole valid frames as it is', () => {
    const chunk = sensorChunk(0, 64, sensorRecord);
    const badCrc = Buffer.from(chunk);
    badCrc[5] ^= 1;
    for (const logical of [Buffer.alloc(0), chunk.subarray(0, chunk.length - 3), badCrc, Buffer.concat([chunk, Buffer.of(0)]), Buffer.from('not frames at all')]) {
      const encoded = encodeChunk(logical);
      expect(encoded[0]).toBe(0);
      expect(decodeChunk(encoded, logical.length).equals(logical)).toBe(true);
    }
  });

  it('gives back the frames of a segment the store wrote, saves and update-lasts, in 64-frame chunks', async () => {
    const dir = tmpDir();
    const store = await openStore(dir);
    const log = await openModel(store);
    for (let i = 1; i <= 1000; i++) {
      log.save(rec(i));
      if (i % 100 === 0) log.updateLast({ hum: -i });
    }
    await store.close();
    let records = 0;
    let stored = 0;
    for (const name of segFiles(`${dir}/m`)) {
      const b = fs.readFileSync(`${dir}/m/${name}`);
      const ends: number[] = [];
      for (let off = 32, n; (n = checkFrame(b, off, b.length)) > 0; off += n) ends.push(off + n);
      for (let first = 0; first < ends.length; first += 64) {
        const logical = b.subarray(first === 0 ? 32 : ends[first - 1], ends[Math.min(first + 64, ends.length) - 1]);
        const encoded = encodeChunk(logical);
        expect(decodeChunk(encoded, logical.length).equals(logical)).toBe(true);
        stored += encoded.length;
      }
      records += ends.length;
    }
    expect(records).toBe(1010);
    expect(stored / records).toBeLessThanOrEqual(16);
  });

  it('compresses sensor records to at most 16 B a record', () => {
    const chunk = sensorChunk(1000, 64, sensorRecord);
    const encoded = encodeChunk(chunk);
    expect(encoded[0]).toBe(1);
    expect(encoded.length / 64).toBeLessThanOrEqual(16);
  });

  it('rejects or changes corrupt input, never returns another length', () => {
    const chunk = sensorChunk(5000, 64, sensorRecord);
    const encoded = encodeChunk(chunk);
    const outcome = (bytes: Uint8Array, logicalBytes: number): string => {
      try {
        const out = decodeChunk(bytes, logicalBytes);
        expect(out.length).toBe(logicalBytes);
        return out.equals(chunk) ? 'same' : 'differs';
      } catch (e) {
        expect(e).toBeInstanceOf(Error);
        return 'throws';
      }
    };
    fc.assert(
      fc.property(fc.nat(encoded.length * 8 - 1), (bit) => {
        const flipped = Buffer.from(encoded);
        flipped[bit >> 3] ^= 1 << (bit & 7);
        outcome(flipped, chunk.length);
      }),
      { numRuns: 2000 },
    );
    for (let n = 0; n < encoded.length; n++) expect(outcome(encoded.subarray(0, n), chunk.length)).toBe('throws');
    expect(outcome(encoded, chunk.length - 1)).toBe('throws');
    expect(outcome(encoded, chunk.length + 1)).toBe('throws');
    expect(() => decodeChunk(encoded, CHUNK_LOGICAL_BYTES_MAX + 1)).toThrow(/out of range/);
    // Corrupt streams inside valid deflate data: what the decoder itself must catch.
    const streams = inflateRawSync(encoded.subarray(1));
    fc.assert(
      fc.property(fc.nat(streams.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const bad = Buffer.from(streams);
        bad[at] ^= xor;
        expect(outcome(Buffer.concat([Buffer.of(1), deflateRawSync(bad)]), chunk.length)).not.toBe('same');
      }),
      // [21, 4]: the first frame's head marked "id stored whole", which decoded the same id (CI, seed 1187744700).
      { numRuns: 2000, examples: [[21, 4]] },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat(5000), (garbage, logicalBytes) => {
        outcome(bytesOf(1, garbage), logicalBytes);
        outcome(bytesOf(0, garbage), logicalBytes);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('chunk codec memory', () => {
  it('encodes and decodes a chunk without a 16 KiB ArrayBuffer for each zlib call', () => {
    // zlib's default output buffer (16 KiB) was a new ArrayBuffer on every call: while a segment was
    // compacted that external memory made V8 run a full collection about every second.
    const logical = sensorChunk(1, 64, sensorRecord);
    const encoded = encodeChunk(logical);
    expect(roundtrip(logical).equals(logical)).toBe(true);
    const calls = 300;
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < calls; i++) {
      encodeChunk(logical);
      decodeChunk(encoded, logical.length);
    }
    const grownBytes = process.memoryUsage().arrayBuffers - before;
    // An encode and a decode: 45 KB of ArrayBuffers with zlib's default output buffers, 21 KB without them.
    expect(grownBytes / calls).toBeLessThan(32 * 1024);
  });
  it('decodes into a given buffer (compaction checks each chunk in one reused buffer)', () => {
    const logical = sensorChunk(1, 64, sensorRecord);
    const into = Buffer.alloc(logical.length + 100, 0xee);
    const decoded = decodeChunk(encodeChunk(logical), logical.length, into);
    expect(decoded.buffer).toBe(into.buffer);
    expect(decoded.equals(logical)).toBe(true);
    expect(into[logical.length]).toBe(0xee);
    const raw = Buffer.concat([Buffer.of(0), logical]);
    expect(decodeChunk(raw, logical.length, into).equals(logical)).toBe(true);
    expect(() => decodeChunk(raw, logical.length, Buffer.alloc(logical.length - 1))).toThrow(/holds it/);
  });
});

describe('chunk codec limits', () => {
  it('gives back frames whose number deltas take more bytes than the numbers (stored raw)', () => {
    const extremes = Array.from({ length: 200 }, () => [0, 2 ** 32 - 1]);
    const logical = frames(Array.from({ length: 64 }, (_, i) => ({ type: FRAME_SAVE, id: i + 1, ts: i, payload: packr.pack(extremes.map((pair) => pair[i % 2])) as Uint8Array })));
    expect(encodeChunk(logical)[0]).toBe(0);
    expect(roundtrip(logical).equals(logical)).toBe(true);
  });

  it('refuses a chunk over the limit, and deflate data that would inflate past the logical length', () => {
    expect(() => encodeChunk(Buffer.alloc(CHUNK_LOGICAL_BYTES_MAX + 1))).toThrow(/over CHUNK_LOGICAL_BYTES_MAX/);
    const bomb = Buffer.concat([Buffer.of(1), deflateRawSync(Buffer.alloc(64 * 1024 * 1024))]);
    expect(() => decodeChunk(bomb, 4096)).toThrow(/corrupt deflate data/);
  });

  it('gives back deltas at the edges of their ranges', () => {
    const edges: FrameSpec[][] = [
      [0, 2 ** 52],
      [0, -(2 ** 52)],
      [2 ** 53 - 1, -(2 ** 53 - 1)],
    ].map((ts) => ts.map((t, i) => ({ type: FRAME_SAVE as FrameType, id: i + 1, ts: t, payload: packr.pack([1]) as Uint8Array })));
    const decimals = [-(2 ** 51), 2 ** 51, -(2 ** 51), 2 ** 47, -(2 ** 47), 2 ** 47 + 1, 0.5, -(2 ** 51) / 1e9, 2 ** 51 / 1e9];
    edges.push(decimals.map((v, i) => ({ type: FRAME_SAVE as FrameType, id: i + 1, ts: 0, payload: bytesOf(0x91, 0xcb, float64Be(v)) })));
    for (const specs of edges) {
      const logical = frames(specs);
      expect(roundtrip(logical).equals(logical)).toBe(true);
    }
  });
});

/** Ids [a, b] of whole valid frames, their `columns` decoded the full way: the frames' bytes through visitFrames. */
function viaFrames(logical: Buffer, a: number, b: number, columns: number[]): BlockColumns {
  const builder = new BlockColumnsBuilder(b, new ColumnPlan(columns), b - a + 1);
  visitFrames(logical, a, b, (f, off, n, _id, again) => builder.add(f, off, off + n, again), () => {
    throw new Error('valid frames lose nothing');
  });
  return builder.finish();
}

/** The same from the encoded chunk's column streams, or 'declined' when readChunkColumns leaves it to the full decode. */
function viaColumns(encoded: Buffer, logicalBytes: number, a: number, b: number, columns: number[]): BlockColumns | 'declined' {
  const builder = new BlockColumnsBuilder(b, new ColumnPlan(columns), b - a + 1);
  try {
    readChunkColumns(encoded, logicalBytes, columns, builder.chunkSink(a, b));
  } catch {
    return 'declined';
  }
  return builder.finish();
}

/** BlockColumns as plain data, -0 and NaN told apart from 0 and each other as Object.is does. */
function plain(c: BlockColumns): unknown {
  return { ...c, values: Array.from(c.values, (v) => (Object.is(v, -0) ? '-0' : Number.isNaN(v) ? 'NaN' : v)), others: c.others.map((o) => (o === undefined ? [] : Array.from(o))) };
}

describe('chunk codec: the values of some columns without rebuilding frames', () => {
  it('gives what the full decode gives, for any valid frames, columns and id range, or declines', () => {
    let read = 0;
    fc.assert(
      fc.property(validFrames, fc.uniqueArray(fc.integer({ min: 0, max: 24 }), { maxLength: 6 }), fc.nat(), fc.integer({ min: 0, max: 150 }), (specs, columns, at, width) => {
        fc.pre(specs.length > 0);
        const logical = frames(specs);
        const a = specs[at % specs.length].id;
        const got = viaColumns(encodeChunk(logical), logical.length, a, a + width, columns);
        if (got === 'declined') return;
        read++;
        expect(plain(got)).toEqual(plain(viaFrames(logical, a, a + width, columns)));
      }),
      { numRuns: 1500 },
    );
    expect(read).toBeGreaterThan(20);
  });

  it('gives what the full decode gives for sensor-like payloads (numbers of every form, null, booleans), and reads most of them', () => {
    const value = fc.oneof(
      fc.double(),
      fc.integer({ min: -(2 ** 31), max: 2 ** 32 - 1 }),
      fc.tuple(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.integer({ min: 0, max: 9 })).map(([n, k]) => n / 10 ** k),
      fc.constantFrom(null, true, false, -0, Number.NaN, Infinity),
    );
    const rows = fc.array(fc.tuple(fc.constantFrom<FrameType>(FRAME_SAVE, FRAME_SAVE, FRAME_SUPERSEDE), fc.constantFrom(1, 1, 2), timestamp, fc.array(value, { maxLength: 8 })), { minLength: 1, maxLength: 80 });
    let read = 0;
    let runs = 0;
    fc.assert(
      fc.property(rows, fc.uniqueArray(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 5 }), fc.nat(), fc.integer({ min: 0, max: 100 }), (spec, columns, at, width) => {
        let id = 0;
        const specs = spec.map(([type, step, ts, values], i) => {
          id = type === FRAME_SUPERSEDE && i > 0 ? id : id + step;
          return { type, id, ts, payload: packr.pack(values) as Uint8Array };
        });
        const logical = frames(specs);
        const a = specs[at % specs.length].id;
        runs++;
        const got = viaColumns(encodeChunk(logical), logical.length, a, a + width, columns);
        if (got === 'declined') return;
        read++;
        expect(plain(got)).toEqual(plain(viaFrames(logical, a, a + width, columns)));
      }),
      { numRuns: 1500 },
    );
    expect(read).toBeGreaterThan(runs / 2);
  });

  it('reads the chunks the store writes without declining, update-lasts included', () => {
    const specs: FrameSpec[] = [];
    for (let i = 0; i < 64; i++) {
      const r = sensorRecord(i);
      specs.push({ type: FRAME_SAVE, id: i + 1, ts: 1_767_225_600_000 + 100 * i, payload: packr.pack([r.device_id, r.temperature, r.humidity, r.pressure, r.battery, i % 4 === 0 ? null : i % 2 === 0]) as Uint8Array });
      if (i % 9 === 0) specs.push({ type: FRAME_SUPERSEDE, id: i + 1, ts: 1_767_225_600_000 + 100 * i + 5, payload: packr.pack(['x', -i, i / 10, 1e300 / (i + 1)]) as Uint8Array });
    }
    const logical = frames(specs);
    for (const [a, b] of [[1, 64], [10, 20], [64, 64], [60, 90]]) {
      for (const columns of [[1, 2, 3, 4], [4, 1], [5], [1, 9]]) {
        const got = viaColumns(encodeChunk(logical), logical.length, a, b, columns);
        expect(got, `ids ${a}-${b}, columns ${columns}`).not.toBe('declined');
        expect(plain(got as BlockColumns)).toEqual(plain(viaFrames(logical, a, b, columns)));
      }
    }
    // A string in an asked column is left to the full decode.
    expect(viaColumns(encodeChunk(logical), logical.length, 1, 64, [0])).toBe('declined');
  });

  it('reads corrupt streams within bounds: it declines, or gives at most the records of its range', () => {
    // What catches corruption is the CRC of the stored bytes, checked before (zlog.ts readColumnsSync, and the
    // compaction-recovery test); here the reader must only stay within its streams and the block.
    const chunk = sensorChunk(7000, 64, sensorRecord);
    const streams = inflateRawSync(encodeChunk(chunk).subarray(1));
    let declined = 0;
    fc.assert(
      fc.property(fc.nat(streams.length - 1), fc.integer({ min: 1, max: 255 }), (at, xor) => {
        const bad = Buffer.from(streams);
        bad[at] ^= xor;
        const got = viaColumns(Buffer.concat([Buffer.of(1), deflateRawSync(bad)]), chunk.length, 7001, 7064, [1, 2, 3, 4]);
        if (got === 'declined') declined++;
        else expect(got.count).toBeLessThanOrEqual(64);
      }),
      { numRuns: 1000 },
    );
    expect(declined).toBeGreaterThan(100);
  });
});
