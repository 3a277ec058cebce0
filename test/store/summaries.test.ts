/**
 * Aggregation from segment summaries against a brute-force computation over every stored record
 * (iterate), for random windows and intervals: across sealed and active segments, after update-last
 * (also one that rolls a segment), retention, clear, corruption, a restart (summaries read back from
 * their .sum files) and a damaged .sum file (rebuilt).
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { FIELDS, frameOffsets, openModel, openStore, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { Bucket } from '../../src/store/aggregate/aggregate.js';
import { prng } from '../support/prng.js';
import { crc32c } from '../../src/store/format/crc32c.js';
import { FRAME_HEADER_BYTES, FRAME_SAVE, sealFrame } from '../../src/store/format/frame.js';
import { SegmentSummary } from '../../src/store/aggregate/segment-summary.js';
import { blockChecksum, blockIntact } from '../../src/store/aggregate/block-checksum.js';
import { BlockColumnsBuilder, ColumnPlan } from '../../src/store/aggregate/block-columns.js';

afterAll(removeTmpDirs);
afterEach(() => vi.useRealTimers());

const T0 = Date.parse('2026-11-23T00:00:00Z');
const AGG_FIELDS = ['temp', 'hum', 'status', 'ok'];

function fill(log: ModelLog, n: number, stepMs: number, start = 0): void {
  for (let i = start; i < start + n; i++) {
    vi.setSystemTime(T0 + i * stepMs);
    log.save(rec(i));
  }
}

/** The same answer computed from every record. */
async function bruteForce(log: ModelLog, fromMs: number, toMs: number, intervalMs: number, fields: readonly string[] = AGG_FIELDS): Promise<Bucket[]> {
  const byStart = new Map<number, { count: number; values: unknown[][] }>();
  for await (const r of log.iterate()) {
    const ts = r.create_at as number;
    if (ts < fromMs || ts >= toMs) continue;
    const start = Math.floor(ts / intervalMs) * intervalMs;
    let b = byStart.get(start);
    if (!b) byStart.set(start, (b = { count: 0, values: fields.map(() => []) }));
    b.count++;
    fields.forEach((f, i) => {
      if (r[f] !== null && r[f] !== undefined) b.values[i].push(r[f]);
    });
  }
  return [...byStart.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([startMs, b]) => ({
      startMs,
      count: b.count,
      stats: b.values.map((vs) => {
        const nums = vs.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : (v as number)));
        const numeric = vs.every((v) => typeof v !== 'string');
        return {
          n: vs.length,
          min: numeric ? Math.min(...nums) : NaN,
          max: numeric ? Math.max(...nums) : NaN,
          sum: numeric ? nums.reduce((x, y) => x + y, 0) : NaN,
          first: vs[0] ?? null,
          last: vs[vs.length - 1] ?? null,
        };
      }),
    }));
}

function close(a: Bucket[], b: Bucket[]): void {
  expect(a.map((x) => [x.startMs, x.count])).toEqual(b.map((x) => [x.startMs, x.count]));
  a.forEach((x, i) =>
    x.stats.forEach((s, f) => {
      const want = b[i].stats[f];
      if (want.n === 0) return expect(s.n).toBe(0); // a bucket without values of this field: the rest is not read
      expect({ ...s, sum: 0 }).toEqual({ ...want, sum: 0 });
      if (Number.isNaN(want.sum)) expect(s.sum).toBeNaN();
      else expect(Math.abs(s.sum - want.sum)).toBeLessThanOrEqual(1e-6 * Math.max(1, Math.abs(want.sum))); // summed in another order
    }),
  );
}

async function checkRandom(log: ModelLog, seed: number, spanMs: number, rounds = 12): Promise<void> {
  const rnd = prng(seed);
  for (let k = 0; k < rounds; k++) {
    const from = T0 - 5000 + Math.floor(rnd() * spanMs);
    const to = from + 1 + Math.floor(rnd() * spanMs);
    const interval = [1, 7, 250, 1000, 3333, 60_000][Math.floor(rnd() * 6)];
    if ((to - from) / interval > 9000) continue;
    const q = { fromMs: from, toMs: to, intervalMs: interval, fields: AGG_FIELDS };
    close(await log.aggregate(q), await bruteForce(log, from, to, interval));
  }
}

