import { afterEach, describe, expect, it, vi } from 'vitest';
import { FaultyIo, allIds, frameBytesOf, openModel, openStore, range, rec, removeTmpDirs, sleep, tmpDir } from './helpers.js';
import { StoreReadOnlyError } from '../../src/errors.js';
import { NodeFileIo, nodeFileIo } from '../../src/store/base/file-io.js';
import { FaultIo } from '../reliability/support/fault-io.js';

/**
 * Real I/O with a slow fdatasync, recording for each one the file end that completed writes had reached
 * when it started: only those bytes may count as durable when it returns. Single segment (offsets).
 */
class PipelineIo extends NodeFileIo {
  /** End offset of the bytes whose writev has completed. */
  writtenEnd = 0;
  /** End offset covered by a completed fdatasync that started after those bytes were written. */
  durableEnd = 0;
  syncInFlight = false;
  /** writev calls issued while an fdatasync was in flight. */
  overlapped = 0;
  syncs = 0;
  rewrites = 0;
  failNextSync: string | undefined;
  readonly log: string[] = [];

  override async writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    if (this.syncInFlight) this.overlapped++;
    this.log.push(`writev@${pos}`);
    // In order and without gaps; below the end only to rewrite after a failed fdatasync.
    if (pos < this.writtenEnd) this.rewrites++;
    else expect(pos).toBe(Math.max(this.writtenEnd, 32));
    const n = await nodeFileIo.writev(fd, bufs, pos);
    this.writtenEnd = Math.max(this.writtenEnd, pos + Math.min(n, frameBytesOf(bufs)));
    return n;
  }

  override async fdatasync(fd: number): Promise<void> {
    expect(this.syncInFlight).toBe(false); // one fdatasync in flight
    this.syncInFlight = true;
    const covered = this.writtenEnd;
    this.log.push(`fdatasync covers ${covered}`);
    try {
      await sleep(3);
      if (this.failNextSync) {
        const code = this.failNextSync;
        this.failNextSync = undefined;
        throw Object.assign(new Error(`injected ${code}`), { code });
      }
      await nodeFileIo.fdatasync(fd);
      this.syncs++;
      this.durableEnd = Math.max(this.durableEnd, covered);
    } finally {
      this.syncInFlight = false;
    }
  }
}

afterEach(removeTmpDirs);

