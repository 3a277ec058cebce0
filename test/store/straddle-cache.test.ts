/**
 * The straddle cache is one per process and outlives the summaries it caches blocks of: a summary that
 * its model dropped (close, clear, retention) must be free to go, or every closed store's summaries stay
 * in memory behind a cached block.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { STRADDLE_CACHE_BLOCKS, STRADDLE_CACHE_BYTES_MAX, STRADDLE_SEEN_BLOCKS_MAX, StraddleCache, straddleCache } from '../../src/store/aggregate/straddle-cache.js';
import { SegmentSummary } from '../../src/store/aggregate/segment-summary.js';
import { openModel, openStore, rec, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);
const T0 = Date.parse('2026-11-23T00:00:00Z');

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function cacheOneBlock(): WeakRef<SegmentSummary> {
  const summary = new SegmentSummary(1, 6, 100_000);
  straddleCache.put(summary, 0, { lastId: 64, count: 64, columns: [], values: new Float64Array(64), others: [] });
  expect(straddleCache.get(summary, 0, 64, [])).toBeDefined();
  return new WeakRef(summary);
}

describe('straddle cache', () => {
  it('does not keep a summary alive once nothing else holds it', async () => {
    const ref = cacheOneBlock();
    for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      gc();
    }
    expect(ref.deref()).toBeUndefined();
  });

  it('keeps at most STRADDLE_CACHE_BLOCKS blocks, dropping the least recently used first', () => {
    const cache = new StraddleCache();
    const summary = new SegmentSummary(1, 6, 100_000);
    const block = (k: number) => ({ lastId: 64 * (k + 1), count: 64, columns: [1], values: new Float64Array(128), others: [] });
    const cached = (k: number) => cache.get(summary, k, 64 * (k + 1), [1]) !== undefined;
    for (let k = 0; k < STRADDLE_CACHE_BLOCKS; k++) cache.put(summary, k, block(k));
    expect(cached(0)).toBe(true); // now the most recently used
    cache.put(summary, STRADDLE_CACHE_BLOCKS, block(STRADDLE_CACHE_BLOCKS));
    expect(cached(0)).toBe(true);
    expect(cached(1)).toBe(false);
    expect(cached(STRADDLE_CACHE_BLOCKS)).toBe(true);
    expect(cached(STRADDLE_CACHE_BLOCKS - 1)).toBe(true);
    for (let k = 0; k < 5 * STRADDLE_CACHE_BLOCKS; k++) cache.put(summary, 10_000 + k, block(10_000 + k));
    const kept = Array.from({ length: 5 * STRADDLE_CACHE_BLOCKS }, (_, k) => cached(10_000 + k)).filter(Boolean).length;
    expect(kept).toBeLessThanOrEqual(STRADDLE_CACHE_BLOCKS);
    expect(kept).toBeGreaterThanOrEqual(STRADDLE_CACHE_BLOCKS / 2);
    expect(cached(10_000 + 5 * STRADDLE_CACHE_BLOCKS - 1)).toBe(true);
  });
});

describe('straddle cache bytes', () => {
  const summary = new SegmentSummary(1, 6, 100_000);
  /** A block of 64 records decoded in `columns` columns (the values of a wide model's aggregation). */
  const wide = (k: number, columns: number) => ({
    lastId: 64 * (k + 1),
    count: 64,
    columns: Array.from({ length: columns }, (_, c) => c),
    values: new Float64Array(64 * (columns + 1)),
    others: [],
  });

  it('holds at most STRADDLE_CACHE_BYTES_MAX of values, however wide the blocks', () => {
    const cache = new StraddleCache();
    let heldMax = 0;
    for (let k = 0; k < STRADDLE_CACHE_BLOCKS; k++) {
      cache.put(summary, k, wide(k, 200));
      heldMax = Math.max(heldMax, cache.bytes);
    }
    expect(heldMax).toBeLessThanOrEqual(STRADDLE_CACHE_BYTES_MAX);
    const kept = Array.from({ length: STRADDLE_CACHE_BLOCKS }, (_, k) => cache.get(summary, k, 64 * (k + 1), [0]) !== undefined);
    const keptBytes = kept.filter(Boolean).length * 64 * 201 * 8;
    expect(keptBytes).toBe(cache.bytes);
    expect(kept[STRADDLE_CACHE_BLOCKS - 1]).toBe(true);
    expect(kept[0]).toBe(false);
  });

  it('does not keep a block that alone would take a sixteenth of the cache', () => {
    const cache = new StraddleCache();
    cache.put(summary, 0, wide(0, 1024));
    expect(cache.get(summary, 0, 64, [0])).toBeUndefined();
    expect(cache.bytes).toBe(0);
    cache.put(summary, 1, wide(1, 4));
    expect(cache.get(summary, 1, 128, [0])).toBeDefined();
    expect(cache.bytes).toBe(64 * 5 * 8);
  });
});