describe('aggregation from segment summaries', () => {
  it('equals a brute-force computation across sealed and active segments, and grows with new records', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 8192 });
    const log = await openModel(store);
    fill(log, 1500, 137);
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(5);
    expect(log.stats().summaryBytes).toBe(0); // nothing summarised before the first aggregation
    await checkRandom(log, 1, 1500 * 137);
    // Per block of 64 records: min/max create_at and count, and 6 statistics of each of the 6 fields, in doubles.
    expect(log.stats().summaryBytes).toBeGreaterThanOrEqual(Math.floor(1500 / 64) * (3 + 6 * 6) * 8);
    fill(log, 300, 137, 1500); // folded incrementally on the next call
    await checkRandom(log, 2, 1800 * 137);
    const all = await log.aggregate({ fromMs: T0, toMs: T0 + 86_400_000, intervalMs: 86_400_000, fields: ['seq'] });
    expect(all).toEqual([{ startMs: T0, count: 1800, stats: [{ n: 1800, min: 0, max: 1799, sum: (1799 * 1800) / 2, first: 0, last: 1799 }] }]);
    await store.close();
  });

  it('merges the coarse level (4,096 records) where a bucket holds it whole, and blocks around the edges', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 1024 * 1024 });
    const log = await openModel(store);
    fill(log, 30_000, 10);
    await log.durable();
    const rnd = prng(11);
    for (let k = 0; k < 6; k++) {
      const from = T0 - 1000 + Math.floor(rnd() * 100_000);
      const to = from + 50_000 + Math.floor(rnd() * 250_000);
      const interval = [41_000, 60_000, 100_000][k % 3];
      close(await log.aggregate({ fromMs: from, toMs: to, intervalMs: interval, fields: AGG_FIELDS }), await bruteForce(log, from, to, interval));
    }
    await store.close();
  });

  it('answers from edge blocks cached for other column sets, one decoding per set', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 8192 });
    const log = await openModel(store);
    fill(log, 2000, 97);
    await log.durable();
    const q = { fromMs: T0 + 3000, toMs: T0 + 180_000, intervalMs: 7001 };
    // The third set takes its columns from the entries the first two left: two decodings of each edge block.
    // Each set is asked twice: a block is kept when it is read a second time for the same interval.
    for (const fields of [['temp', 'hum'], ['status', 'seq'], ['seq', 'temp', 'status'], ['hum']]) {
      for (let i = 0; i < 2; i++) close(await log.aggregate({ ...q, fields }), await bruteForce(log, q.fromMs, q.toMs, q.intervalMs, fields));
    }
    await store.close();
  });

  it('follows update-last, also when it rolls the segment', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048 });
    const log = await openModel(store);
    fill(log, 100, 1000);
    const q = { fromMs: T0, toMs: T0 + 200_000, intervalMs: 10_000, fields: ['seq'] };
    expect((await log.aggregate(q)).at(-1)?.stats[0].last).toBe(99);
    for (let i = 0; i < 40; i++) log.updateLast({ seq: 5000 + i });
    const buckets = await log.aggregate(q);
    expect(buckets.at(-1)?.stats[0]).toMatchObject({ n: 10, max: 5039, last: 5039 });
    await checkRandom(log, 3, 100_000);
    fill(log, 5, 1000, 100);
    await checkRandom(log, 4, 105_000);
    await store.close();
  });

  it('after retention, clear and corruption, and after a restart from the .sum files (a damaged one is rebuilt)', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: 4096 });
    let log = await openModel(store);
    fill(log, 600, 1000);
    await log.durable();
    await checkRandom(log, 5, 600_000, 4);
    log.setRetention({ maxRecords: 300, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    await checkRandom(log, 6, 600_000, 6);
    await store.close();

    const mdir = path.join(dir, 'm');
    const sums = fs.readdirSync(mdir).filter((n) => n.endsWith('.sum'));
    const segs = segFiles(mdir);
    expect(sums.length).toBe(segs.length - 1); // every sealed segment, none of the removed ones
    // Damage one summary and one record of a sealed segment.
    const damaged = path.join(mdir, sums[0]);
    const sb = fs.readFileSync(damaged);
    sb[100] ^= 0xff;
    fs.writeFileSync(damaged, sb);
    const seg = path.join(mdir, segs[2]);
    const b = fs.readFileSync(seg);
    b[frameOffsets(seg)[5] + 30] ^= 0xff;
    fs.writeFileSync(seg, b);

    store = await openStore(dir, { segmentBytesMax: 4096 });
    log = await openModel(store);
    await checkRandom(log, 7, 600_000, 8);
    const total = (await log.aggregate({ fromMs: T0, toMs: T0 + 700_000, intervalMs: 700_000, fields: [] }))[0].count;
    expect(total).toBe(log.stats().total - 1); // the corrupt record is in neither
    expect(fs.readFileSync(damaged).equals(sb)).toBe(false); // rebuilt

    expect(log.stats().summaryBytes).toBeGreaterThan(0);
    await log.clear();
    expect(log.stats().summaryBytes).toBe(0);
    expect(await log.aggregate({ fromMs: T0, toMs: T0 + 700_000, intervalMs: 1000, fields: ['temp'] })).toEqual([]);
    fill(log, 3, 1000, 700);
    close(await log.aggregate({ fromMs: T0, toMs: T0 + 800_000, intervalMs: 1000, fields: AGG_FIELDS }), await bruteForce(log, T0, T0 + 800_000, 1000));
    await store.close();
  });

  it('places every record by its own time, also across a large backward clock step', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 4096, clockJumpMaxMs: 60_000 });
    const log = await openModel(store);
    fill(log, 200, 1000);
    fill(log, 100, 1000, 100_000); // a clock far ahead
    fill(log, 200, 1000, 300); // corrected
    await checkRandom(log, 8, 600_000);
    close(
      await log.aggregate({ fromMs: T0, toMs: T0 + 200_000_000, intervalMs: 100_000, fields: AGG_FIELDS }),
      await bruteForce(log, T0, T0 + 200_000_000, 100_000),
    );
    await store.close();
  });

  it('reads every msgpack value type of a block across an edge as the full decoder does', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 16_384 });
    const first = ['f', 'i', 'wide', 'neg', 's', 'b', 'n'];
    const log = await store.openModel('v', { fields: first });
    const long = 'x'.repeat(40);
    const value = (i: number): Record<string, unknown> => ({
      f: i % 5 === 0 ? null : (i % 13) / 3 - 1,
      i: [0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1][i % 8] + i,
      wide: [2 ** 32, 2 ** 40 + i, 2 ** 53 - 1, -(2 ** 33)][i % 4],
      neg: [-1, -32, -33, -128, -129, -32_768, -32_769, -(2 ** 31)][i % 8] - (i % 3),
      s: [`s${i % 4}`, long + i, 'é'.repeat(200) + i, ''][i % 4],
      b: i % 3 === 0 ? null : i % 2 === 0,
      n: i % 2 === 0 ? null : i,
    });
    for (let i = 0; i < 700; i++) {
      vi.setSystemTime(T0 + i * 250);
      if (i % 50 !== 49) {
        log.save(value(i));
        continue;
      }
      // A SUPERSEDE frame after the record's own (written first): numbers replacing nulls and the reverse.
      log.save({ ...value(i), f: null, n: null });
      await log.durable();
      log.updateLast({ ...value(i + 1000), f: 2.5, n: 3, i: null });
    }
    log.setFields({ fields: [...first, 'later'] }); // older records have no value in the new column
    for (let i = 700; i < 900; i++) {
      vi.setSystemTime(T0 + i * 250);
      log.save({ ...value(i), later: i % 4 === 0 ? null : i * 1.5 });
    }
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(3);
    const rnd = prng(12);
    for (let k = 0; k < 10; k++) {
      const from = T0 - 1000 + Math.floor(rnd() * 200_000);
      const q = { fromMs: from, toMs: from + 10_000 + Math.floor(rnd() * 200_000), intervalMs: [997, 4999, 13_001][k % 3] };
      const numeric = { ...q, fields: ['f', 'i', 'neg'] };
      // The same edges asked first for numbers only, then for every column: the cache must not answer the second from the first.
      close(await log.aggregate(numeric), await bruteForce(log, q.fromMs, q.toMs, q.intervalMs, numeric.fields));
      const all = { ...q, fields: [...first, 'later'] };
      close(await log.aggregate(all), await bruteForce(log, q.fromMs, q.toMs, q.intervalMs, all.fields));
    }
    await store.close();
  });

  it('merges runs of whole blocks whose last value is not a number: counted, and kept as first/last', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 1024 * 1024 });
    const log = await store.openModel('mix', { fields: ['x'] });
    // Every other block ends in a string; buckets of several blocks merge them one after another.
    for (let i = 0; i < 1280; i++) {
      vi.setSystemTime(T0 + i * 1000);
      log.save({ x: i % 64 === 63 && Math.floor(i / 64) % 2 === 0 ? `end${i}` : i });
    }
    await log.durable();
    for (const interval of [128_000, 192_000, 320_000, 1_280_000]) {
      const got = await log.aggregate({ fromMs: T0, toMs: T0 + 1_280_000, intervalMs: interval, fields: ['x'] });
      const want = await bruteForce(log, T0, T0 + 1_280_000, interval, ['x']);
      const view = (bs: Bucket[]) => bs.map((b) => [b.startMs, b.count, b.stats[0].n, b.stats[0].first, b.stats[0].last]);
      expect(view(got)).toEqual(view(want));
    }
    await store.close();
  });

  it('answers as of its call while a later aggregation folds newer records into the shared summaries', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 1024 * 1024 });
    const log = await openModel(store);
    fill(log, 30_000, 10);
    await log.durable();
    const window = { fromMs: T0, toMs: T0 + 400_000, fields: ['seq'] };
    await log.aggregate({ ...window, intervalMs: 60_000 }); // summaries built
    const expected = log.stats().total;
    // About 300 blocks across a bucket edge: the first call yields to the event loop while it reads them.
    const first = log.aggregate({ ...window, intervalMs: 1_007 });
    vi.setSystemTime(T0 + 299_990); // stamped like the newest record: into its block and bucket
    for (let i = 30_000; i < 30_005; i++) log.save(rec(i));
    const later = log.aggregate({ ...window, intervalMs: 60_000 });
    const [a, b] = await Promise.all([first, later]);
    expect(a.reduce((n, x) => n + x.count, 0)).toBe(expected);
    expect(b.reduce((n, x) => n + x.count, 0)).toBe(expected + 5);
    await store.close();
  });

  it('refuses unknown fields, more than 10,000 buckets, and more than 200,000 bucket cells', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    await expect(log.aggregate({ fromMs: 0, toMs: 10, intervalMs: 1, fields: ['nope'] })).rejects.toThrow(/unknown field "nope"/);
    await expect(log.aggregate({ fromMs: 0, toMs: 10_001, intervalMs: 1, fields: [] })).rejects.toThrow(/10001 buckets/);
    const fields = Array.from({ length: 21 }, () => 'temp');
    await expect(log.aggregate({ fromMs: 0, toMs: 10_000, intervalMs: 1, fields })).rejects.toThrow(/10000 buckets of 21 fields make 210000 cells, more than 200000/);
    expect(await log.aggregate({ fromMs: 0, toMs: 10_000, intervalMs: 1, fields: fields.slice(1) })).toEqual([]);
    expect(FIELDS).toContain('temp');
    await store.close();
  });
});