describe('durability modes', () => {
  it('always: concurrent writers share fdatasyncs (group commit)', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'always' }, { fileIo: io });
    const log = await openModel(store);
    const writers = 64;
    const rounds = 20;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let r = 0; r < rounds; r++) {
          const id = log.save(rec(w * 1000 + r));
          await log.durable(id);
          expect(log.stats().pendingSyncBytes).toBeGreaterThanOrEqual(0);
        }
      }),
    );
    expect(log.stats().total).toBe(writers * rounds);
    expect(io.syncs).toBeGreaterThan(0);
    expect(io.syncs).toBeLessThan((writers * rounds) / 8);
    expect(log.stats().pendingSyncBytes).toBe(0);
    await store.close();
  });

  it('always: durable() resolves only after an fdatasync that covers the write', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'always' }, { fileIo: io });
    const log = await openModel(store);
    log.save(rec(1));
    const before = io.syncs;
    await log.durable();
    expect(io.syncs).toBeGreaterThan(before);
    await store.close();
  });

  it('always: writes go out while an fdatasync is in flight; a waiter resolves only after an fdatasync that started after its bytes were written', async () => {
    const io = new PipelineIo();
    const store = await openStore(tmpDir(), { durability: 'always' }, { fileIo: io });
    const log = await openModel(store);
    let resolved = 0;
    const writers = 16;
    const rounds = 25;
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        for (let r = 0; r < rounds; r++) {
          // Staggered arrivals: some writers append while an fdatasync (3 ms here) is in flight. Two delays, so
          // that some arrive after the writer started the fdatasync, however fast the writes before it were.
          if ((w + r) % 3 === 0) await sleep(1);
          else if ((w + r) % 3 === 1) await sleep(2);
          const id = log.save(rec(w * 1000 + r));
          const end = log.stats().bytes; // this record's end offset in the (single) segment file
          const shared = log.durable(id);
          await shared;
          expect(io.durableEnd).toBeGreaterThanOrEqual(end);
          resolved++;
        }
      }),
    );
    expect(resolved).toBe(writers * rounds);
    expect(io.overlapped).toBeGreaterThan(0); // pipelining happened
    expect(io.syncs).toBeLessThan(writers * rounds);
    expect(log.stats().pendingSyncBytes).toBe(0);
    await store.close();
  });

  it('always: a failed fdatasync with a write in flight: read-only, then everything is rewritten, synced and kept', async () => {
    const io = new PipelineIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always' }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    log.save(rec(1));
    await log.durable();
    io.failNextSync = 'EIO';
    log.save(rec(2));
    const p2 = log.durable();
    // Wait until the fdatasync for record 2 is in flight (it takes 3 ms and will fail).
    while (!io.syncInFlight) await new Promise((r) => setImmediate(r));
    log.save(rec(3)); // written while that fdatasync is in flight
    const p3 = log.durable();
    const impatient = log.durable(3, { rejectWhenReadOnly: true });
    await expect(impatient).rejects.toBeInstanceOf(StoreReadOnlyError);
    expect(log.state).toBe('read-only');
    expect(log.stats().lastError).toMatch(/EIO\) on fdatasync/);
    await Promise.all([p2, p3]);
    expect(log.state).toBe('ok');
    expect(io.durableEnd).toBe(log.stats().bytes);
    expect(io.rewrites).toBeGreaterThan(0);
    await store.close();
    expect(await allIds(await openModel(await openStore(dir)))).toEqual([1, 2, 3]);
  });

  it('interval: an fdatasync every syncIntervalMs, not per write', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'interval', syncIntervalMs: 50 }, { fileIo: io });
    const log = await openModel(store);
    const t0 = Date.now();
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    expect(log.stats().pendingSyncBytes).toBeGreaterThan(0);
    await log.durable(1000);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(40);
    expect(io.syncs).toBe(1);
    expect(log.stats().pendingSyncBytes).toBe(0);
    await store.close();
  });

  it('none: durable means handed to the kernel, no fdatasync on the write path', async () => {
    const io = new FaultyIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'none' }, { fileIo: io });
    const log = await openModel(store);
    for (let i = 1; i <= 100; i++) log.save(rec(i));
    await log.durable();
    expect(io.syncs).toBe(0);
    expect(io.writes).toBeGreaterThan(0);
    await store.abandon(); // like kill -9: what reached the kernel survives
    const log2 = await openModel(await openStore(dir));
    expect(await allIds(log2)).toEqual(range(1, 100));
  });
});

/** Real I/O recording the ArrayBuffer behind each buffer a writev writes, in order. */
class WrittenBuffersIo extends NodeFileIo {
  readonly seen: ArrayBufferLike[] = [];
  writes = 0;

  override async writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    this.writes++;
    for (const b of bufs) this.seen.push(b.buffer);
    return nodeFileIo.writev(fd, bufs, pos);
  }
}

