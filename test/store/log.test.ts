import { afterEach, describe, expect, it } from 'vitest';
import { FIELDS, allIds, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import { InvalidArgumentError, PayloadTooLargeError } from '../../src/errors.js';

afterEach(removeTmpDirs);

async function pageIds(log: ModelLog, current: number, size: number, order: 'asc' | 'desc'): Promise<number[]> {
  return (await log.page({ current, size, order, select: ['id'] })).records.map((r) => r.id as number);
}

/** Expected ids of a page by the contract, for ids firstId..lastId. */
function expected(firstId: number, lastId: number, current: number, size: number, order: 'asc' | 'desc'): number[] {
  if (order === 'asc') {
    const lo = firstId + (current - 1) * size;
    return range(lo, Math.min(lastId, lo + size - 1));
  }
  const hi = lastId - (current - 1) * size;
  return range(Math.max(firstId, hi - size + 1), hi).reverse();
}

async function checkAllPages(log: ModelLog, firstId: number, lastId: number): Promise<void> {
  const total = lastId - firstId + 1;
  for (const size of [1, 7, 64, 65, 1000]) {
    const pages = Math.ceil(total / size) + 1;
    for (const order of ['asc', 'desc'] as const) {
      for (let p = 1; p <= pages; p++) {
        expect(await pageIds(log, p, size, order), `size ${size} page ${p} ${order}`).toEqual(expected(firstId, lastId, p, size, order));
      }
    }
  }
  expect((await log.page({ current: 1, size: 10, order: 'asc' })).total).toBe(total);
}

describe('ModelLog writes and reads', () => {
  it('answers latest() for many distinct projections while keeping its cache bounded', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    log.save(rec(1));
    const full = log.latest()!;
    const selects: string[][] = [];
    const names = ['id', 'create_at', ...FIELDS];
    for (let mask = 1; mask < 1 << names.length; mask++) selects.push(names.filter((_, i) => mask & (1 << i)));
    expect(selects.length).toBeGreaterThan(64);
    expect(() => log.latest('temp' as unknown as string[])).toThrow(InvalidArgumentError);
    for (const select of [...selects, ...selects]) {
      const view = log.latest(select)!;
      expect(Object.keys(view)).toEqual(select);
      for (const k of select) expect(view[k]).toEqual(full[k]);
    }
    await store.close();
  });

  it('assigns contiguous ids and non-decreasing timestamps, and serves unflushed records', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    for (let i = 1; i <= 50; i++) expect(log.save(rec(i))).toBe(i);
    const page = await log.page({ current: 1, size: 50, order: 'asc' });
    expect(page.records.map((r) => r.id)).toEqual(range(1, 50));
    for (let i = 1; i < 50; i++) expect(page.records[i].create_at as number).toBeGreaterThanOrEqual(page.records[i - 1].create_at as number);
    expect(Object.keys(page.records[0])).toEqual(['id', 'create_at', ...FIELDS]);
    expect(page.records[4]).toMatchObject(rec(5));
    await store.close();
  });

  it('pages at every boundary across many tiny segments, both orders', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 600 });
    const log = await openModel(store);
    for (let i = 1; i <= 777; i++) log.save(rec(i));
    await checkAllPages(log, 1, 777);
    await log.durable();
    expect(segFiles(`${dir}/m`).length).toBeGreaterThan(50);
    await checkAllPages(log, 1, 777);
    await store.close();
    const again = await openStore(dir, { segmentBytesMax: 600 });
    const log2 = await openModel(again);
    expect(log2.recovery.clean).toBe(true);
    expect(log2.recovery.scannedBytes).toBe(0);
    await checkAllPages(log2, 1, 777);
    await again.close();
  });

  it('projects select in canonical order and rejects unknown names', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    log.save(rec(1));
    const r = (await log.page({ current: 1, size: 1, order: 'desc', select: ['ok', 'create_at', 'temp'] })).records[0];
    expect(Object.keys(r)).toEqual(['create_at', 'temp', 'ok']);
    await expect(log.page({ current: 1, size: 1, order: 'asc', select: ['nope'] })).rejects.toThrow(/nope/);
    await expect(log.page({ current: 1, size: 1001, order: 'asc' })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(log.page({ current: 0, size: 1, order: 'asc' })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(() => log.latest(['bad'])).toThrow(InvalidArgumentError);
    expect(() => log.save({ temp: 'x'.repeat(1024 * 1024 + 1) })).toThrow(PayloadTooLargeError);
    await store.close();
  });

  it('update-last supersedes the newest record everywhere, even across a segment roll', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 400 });
    const log = await openModel(store);
    expect(log.updateLast({ temp: 1 })).toBe(1); // no record yet: creates one
    for (let i = 2; i <= 30; i++) log.save(rec(i));
    const created = log.latest()?.create_at;
    for (let k = 0; k < 40; k++) expect(log.updateLast({ hum: 1000 + k })).toBe(30);
    expect(log.latest()).toMatchObject({ id: 30, create_at: created, hum: 1039, seq: 30 });
    expect(log.latest(['hum'])).toEqual({ hum: 1039 });
    expect(() => log.updateLast({ nope: 1 })).toThrow(/nope/);
    await log.durable();
    for (let k = 0; k < 40; k++) log.updateLast({ hum: 2000 + k }); // now on disk: new frames, rolls
    await checkAllPages(log, 1, 30);
    const desc = await log.page({ current: 1, size: 2, order: 'desc' });
    expect(desc.records.map((r) => [r.id, r.hum])).toEqual([[30, 2039], [29, 29]]);
    expect(await allIds(log)).toEqual(range(1, 30));
    await store.close();
    const log2 = await openModel(await openStore(dir, { segmentBytesMax: 400 }));
    expect(log2.latest()).toMatchObject({ id: 30, hum: 2039, create_at: created });
    expect(await allIds(log2)).toEqual(range(1, 30));
    expect(log2.save(rec(31))).toBe(31);
  });

  // Cheap because cached: a call builds nothing, whole or projected. How fast a call is, is a figure of
  // `npm run bench:store` ("latest read", target < 1,000 ns), not a test: a busy machine stretches any timing.
  it('latest is cached and cheap', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    expect(log.latest()).toBeUndefined();
    log.save(rec(1));
    const a = log.latest();
    expect(log.latest()).toBe(a);
    const projected = log.latest(['temp']);
    expect(projected).toEqual({ temp: a?.temp });
    for (let i = 0; i < 1000; i++) expect(log.latest(['temp'])).toBe(projected);
    log.save(rec(2));
    expect(log.latest()).not.toBe(a);
    expect(log.latest()?.id).toBe(2);
    expect(log.latest(['temp'])).not.toBe(projected);
    expect(log.latest(['temp'])).toEqual({ temp: log.latest()?.temp });
    await store.close();
  });

  it('iterates a consistent snapshot while writes, retention and clear continue', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 4000 });
    const log = await openModel(store);
    for (let i = 1; i <= 3000; i++) log.save(rec(i));
    await log.durable();
    const it = log.iterate({ fromId: 10, toId: 2500, select: ['id', 'seq'] });
    const seen: number[] = [];
    for await (const r of it) {
      expect(r.seq).toBe(r.id);
      seen.push(r.id as number);
      if (seen.length === 5) {
        for (let i = 0; i < 500; i++) log.save(rec(3000 + i));
        log.setRetention({ maxRecords: 100, maxBytes: 0, maxAgeMs: 0 });
        await log.enforceRetention();
      }
      if (seen.length === 1500) await log.clear();
    }
    expect(seen).toEqual(range(10, 2500));
    await store.close();
  });

  it('a retention change while a pass runs applies the new limits: the pass under way does not stand for it', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 1000 });
    const log = await openModel(store);
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    await log.durable();
    const underWay = log.enforceRetention();
    log.setRetention({ maxRecords: 300, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    await underWay;
    expect(log.stats().total).toBeLessThanOrEqual(300);
    await store.close();
  });

  it('retention removes whole head segments; pages are relative to the first live id', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 1000 });
    const log = await openModel(store);
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    await log.durable();
    log.setRetention({ maxRecords: 300, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    const s = log.stats();
    expect(s.total).toBeLessThanOrEqual(300);
    expect(s.total).toBeGreaterThan(250);
    expect(s.lastId).toBe(1000);
    await checkAllPages(log, s.firstId, 1000);
    expect(await allIds(log)).toEqual(range(s.firstId, 1000));
    log.setRetention({ maxRecords: 0, maxBytes: 0, maxAgeMs: 1 });
    await log.enforceRetention(Date.now() + 10_000);
    expect(log.stats().segments).toBe(1);
    log.setRetention({ maxRecords: 0, maxBytes: 3000, maxAgeMs: 0 });
    for (let i = 1001; i <= 1200; i++) log.save(rec(i));
    await log.durable();
    await log.enforceRetention();
    expect(log.stats().bytes).toBeLessThanOrEqual(3000);
    const first = log.stats().firstId;
    await store.close();
    const log2 = await openModel(await openStore(dir, { segmentBytesMax: 1000 }));
    expect(log2.stats().firstId).toBe(first);
    expect(await allIds(log2)).toEqual(range(first, 1200));
  });

  it('a page has a byte budget as well as a record budget; exports of wide records go in smaller chunks', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 2 * 1024 * 1024 });
    const log = await store.openModel('wide', { fields: ['blob', 'n'] });
    const blob = 'x'.repeat(100_000);
    for (let i = 1; i <= 200; i++) log.save({ blob, n: i });
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(5);
    await expect(log.page({ current: 1, size: 1000, order: 'desc' })).rejects.toThrow(/^size: a page of 1000 records here reads 20 MiB/);
    expect((await log.page({ current: 1, size: 50, order: 'asc' })).records.map((r) => r.n)).toEqual(range(1, 50));
    expect((await log.page({ current: 3, size: 1, order: 'asc', select: ['n'] })).records).toEqual([{ n: 3 }]);
    const ns: number[] = [];
    for await (const r of log.iterate({ select: ['n'] })) ns.push(r.n as number);
    expect(ns).toEqual(range(1, 200));
    await store.close();
  });

  it('clear deletes everything and ids restart at 1, also after reopen', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 500 });
    const log = await openModel(store);
    for (let i = 1; i <= 200; i++) log.save(rec(i));
    await log.clear();
    expect(log.stats()).toMatchObject({ total: 0, firstId: 1, lastId: 0, segments: 1 });
    expect(log.latest()).toBeUndefined();
    expect((await log.page({ current: 1, size: 10, order: 'desc' })).records).toEqual([]);
    for (let i = 1; i <= 40; i++) expect(log.save(rec(i))).toBe(i);
    await checkAllPages(log, 1, 40);
    await store.close();
    const log2 = await openModel(await openStore(dir, { segmentBytesMax: 500 }));
    expect(await allIds(log2)).toEqual(range(1, 40));
    expect(log2.save(rec(41))).toBe(41);
  });

  it('drops a model idempotently and opens a fresh one under the same id', async () => {
    const dir = tmpDir();
    const store = await openStore(dir);
    const log = await openModel(store, 'x');
    log.save(rec(1));
    await store.dropModel('x');
    await store.dropModel('x');
    expect(store.model('x')).toBeUndefined();
    const again = await store.openModel('x', { fields: ['a'] });
    expect(again.stats().total).toBe(0);
    expect(await store.openModel('x', { fields: ['a'] })).toBe(again);
    await expect(store.openModel('x', { fields: ['b'] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await expect(store.openModel('../x', { fields: ['a'] })).rejects.toBeInstanceOf(InvalidArgumentError);
    await store.close();
  });
});