describe('block checksums (an edge block whose bytes match is walked without its frames CRCs)', () => {
  /** Offsets in a .sum of 6 fields of its block checksums and byte counts (summary-file.ts's layout). */
  const checksumsAt = (blocks: number): number => 56 + 8 + 8 * blocks * (3 + 6 * 6);

  it('keeps the checksum of every block of a sealed segment in its .sum, and takes them for a file of version 1', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: 8192 });
    let log = await openModel(store);
    fill(log, 1500, 137);
    await log.durable();
    await checkRandom(log, 21, 1500 * 137, 3);
    await store.close();

    const mdir = path.join(dir, 'm');
    const sums = fs.readdirSync(mdir).filter((n) => n.endsWith('.sum'));
    expect(sums.length).toBeGreaterThan(3);
    const written = new Map<string, Buffer>();
    for (const name of sums) {
      const b = fs.readFileSync(path.join(mdir, name));
      written.set(name, b);
      expect(b.readUInt16LE(4)).toBe(2);
      // Each block's checksum is the CRC-32 of its frames' bytes as they lie in the segment file.
      const blocks = b.readUInt32LE(16);
      const seg = path.join(mdir, name.replace('.sum', '.log'));
      const offs = [...frameOffsets(seg), fs.statSync(seg).size];
      const data = fs.readFileSync(seg);
      for (let k = 0; k < blocks; k++) {
        const bytes = data.subarray(offs[64 * k], offs[Math.min(64 * (k + 1), offs.length - 1)]);
        expect(b.readInt32LE(checksumsAt(blocks) + 4 * k)).toBe(zlib.crc32(bytes) | 0);
        expect(b.readUInt32LE(checksumsAt(blocks) + 4 * blocks + 4 * k)).toBe(bytes.length);
      }
      // The same summary as a file of version 1: no checksums.
      const v1 = Buffer.concat([b.subarray(0, checksumsAt(blocks)), b.subarray(checksumsAt(blocks) + 8 * blocks, b.length - 4), Buffer.alloc(4)]);
      v1.writeUInt16LE(1, 4);
      v1.writeUInt32LE(crc32c(v1, 0, v1.length - 4), v1.length - 4);
      fs.writeFileSync(path.join(mdir, name), v1);
    }

    store = await openStore(dir, { segmentBytesMax: 8192 });
    log = await openModel(store);
    await checkRandom(log, 22, 1500 * 137, 3);
    // Read as version 1, then written again with the checksums the summary pass took.
    // The files are written in the background (tmp, fsync, rename), one per sealed segment.
    await vi.waitFor(
      () => {
        for (const name of sums) expect(fs.readFileSync(path.join(mdir, name)).equals(written.get(name) as Buffer)).toBe(true);
      },
      { timeout: 60_000, interval: 50 }, // a ceiling: a busy machine writes them later
    );
    await store.close();
  });

  it('checks an edge block frame by frame once its bytes changed after the checksum was taken', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 8192 });
    const log = await openModel(store);
    fill(log, 1500, 137);
    await log.durable();
    const q = { fromMs: T0, toMs: T0 + 1500 * 137, intervalMs: 1000, fields: AGG_FIELDS }; // every block straddles an edge
    // Summaries and checksums taken; no block read across an edge (so none in the straddle cache).
    expect((await log.aggregate({ ...q, intervalMs: 86_400_000 }))[0].count).toBe(1500);
    // A bit of one record's temp (a float64 at payload byte 2) flips in a sealed segment on disk.
    const seg = path.join(dir, 'm', segFiles(path.join(dir, 'm'))[1]);
    const at = frameOffsets(seg)[70] + 26 + 2 + 3;
    const fd = fs.openSync(seg, 'r+');
    fs.writeSync(fd, Buffer.from([fs.readFileSync(seg)[at] ^ 0x10]), 0, 1, at);
    fs.closeSync(fd);
    const got = await log.aggregate(q);
    close(got, await bruteForce(log, q.fromMs, q.toMs, q.intervalMs));
    expect(got.reduce((n, b) => n + b.count, 0)).toBe(1499); // the damaged record is in neither
    await store.close();
  });

  it('trusts bytes only while they are the bytes whose checksum was taken', () => {
    const payload = Buffer.from([0x91, 0xcb, 0x40, 0x34, 0, 0, 0, 0, 0, 0]); // [20]
    const block = Buffer.alloc(2 * (FRAME_HEADER_BYTES + payload.length));
    for (let i = 0; i < 2; i++) {
      const off = i * (FRAME_HEADER_BYTES + payload.length);
      block.set(payload, off + FRAME_HEADER_BYTES);
      sealFrame(block, off, FRAME_SAVE, 1 + i, T0 + i, payload.length);
    }
    const s = new SegmentSummary(1, 1);
    s.blockCrc[0] = blockChecksum(block);
    s.blockBytes[0] = block.length;
    expect(blockIntact(s, 0, block)).toBe(false); // not through the checksum pass yet
    s.checkedBlocks = 1;
    expect(blockIntact(s, 0, block)).toBe(true);
    expect(blockIntact(s, 0, block.subarray(0, block.length - 1))).toBe(false);
    const changed = Buffer.from(block);
    changed[FRAME_HEADER_BYTES + 3] ^= 1;
    expect(blockIntact(s, 0, changed)).toBe(false);
    s.blockBytes[0] = 0;
    expect(blockIntact(s, 0, block)).toBe(false);
    // Walked as intact, a frame's CRC is not computed: a damaged frame passes (its bytes would not have matched).
    const plan = new ColumnPlan([0]);
    expect(new BlockColumnsBuilder(2, plan, 64).addFrames(changed, 1, 2, false)).toBe(false);
    expect(new BlockColumnsBuilder(2, plan, 64).addFrames(changed, 1, 2, true)).toBe(true);
  });
});
