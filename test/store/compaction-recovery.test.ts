/**
 * Crashes around a compaction and damage to `.zlog` files (docs/storage-format.md "Compacted segments";
 * the `.log` cases are in corruption.test.ts).
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ChunkTable, readChunkTableSync, readColumnsSync } from '../../src/store/format/zlog.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import { allIds, openModel, openStore, range, rec, removeTmpDirs, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

const SEGMENT_BYTES = 8 * 1024;
const compacting = { segmentBytesMax: SEGMENT_BYTES, compactSealed: true } as const;
const RECORDS = 2000;

function names(dir: string, ext: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith(ext)).sort();
}

/** A model with RECORDS records in compacted sealed segments (closed), and a copy of its `.log`s from before. */
async function compactedModel(): Promise<{ dir: string; mdir: string; logs: string }> {
  const dir = tmpDir();
  const mdir = `${dir}/m`;
  let store = await openStore(dir, { segmentBytesMax: SEGMENT_BYTES });
  const log = await openModel(store);
  for (let i = 1; i <= RECORDS; i++) log.save(rec(i));
  await store.close();
  const logs = tmpDir();
  for (const n of names(mdir, '.log')) fs.copyFileSync(`${mdir}/${n}`, `${logs}/${n}`);
  store = await openStore(dir, compacting);
  await (await openModel(store)).compactionIdle();
  await store.close();
  expect(names(mdir, '.zlog').length).toBeGreaterThan(5);
  return { dir, mdir, logs };
}

async function reopen(dir: string): Promise<{ log: ModelLog; close: () => Promise<void> }> {
  const store = await openStore(dir, { segmentBytesMax: SEGMENT_BYTES });
  return { log: await openModel(store), close: () => store.close() };
}

/** Where chunk k of a `.zlog` starts, from its table. */
function chunkOffset(file: string, k: number): number {
  const b = fs.readFileSync(file);
  const tableOffset = b.readUInt32LE(48);
  return b.readUInt32LE(tableOffset + 8 * k + 4);
}

/** Sum of the ids 1..records that a read of every record no longer finds. */
async function lostSeqSum(log: ModelLog, records: number): Promise<number> {
  const found = new Set(await allIds(log));
  return range(1, records).filter((id) => !found.has(id)).reduce((n, id) => n + id, 0);
}

function flipByte(file: string, at: number): void {
  const fd = fs.openSync(file, 'r+');
  const b = Buffer.alloc(1);
  fs.readSync(fd, b, 0, 1, at);
  b[0] ^= 0x5a;
  fs.writeSync(fd, b, 0, 1, at);
  fs.closeSync(fd);
}

describe('compaction: crashes', () => {
  it('a crash after the rename of a .zlog and before the unlink of its .log: the .zlog is kept, the .log removed', async () => {
    const { dir, mdir, logs } = await compactedModel();
    const z = names(mdir, '.zlog')[2];
    const log = z.replace('.zlog', '.log');
    fs.copyFileSync(`${logs}/${log}`, `${mdir}/${log}`);
    const { log: m, close } = await reopen(dir);
    expect(fs.existsSync(`${mdir}/${log}`)).toBe(false);
    expect(fs.existsSync(`${mdir}/${z}`)).toBe(true);
    expect(await allIds(m)).toEqual(range(1, RECORDS));
    expect(m.findings()).toBeUndefined();
    await close();
  });

  it('a crash before the rename leaves a .zlog.tmp: removed, the .log serves', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: SEGMENT_BYTES });
    const log = await openModel(store);
    for (let i = 1; i <= RECORDS; i++) log.save(rec(i));
    await store.close();
    const first = names(`${dir}/m`, '.log')[0];
    fs.writeFileSync(`${dir}/m/${first.replace('.log', '.zlog.tmp')}`, Buffer.alloc(500, 7));
    const { log: m, close } = await reopen(dir);
    expect(names(`${dir}/m`, '.tmp')).toEqual([]);
    expect(await allIds(m)).toEqual(range(1, RECORDS));
    await close();
  });

  it('a .zlog that became the last segment (the active one was lost) is a .log again, and writing goes on', async () => {
    const { dir, mdir } = await compactedModel();
    // The active segment and the newest sealed one (kept as written) are lost, so a .zlog is last.
    const logs = names(mdir, '.log');
    expect(logs).toHaveLength(2);
    for (const n of logs) {
      fs.rmSync(`${mdir}/${n}`);
      fs.rmSync(`${mdir}/${n.replace('.log', '.idx')}`, { force: true });
    }
    const lastZ = names(mdir, '.zlog').at(-1) as string;
    const { log: m, close } = await reopen(dir);
    expect(fs.existsSync(`${mdir}/${lastZ.replace('.zlog', '.log')}`)).toBe(true);
    const ids = await allIds(m);
    expect(ids.length).toBeGreaterThan(RECORDS / 2);
    expect(ids).toEqual(range(1, ids.length));
    const id = m.save(rec(0));
    expect(id).toBeGreaterThan(ids.length);
    m.updateLast({ status: 'after' });
    expect(m.latest()?.status).toBe('after');
    await close();
  });

  it('a .zlog without its .idx is a .log again, scanned, and reads the same', async () => {
    const { dir, mdir } = await compactedModel();
    const z = names(mdir, '.zlog')[1];
    fs.rmSync(`${mdir}/${z.replace('.zlog', '.idx')}`);
    const { log: m, close } = await reopen(dir);
    expect(fs.existsSync(`${mdir}/${z.replace('.zlog', '.log')}`)).toBe(true);
    expect(await allIds(m)).toEqual(range(1, RECORDS));
    expect(m.findings()).toBeUndefined();
    await close();
  });
});

