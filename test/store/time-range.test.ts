/**
 * Time ranges on pages (contract 10): [fromMs, toMs) maps to ids by a binary search over the segments and
 * their offset index, across sealed (sparse) and active (dense) segments, update-last, corruption, clear
 * and retention, and with the one documented exception of a large backward clock step.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { FaultyIo, frameOffsets, openModel, openStore, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';
import type { ModelLog } from '../../src/store/log/model-log.js';

afterAll(removeTmpDirs);
afterEach(() => vi.useRealTimers());

const T0 = Date.parse('2026-11-23T00:00:00Z');

/** Saves n records stamped T0 + i * stepMs (i = 0..n-1). */
function fill(log: ModelLog, n: number, stepMs: number, start = 0): void {
  for (let i = start; i < start + n; i++) {
    vi.setSystemTime(T0 + i * stepMs);
    log.save(rec(i));
  }
}

async function idsIn(log: ModelLog, fromMs?: number, toMs?: number, order: 'asc' | 'desc' = 'asc'): Promise<{ total: number; ids: number[] }> {
  const page = await log.page({ current: 1, size: 1000, order, select: ['id'], fromMs, toMs });
  return { total: page.total, ids: page.records.map((r) => r.id as number) };
}

describe('time ranges on pages', () => {
  it('maps [from, to) to ids exactly, in sealed and active segments, with equal timestamps', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 4096 });
    const log = await openModel(store);
    // 3 records per second: equal create_at within each second.
    fill(log, 900, 1000 / 3);
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(5);
    const stamp = (id: number): number => T0 + Math.floor(((id - 1) * 1000) / 3);
    for (const [from, to] of [
      [T0, T0 + 1000],
      [T0 + 1000, T0 + 1001],
      [T0 + 12_345, T0 + 200_000],
      [T0 - 50_000, T0 + 10],
      [T0 + 299_000, T0 + 900_000],
      [T0 + 400_000, T0 + 500_000],
    ]) {
      const want: number[] = [];
      for (let id = 1; id <= 900; id++) if (stamp(id) >= from && stamp(id) < to) want.push(id);
      const got = await idsIn(log, from, to);
      expect(got.ids, `[${from - T0}, ${to - T0})`).toEqual(want);
      expect(got.total).toBe(want.length);
    }
    expect((await idsIn(log, T0 + 100_000)).ids[0]).toBe(301);
    expect((await idsIn(log, undefined, T0 + 1000)).ids).toEqual([1, 2, 3]);
    expect((await idsIn(log, T0 + 299_000, undefined, 'desc')).ids.slice(0, 2)).toEqual([900, 899]);
    await store.close();
  });

  it('pages inside a range count only the range', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 4096 });
    const log = await openModel(store);
    fill(log, 500, 1000);
    const page = await log.page({ current: 2, size: 30, order: 'desc', select: ['id'], fromMs: T0 + 100_000, toMs: T0 + 200_000 });
    expect(page.total).toBe(100);
    expect(page.records.map((r) => r.id)).toEqual(Array.from({ length: 30 }, (_, i) => 170 - i));
    const past = await log.page({ current: 5, size: 30, order: 'asc', select: ['id'], fromMs: T0 + 100_000, toMs: T0 + 200_000 });
    expect(past.records).toEqual([]);
    await store.close();
  });

  it('reads only a few frames per search, not the range', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const io = new (class extends FaultyIo {
      readBytes = 0;
      override read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
        this.readBytes += len;
        return super.read(fd, buf, off, len, pos);
      }
    })();
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: 256 * 1024 });
    let log = await openModel(store);
    fill(log, 20_000, 100);
    await store.close();
    store = await openStore(dir, { segmentBytesMax: 256 * 1024 }, { fileIo: io });
    log = await openModel(store);
    const { ids } = await idsIn(log, T0 + 1_000_000, T0 + 1_000_500);
    expect(ids).toEqual([10_001, 10_002, 10_003, 10_004, 10_005]);
    // Two searches of ~log2(records in a segment) probes, each one frame or a sparse group of 64.
    expect(io.readBytes).toBeLessThan(200 * 1024);
    await store.close();
  });

  it('an updated newest record keeps its time; a range reads its newest version', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048 });
    const log = await openModel(store);
    fill(log, 40, 1000);
    for (let i = 0; i < 50; i++) {
      vi.setSystemTime(T0 + 100_000 + i);
      log.updateLast({ seq: 1000 + i }); // rolls segments on the way, the id then lives in two
    }
    const page = await log.page({ current: 1, size: 10, order: 'asc', select: ['id', 'create_at', 'seq'], fromMs: T0 + 39_000 });
    expect(page.records).toEqual([{ id: 40, create_at: T0 + 39_000, seq: 1049 }]);
    expect((await idsIn(log, T0 + 38_000, T0 + 39_000)).ids).toEqual([39]);
    await store.close();
  });

  it('steps over records lost to corruption', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: 4096 });
    let log = await openModel(store);
    fill(log, 300, 1000);
    await store.close();
    const mdir = path.join(dir, 'm');
    const seg = path.join(mdir, segFiles(mdir)[1]);
    const offs = frameOffsets(seg);
    const b = fs.readFileSync(seg);
    for (const k of [3, 4, 5, 6]) b[offs[k] + 30] ^= 0xff; // payload bytes: CRC mismatch
    fs.writeFileSync(seg, b);
    store = await openStore(dir, { segmentBytesMax: 4096 });
    log = await openModel(store);
    const lostFrom = b.readDoubleLE(12) + 3; // the segment header's first id
    const at = (id: number): number => T0 + (id - 1) * 1000;
    const { ids } = await idsIn(log, at(lostFrom - 2), at(lostFrom + 6));
    expect(ids).toEqual([lostFrom - 2, lostFrom - 1, lostFrom + 4, lostFrom + 5]);
    // A search landing on a lost id finds the next readable one.
    expect((await idsIn(log, at(lostFrom + 1))).ids[0]).toBe(lostFrom + 4);
    await store.close();
  });

  it('after clear and retention a range sees only what is stored', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048 });
    const log = await openModel(store);
    fill(log, 200, 1000);
    await log.durable();
    log.setRetention({ maxRecords: 60, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    const first = log.stats().firstId;
    expect(first).toBeGreaterThan(100);
    expect((await idsIn(log, T0, T0 + 1_000_000)).ids[0]).toBe(first);
    expect((await idsIn(log, T0, T0 + 10_000)).ids).toEqual([]);
    await log.clear();
    expect((await idsIn(log, T0)).ids).toEqual([]);
    fill(log, 3, 1000, 500);
    expect((await idsIn(log, T0 + 501_000)).ids).toEqual([2, 3]);
    await store.close();
  });

  it('after a large backward clock step a recent window finds the records stamped after it', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048, clockJumpMaxMs: 60_000 });
    const log = await openModel(store);
    fill(log, 100, 1000); // T0 .. T0+99 s
    const YEAR = 365 * 86_400_000;
    for (let i = 0; i < 100; i++) {
      vi.setSystemTime(T0 + YEAR + i * 1000); // a wrong clock a year ahead
      log.save(rec(i));
    }
    fill(log, 100, 1000, 200); // corrected: T0+200 s .. T0+299 s
    const { ids } = await idsIn(log, T0 + 250_000, T0 + 260_000);
    expect(ids).toEqual([251, 252, 253, 254, 255, 256, 257, 258, 259, 260]);
    await store.close();
  });
});