describe('write buffer memory', () => {
  it('small writes share one buffer: a write job does not take a new 64 KiB ArrayBuffer each time', async () => {
    // A new ArrayBuffer per write made V8 run a full collection about every second under steady writes.
    const io = new WrittenBuffersIo();
    const dir = tmpDir();
    let store = await openStore(dir, { durability: 'none' }, { fileIo: io });
    let log = await openModel(store);
    for (let i = 0; i < 200; i++) {
      log.save(rec(i));
      if (i % 2 === 1) await log.durable();
    }
    expect(io.writes).toBeGreaterThanOrEqual(100);
    // 200 records of ~60 bytes: 12 KB, one or two buffers of 64 KiB (the rest of one under 8 KiB starts another).
    expect(new Set(io.seen).size).toBeLessThanOrEqual(2);
    await store.close();
    store = await openStore(dir);
    log = await openModel(store);
    expect(await allIds(log)).toEqual(range(1, 200));
    expect((await log.page({ current: 1, size: 1, order: 'desc', select: ['seq'] })).records[0].seq).toBe(rec(199).seq);
    await store.close();
  });

  it('a model idle from one checkpoint to the next lets its buffer go; a busy one keeps it', async () => {
    const io = new WrittenBuffersIo();
    const store = await openStore(tmpDir(), { durability: 'interval' }, { fileIo: io });
    const log = await openModel(store);
    const writeOne = async (i: number): Promise<ArrayBufferLike> => {
      log.save(rec(i));
      await log.durable();
      return io.seen[io.seen.length - 1];
    };
    const first = await writeOne(0);
    await log.checkpoint(); // a write since the last check: kept
    expect(await writeOne(1)).toBe(first);
    await log.checkpoint();
    await log.checkpoint(); // nothing written between these two: let go
    expect(await writeOne(2)).not.toBe(first);
    expect(await allIds(log)).toEqual([1, 2, 3]);
    await store.close();
  });

  it('packing records takes no new ArrayBuffer: msgpackr writes each payload over the last one', async () => {
    const store = await openStore(tmpDir(), { durability: 'none' });
    const log = await openModel(store);
    log.save(rec(0));
    // msgpackr's own buffers come from Buffer.allocUnsafeSlow: a new 8 KiB one every ~6 KiB of records before.
    const slow = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      for (let i = 1; i < 2000; i++) log.save(rec(i));
      expect(slow).not.toHaveBeenCalled();
    } finally {
      slow.mockRestore();
    }
    const page = await log.page({ current: 2, size: 1000, order: 'asc', select: ['seq', 'dev'] });
    expect(page.records.map((r) => r.seq)).toEqual(range(1000, 1999));
    expect(page.records[234].dev).toBe(rec(1234).dev);
    await store.close();
  });
});

describe('restart after an update-last that rolled the segment', () => {
  it('latest() is the newest version (the id sits in two segments; the newer one wins)', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always', segmentBytesMax: 2000 });
    const log = await openModel(store);
    let rolled = false;
    for (let i = 1; i <= 200 && !rolled; i++) {
      log.save(rec(i));
      const before = log.stats().segments;
      log.updateLast({ hum: i + 0.5 });
      rolled = log.stats().segments > before;
    }
    expect(rolled).toBe(true);
    const want = log.latest();
    await log.durable();
    await store.abandon(); // like kill -9 (all durable): the unclean path
    const log2 = await openModel(await openStore(dir, { segmentBytesMax: 2000 }));
    const page = await log2.page({ current: 1, size: 1, order: 'desc' });
    expect(page.records[0]).toEqual(want);
    expect(log2.latest()).toEqual(want);
  });
});