describe('compaction: damaged .zlog files', () => {
  it('a flipped byte in a chunk loses that chunk only: its ids are skipped on read and reported', async () => {
    const { dir, mdir } = await compactedModel();
    const z = `${mdir}/${names(mdir, '.zlog')[1]}`;
    flipByte(z, chunkOffset(z, 1) + 24 + 3);
    const { log: m, close } = await reopen(dir);
    const ids = await allIds(m);
    const lost = RECORDS - ids.length;
    expect(lost).toBeGreaterThan(0);
    expect(lost).toBeLessThanOrEqual(64);
    expect(m.findings()?.lostIds).toBe(lost);
    expect(m.findings()?.lostRanges).toEqual([{ fromId: expect.any(Number), toId: expect.any(Number) }]);
    await close();
  });

  it('a flipped byte in a chunk: an aggregation reads the other chunks from their columns and reports the lost ids', async () => {
    const dir = tmpDir();
    const mdir = `${dir}/m`;
    const T0 = Date.UTC(2026, 0, 1);
    vi.useFakeTimers({ toFake: ['Date'] });
    let store = await openStore(dir, compacting);
    const log = await openModel(store);
    for (let i = 1; i <= RECORDS; i++) {
      vi.setSystemTime(T0 + 1000 * i);
      log.save(rec(i));
    }
    vi.useRealTimers();
    await log.durable();
    await log.compactionIdle();
    await store.close();
    const z = `${mdir}/${names(mdir, '.zlog')[1]}`;
    const t = readChunkTableSync(fs.openSync(z, 'r'), fs.statSync(z).size) as ChunkTable;
    const frames = (): { ok: boolean; ids: number[] } => {
      const fd = fs.openSync(z, 'r');
      const ids: number[] = [];
      const sink = { frame: (id: number) => ids.push(id) - 1, setNumber: () => undefined, setOther: () => undefined };
      const ok = readColumnsSync(fd, t, t.logicalStarts[1], t.logicalStarts[2] - t.logicalStarts[1], [0, 1], sink);
      fs.closeSync(fd);
      return { ok, ids };
    };
    expect(frames().ok).toBe(true);
    expect(frames().ids.length).toBeGreaterThan(10);
    flipByte(z, chunkOffset(z, 1) + 24 + 3);
    expect(frames().ok).toBe(false);

    store = await openStore(dir, compacting);
    const m = await openModel(store);
    // 7 s buckets against 64 s blocks: every block straddles, so every block is read record by record.
    const buckets = await m.aggregate({ fields: ['temp', 'seq'], fromMs: T0, toMs: T0 + 1000 * (RECORDS + 1), intervalMs: 7_000 });
    const counted = buckets.reduce((n, b) => n + b.count, 0);
    expect(counted).toBeLessThan(RECORDS);
    expect(counted).toBeGreaterThanOrEqual(RECORDS - 64);
    expect(m.findings()?.lostIds).toBe(RECORDS - counted);
    expect(buckets.reduce((n, b) => n + (b.stats[1].sum), 0)).toBe((RECORDS * (RECORDS + 1)) / 2 - (await lostSeqSum(m, RECORDS)));
    await store.close();
  });

  it('a flipped byte in the chunk table or the header: the chunks are found by their heads, nothing is lost', async () => {
    for (const where of ['table', 'header'] as const) {
      const { dir, mdir } = await compactedModel();
      const z = `${mdir}/${names(mdir, '.zlog')[0]}`;
      const b = fs.readFileSync(z);
      flipByte(z, where === 'table' ? b.readUInt32LE(48) + 5 : 40);
      const { log: m, close } = await reopen(dir);
      expect(await allIds(m), where).toEqual(range(1, RECORDS));
      expect(m.findings(), where).toBeUndefined();
      await close();
    }
  });

  it('a .zlog cut short keeps the chunks before the cut; the ids after it are reported lost', async () => {
    const { dir, mdir } = await compactedModel();
    const z = `${mdir}/${names(mdir, '.zlog')[1]}`;
    fs.truncateSync(z, chunkOffset(z, 1) + 10);
    const { log: m, close } = await reopen(dir);
    const ids = await allIds(m);
    expect(ids.length).toBeLessThan(RECORDS);
    expect(ids.length).toBeGreaterThan(RECORDS / 2);
    expect(m.findings()?.lostIds).toBe(RECORDS - ids.length);
    await close();
  });
});