describe('straddle cache slabs', () => {
  const summary = new SegmentSummary(1, 6, 100_000);
  /** A block of 64 records in 4 columns whose values the cache allocated. */
  const fromSlab = (cache: StraddleCache, k: number) => ({
    lastId: 64 * (k + 1),
    count: 64,
    columns: [0, 1, 2, 3],
    values: cache.allocate(64 * 5),
    others: [],
  });
  const SLAB_BYTES = 256 * 1024;

  it('counts a slab once while a cached block lies in it, and lets it go with its last block', () => {
    const cache = new StraddleCache();
    const first = fromSlab(cache, 0);
    expect(first.values.every((v) => v === 0)).toBe(true);
    cache.put(summary, 0, first);
    expect(cache.bytes).toBe(SLAB_BYTES);
    cache.put(summary, 1, fromSlab(cache, 1));
    expect(cache.bytes).toBe(SLAB_BYTES); // the same slab
    expect(first.values.buffer).toBe(cache.get(summary, 1, 128, [0])?.[0].values.buffer);
    // Replacing both blocks (decoded again for more columns would keep them; a new record count does not).
    cache.put(summary, 0, { ...fromSlab(cache, 0), count: 63, values: new Float64Array(63 * 5) });
    expect(cache.bytes).toBe(SLAB_BYTES + 63 * 5 * 8);
    cache.put(summary, 1, { ...fromSlab(cache, 1), count: 63, values: new Float64Array(63 * 5) });
    expect(cache.bytes).toBe(2 * 63 * 5 * 8); // no cached block lies in the slab any more
  });

  it('stays within STRADDLE_CACHE_BYTES_MAX over many slabs, least recently used first out', () => {
    const cache = new StraddleCache();
    let heldMax = 0;
    const blocks = 4 * STRADDLE_CACHE_BLOCKS;
    for (let k = 0; k < blocks; k++) {
      cache.put(summary, k, fromSlab(cache, k));
      if (k % 7 === 0) cache.get(summary, 0, 64, [0]); // block 0 stays in use, and keeps its slab
      heldMax = Math.max(heldMax, cache.bytes);
    }
    expect(heldMax).toBeLessThanOrEqual(STRADDLE_CACHE_BYTES_MAX);
    expect(cache.get(summary, 0, 64, [0])).toBeDefined();
    expect(cache.get(summary, blocks - 1, 64 * blocks, [0])).toBeDefined();
    expect(cache.get(summary, blocks / 2, 64 * (blocks / 2 + 1), [0])).toBeUndefined();
  });
});

describe('straddle cache admission', () => {
  it('keeps a block read a second time for the same interval, and remembers a bounded number read once', () => {
    const cache = new StraddleCache();
    const summary = new SegmentSummary(1, 6, 100_000);
    expect(cache.admit(summary, 7, 60_000)).toBe(false);
    expect(cache.admit(summary, 7, 61_000)).toBe(false); // another interval crossed the same block
    expect(cache.admit(summary, 7, 61_000)).toBe(true);
    expect(cache.admit(summary, 7, 61_000)).toBe(false); // kept since: a later read starts over
    expect(cache.admit(summary, 8, 60_000)).toBe(false);
    for (let k = 0; k < STRADDLE_SEEN_BLOCKS_MAX; k++) cache.admit(summary, 10_000 + k, 60_000);
    expect(cache.admit(summary, 8, 60_000)).toBe(false); // forgotten when the record started over
    expect(cache.admit(summary, 10_000 + STRADDLE_SEEN_BLOCKS_MAX - 1, 60_000)).toBe(true);
  });

  it('keeps nothing of a one-off interval, and the edge blocks of an interval asked again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 8192 });
    const log = await openModel(store);
    for (let i = 0; i < 2000; i++) {
      vi.setSystemTime(T0 + i * 97);
      log.save(rec(i));
    }
    await log.durable();
    const q = { fromMs: T0, toMs: T0 + 2000 * 97, fields: ['temp'] };
    expect((await log.aggregate({ ...q, intervalMs: 86_400_000 }))[0].count).toBe(2000); // summaries built
    const before = straddleCache.bytes;
    const once = await log.aggregate({ ...q, intervalMs: 7001 });
    expect((await log.aggregate({ ...q, intervalMs: 7013 })).reduce((n, b) => n + b.count, 0)).toBe(2000);
    expect(straddleCache.bytes).toBe(before); // about 28 edge blocks each time, none kept
    expect(await log.aggregate({ ...q, intervalMs: 7001 })).toEqual(once);
    expect(straddleCache.bytes).toBeGreaterThan(before); // read a second time for 7001: kept
    expect(await log.aggregate({ ...q, intervalMs: 7001 })).toEqual(once);
    await store.close();
    vi.useRealTimers();
  });
});
