/**
 * Under sync = always the writer writes zeros ahead of the active segment's frames (PREALLOCATE_BYTES),
 * so its fdatasyncs do not commit a size change. The file then no longer ends at its last frame:
 * recovery finds the end by the frames' CRCs, seals and a clean close trim the zeros, and crashes at any
 * point of a preallocating write leave a log that is a prefix of what was written.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeFileIo } from '../../src/store/base/file-io.js';
import { PREALLOCATE_BYTES } from '../../src/store/base/constants.js';
import { readIndexSync } from '../../src/store/segment/index-file.js';
import { allIds, frameBytesOf, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

/** End of the last frame of a segment file, walking the length words up to the first zero one. */
function framesEnd(file: string): number {
  const b = fs.readFileSync(file);
  let off = 32;
  while (off + 8 <= b.length && b.readUInt32LE(off) > 0) off += b.readUInt32LE(off) + 8;
  return off;
}

function isZero(file: string, from: number): boolean {
  return fs.readFileSync(file).subarray(from).every((x) => x === 0);
}

/** Calls `onAhead` after each segment writev that carried zeros ahead (`n`: its number, from 1). */
class AheadIo extends NodeFileIo {
  aheadWrites = 0;
  /** Bytes a writev with zeros ahead reports written: all of them when undefined (else a short count). */
  reportAhead: ((dataBytes: number) => number) | undefined;

  constructor(private readonly onAhead: (n: number, fd: number, pos: number, dataBytes: number) => void = () => {}) {
    super();
  }

  override async writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    const data = frameBytesOf(bufs);
    const total = bufs.reduce((s, b) => s + b.length, 0);
    if (data === total) return super.writev(fd, bufs, pos);
    this.aheadWrites++;
    const n = this.reportAhead?.(data) ?? total;
    const written = await super.writev(fd, n === total ? bufs : [Buffer.concat(bufs).subarray(0, n)], pos);
    this.onAhead(this.aheadWrites, fd, pos, data);
    return written;
  }
}