describe('disk full and I/O errors', () => {
  it('ENOSPC turns the model read-only, reads keep working, writes resume when space is back', async () => {
    const io = new FaultyIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always', segmentBytesMax: 2000 }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    for (let i = 1; i <= 50; i++) log.save(rec(i));
    await log.durable();
    io.failWrites = 'ENOSPC';
    io.partialBytes = 37; // a torn write: part of a frame reaches the disk
    const accepted: number[] = [];
    for (let i = 51; i <= 80; i++) accepted.push(log.save(rec(i)));
    const pending = log.durable(80);
    const impatient = log.durable(80, { rejectWhenReadOnly: true });
    let settled = false;
    void pending.then(() => (settled = true));
    await expect(impatient).rejects.toBeInstanceOf(StoreReadOnlyError);
    await expect(log.durable(80, { rejectWhenReadOnly: true })).rejects.toThrow(/disk full/);
    await sleep(60);
    expect(log.state).toBe('read-only');
    expect(log.stats().lastError).toMatch(/disk full \(ENOSPC\)/);
    expect(() => log.save(rec(999))).toThrow(StoreReadOnlyError);
    expect(() => log.updateLast({ hum: 1 })).toThrow(/disk full/);
    expect(settled).toBe(false);
    // Accepted records stay readable from memory.
    expect(await allIds(log)).toEqual(range(1, 80));
    expect(log.latest()?.id).toBe(80);
    io.failWrites = undefined;
    await pending;
    expect(log.state).toBe('ok');
    expect(log.save(rec(81))).toBe(81);
    await log.durable();
    await store.close();
    const log2 = await openModel(await openStore(dir, { segmentBytesMax: 2000 }));
    expect(log2.recovery.clean).toBe(true);
    expect(await allIds(log2)).toEqual(range(1, 81));
    const page = await log2.page({ current: 1, size: 81, order: 'asc' });
    expect(page.records.map((r) => r.seq)).toEqual([...range(1, 80), 81]);
  });

  it('a failed fdatasync goes read-only and rewrites the unsynced bytes before retrying', async () => {
    const io = new FaultyIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always' }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    log.save(rec(1));
    await log.durable();
    io.failSyncs = 'EIO';
    log.save(rec(2));
    const p = log.durable();
    await sleep(50);
    expect(log.state).toBe('read-only');
    expect(log.stats().lastError).toMatch(/EIO/);
    io.failSyncs = undefined;
    await p;
    expect(log.state).toBe('ok');
    await store.close();
    expect(await allIds(await openModel(await openStore(dir)))).toEqual([1, 2]);
  });

  it('a failed fdatasync that dropped the unsynced pages (fsyncgate): the retry writes them again from memory', async () => {
    const io = new FaultIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'always' }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    log.save(rec(1));
    await log.durable();
    io.arm({ op: 'fdatasync', code: 'EIO', file: /\.log$/, dropPages: true, times: 1 });
    for (let i = 2; i <= 5; i++) log.save(rec(i));
    await expect(log.durable(5, { rejectWhenReadOnly: true })).rejects.toBeInstanceOf(StoreReadOnlyError);
    expect(io.droppedBytes).toBeGreaterThan(0);
    // Read while the file holds zeros where records 2-5 were: they come from memory, nothing is reported lost.
    expect((await log.page({ current: 1, size: 10, order: 'asc' })).records.map((r) => r.seq)).toEqual(range(1, 5));
    await log.durable();
    expect(log.state).toBe('ok');
    expect(log.findings()).toBeUndefined();
    await store.close();
    const reopened = await openModel(await openStore(dir));
    expect((await reopened.page({ current: 1, size: 10, order: 'asc' })).records.map((r) => r.seq)).toEqual(range(1, 5));
  });

  it('a seal whose fdatasync failed and dropped pages writes them again before it retries the fdatasync', async () => {
    const io = new FaultIo();
    const dir = tmpDir();
    const store = await openStore(dir, { durability: 'interval', syncIntervalMs: 60_000, segmentBytesMax: 1024 }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    // No interval fdatasync runs: the seal's fdatasync is the first one of the segment.
    io.arm({ op: 'fdatasync', code: 'EIO', file: /\.log$/, dropPages: true, times: 1 });
    for (let i = 1; i <= 40; i++) log.save(rec(i));
    while (io.fired === 0) await sleep(2);
    expect(log.state).toBe('read-only');
    while (log.state !== 'ok') await sleep(5);
    expect(io.droppedBytes).toBeGreaterThan(0);
    expect(log.stats().segments).toBeGreaterThan(1);
    await store.close();
    const reopened = await openModel(await openStore(dir));
    expect((await reopened.page({ current: 1, size: 50, order: 'asc' })).records.map((r) => r.seq)).toEqual(range(1, 40));
    expect(reopened.findings()).toBeUndefined();
  });

  it('refuses writes beyond the write-queue limit instead of growing without bound', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'none' }, { fileIo: io });
    const log = await openModel(store);
    const big = { status: 'x'.repeat(512 * 1024) };
    expect(() => {
      for (let i = 0; i < 200; i++) log.save(big);
    }).toThrow(/write queue/);
    await store.close();
  });
});