describe('preallocation (sync = always)', () => {
  it('zeros follow the frames of the active file; a clean close trims them and the next open is clean', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always' });
    const log = await openModel(store);
    for (let i = 1; i <= 100; i++) log.save(rec(i));
    await log.durable();
    const file = path.join(dir, 'm', segFiles(path.join(dir, 'm'))[0]);
    const bytes = log.stats().bytes;
    expect(framesEnd(file)).toBe(bytes);
    expect(fs.statSync(file).size).toBeGreaterThanOrEqual(bytes + PREALLOCATE_BYTES - 1);
    expect(isZero(file, bytes)).toBe(true);
    await store.close();
    expect(fs.statSync(file).size).toBe(bytes);
    const again = await openStore(dir, { durability: 'always' });
    const log2 = await openModel(again);
    expect(log2.recovery).toMatchObject({ clean: true, scannedBytes: 0, truncatedBytes: 0, lostRanges: [] });
    expect(await allIds(log2)).toEqual(range(1, 100));
    await again.close();
  });

  it.each(['none', 'interval'] as const)('sync = %s writes no zeros ahead', async (durability) => {
    const dir = tmpDir();
    const store = await openStore(dir, { durability });
    const log = await openModel(store);
    for (let i = 1; i <= 100; i++) log.save(rec(i));
    await log.durable();
    await log.checkpoint();
    expect(fs.statSync(path.join(dir, 'm', segFiles(path.join(dir, 'm'))[0])).size).toBe(log.stats().bytes);
    await store.close();
  });

  it('after a kill the zero tail is cut, not reported, and the next records follow the last frame', async () => {
    const dir = tmpDir();
    let store = await openStore(dir, { durability: 'always' });
    let log = await openModel(store);
    for (let i = 1; i <= 50; i++) log.save(rec(i));
    await log.durable();
    const file = path.join(dir, 'm', segFiles(path.join(dir, 'm'))[0]);
    const bytes = log.stats().bytes;
    await store.abandon();
    expect(fs.statSync(file).size).toBeGreaterThan(bytes);

    store = await openStore(dir, { durability: 'always' });
    log = await openModel(store);
    expect(log.recovery).toMatchObject({ clean: false, truncatedBytes: 0, lostRanges: [] });
    expect(fs.statSync(file).size).toBe(bytes);
    expect(await allIds(log)).toEqual(range(1, 50));
    for (let i = 51; i <= 60; i++) log.save(rec(i));
    await log.durable();
    await store.abandon();

    store = await openStore(dir, { durability: 'always' });
    log = await openModel(store);
    expect(log.recovery).toMatchObject({ truncatedBytes: 0, lostRanges: [] });
    expect(await allIds(log)).toEqual(range(1, 60));
    expect((await log.page({ current: 1, size: 100, order: 'asc' })).records.map((r) => r.seq)).toEqual(range(1, 60));
    await store.close();
  });

  it('a seal trims its file: sealed segments end at their last frame, and their indexes are adopted after a kill', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always', segmentBytesMax: 4096 });
    const log = await openModel(store);
    for (let i = 1; i <= 300; i++) {
      log.save(rec(i));
      if (i % 7 === 0) await log.durable();
    }
    await log.durable();
    await store.abandon();
    const mdir = path.join(dir, 'm');
    const files = segFiles(mdir);
    expect(files.length).toBeGreaterThan(3);
    for (const name of files.slice(0, -1)) {
      const size = fs.statSync(path.join(mdir, name)).size;
      expect(framesEnd(path.join(mdir, name)), name).toBe(size);
      expect(readIndexSync(mdir, Number(name.slice(4, 14)))?.dataEnd, name).toBe(size);
    }
    const again = await openStore(dir, { durability: 'always', segmentBytesMax: 4096 });
    const log2 = await openModel(again);
    expect(log2.recovery).toMatchObject({ rebuiltIndexes: 0, truncatedBytes: 0, lostRanges: [] });
    expect(await allIds(log2)).toEqual(range(1, 300));
    await again.close();
  });

  /**
   * A crash during the write that preallocates: the disk may keep the new size and zeros without the
   * frames (their pages were never written back), or the frames with only part of the zeros.
   */
  describe('a crash while preallocating', () => {
    /** Writes until the first writev with zeros ahead that `when` picks, whose state `crash` turns into a crashed copy. */
    async function crashAt(
      when: (nth: number, pos: number) => boolean,
      segmentBytesMax: number,
      crash: (file: string, pos: number, dataBytes: number) => void,
    ): Promise<{ copy: string; durableIds: number }> {
      const dir = tmpDir();
      const copy = tmpDir();
      let crashed = false;
      const io = new AheadIo((n, fd, pos, dataBytes) => {
        if (crashed || !when(n, pos)) return;
        fs.cpSync(dir, copy, { recursive: true });
        fs.rmSync(path.join(copy, '.lock'), { force: true });
        crash(path.join(copy, 'm', path.basename(fs.readlinkSync(`/proc/self/fd/${fd}`))), pos, dataBytes);
        crashed = true;
      });
      const store = await openStore(dir, { durability: 'always', segmentBytesMax }, { fileIo: io });
      const log = await openModel(store);
      let durableIds = 0;
      let id = 0;
      while (!crashed) {
        for (let k = 0; k < 200; k++) id = log.save(rec(id + 1));
        const before = crashed;
        await log.durable();
        if (!before && !crashed) durableIds = id;
      }
      await store.close();
      return { copy, durableIds };
    }

    async function reopen(
      copy: string,
      segmentBytesMax: number,
    ): Promise<{ ids: number[]; truncatedBytes: number; lostFrom: number[]; close: () => Promise<void> }> {
      const store = await openStore(copy, { durability: 'always', segmentBytesMax });
      const log = await openModel(store);
      const ids = await allIds(log);
      // Writes go on after the recovered end.
      const next = log.save(rec(ids.length + 1));
      await log.durable();
      expect(await allIds(log)).toEqual([...ids, next]);
      const lostFrom = log.recovery.lostRanges.map((l) => l.fromId);
      return { ids, truncatedBytes: log.recovery.truncatedBytes, lostFrom, close: () => store.close() };
    }

    it('the new size and zeros reached the disk, the frames did not: the log ends at the last synced frame', async () => {
      // The second preallocation of one segment: about 1 MiB of records synced before it.
      const { copy, durableIds } = await crashAt((n) => n === 2, 32 * 1024 * 1024, (file, pos, dataBytes) => {
        const fd = fs.openSync(file, 'r+');
        fs.writeSync(fd, Buffer.alloc(dataBytes), 0, dataBytes, pos);
        fs.closeSync(fd);
      });
      expect(durableIds).toBeGreaterThan(10_000);
      const r = await reopen(copy, 32 * 1024 * 1024);
      expect(r.ids.length).toBeGreaterThanOrEqual(durableIds);
      expect(r.ids).toEqual(range(1, r.ids.length));
      expect(r.truncatedBytes).toBe(0);
      expect(r.lostFrom.every((id) => id > durableIds)).toBe(true);
      await r.close();
    });

    it('the frames reached the disk with half of the zeros: every frame is kept', async () => {
      const { copy, durableIds } = await crashAt((n) => n === 2, 32 * 1024 * 1024, (file, pos, dataBytes) => {
        fs.truncateSync(file, pos + dataBytes + (fs.statSync(file).size - pos - dataBytes) / 2);
      });
      const r = await reopen(copy, 32 * 1024 * 1024);
      expect(r.ids.length).toBeGreaterThan(durableIds);
      expect(r.ids).toEqual(range(1, r.ids.length));
      expect(r.truncatedBytes).toBe(0);
      await r.close();
    });

    it('the first write of a new segment kept only its zeros: the segment is dropped, its ids reported lost', async () => {
      const { copy, durableIds } = await crashAt((n, pos) => n > 2 && pos === 32, 8192, (file, pos, dataBytes) => {
        const fd = fs.openSync(file, 'r+');
        fs.writeSync(fd, Buffer.alloc(dataBytes), 0, dataBytes, pos);
        fs.closeSync(fd);
      });
      const r = await reopen(copy, 8192);
      expect(r.ids.length).toBeGreaterThanOrEqual(durableIds);
      expect(r.ids).toEqual(range(1, r.ids.length));
      expect(r.truncatedBytes).toBe(0);
      // Its ids were handed out, never durable: reported lost, and never handed out again.
      expect(r.lostFrom).toEqual([r.ids.length + 1]);
      await r.close();
    });
  });

  it('no room for the zeros (a short count inside them): the frames are written, the model stays writable', async () => {
    const dir = tmpDir();
    const io = new AheadIo();
    io.reportAhead = (dataBytes) => dataBytes + 100;
    const store = await openStore(dir, { durability: 'always' }, { fileIo: io });
    const log = await openModel(store);
    for (let round = 0; round < 5; round++) {
      for (let i = 1; i <= 20; i++) log.save(rec(round * 20 + i));
      await log.durable();
    }
    expect(log.state).toBe('ok');
    // Each write found the file ending before its data and tried again.
    expect(io.aheadWrites).toBe(5);
    await store.abandon();
    const again = await openStore(dir, { durability: 'always' });
    const log2 = await openModel(again);
    expect(await allIds(log2)).toEqual(range(1, 100));
    expect(log2.recovery).toMatchObject({ truncatedBytes: 0, lostRanges: [] });
    await again.close();
  });
});
