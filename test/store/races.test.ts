/**
 * Regressions for races between reads, seals, retention and restarts, each made deterministic by holding
 * one operation of the file layer at the point where the race bites. The seeded interleaving test
 * (interleave.test.ts) looks for the rest of the class.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { allIds, frameOffsets, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';
import { NodeFileIo } from '../../src/store/base/file-io.js';
import type { ModelLog } from '../../src/store/log/model-log.js';

afterEach(removeTmpDirs);

/** Real I/O whose reads wait while `held` is set. */
class HeldReadIo extends NodeFileIo {
  private held: Promise<void> | undefined;
  private free: (() => void) | undefined;

  hold(): void {
    this.held = new Promise((r) => (this.free = r));
  }

  letGo(): void {
    this.free?.();
    this.held = undefined;
  }

  override async read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
    if (this.held) await this.held;
    return super.read(fd, buf, off, len, pos);
  }
}

/** Saves records of `log` from `from` on until it rolls to a new segment; returns the next seq. */
function saveUntilRoll(log: ModelLog, from: number): number {
  const segments = log.stats().segments;
  let i = from;
  while (log.stats().segments === segments) log.save(rec(i++));
  return i;
}

describe('reads racing a segment seal', () => {
  it('a page planned before the seal created the new file leaves the writer its fd (two models)', async () => {
    const dir = tmpDir();
    const io = new HeldReadIo();
    const store = await openStore(dir, { durability: 'always', segmentBytesMax: 2000 }, { fileIo: io });
    const a = await openModel(store, 'a');
    const b = await openModel(store, 'b');
    for (let i = 1; i <= 10; i++) a.save(rec(i));
    await a.durable();
    io.hold();
    let next = saveUntilRoll(a, 11);
    // The new segment has no file yet: the seal job creates it. The page spans both segments and its
    // read of the sealed one is held until the seal has finished.
    const reading = a.page({ current: 1, size: 1000, order: 'asc', select: ['id', 'seq'] });
    await a.durable(undefined, { rejectWhenReadOnly: true });
    io.letGo();
    const page = await reading;
    expect(page.records.map((r) => r.id)).toEqual(range(1, next - 1));

    // Model b opens new segment files now; a's writes must still go to a's own file.
    let nextB = 1;
    for (let round = 0; round < 5; round++) nextB = saveUntilRoll(b, nextB);
    for (let k = 0; k < 200; k++) a.save(rec(next++));
    await Promise.all([a.durable(undefined, { rejectWhenReadOnly: true }), b.durable(undefined, { rejectWhenReadOnly: true })]);
    expect(a.stats().state).toBe('ok');
    await store.close();

    const again = await openStore(dir, { segmentBytesMax: 2000 });
    for (const [id, count] of [['a', next - 1], ['b', nextB - 1]] as const) {
      const log = await openModel(again, id);
      expect(log.recovery.lostRanges, id).toEqual([]);
      const seqs: number[] = [];
      for await (const r of log.iterate({ select: ['id', 'seq'] })) {
        expect(r.seq).toBe(r.id);
        seqs.push(r.seq as number);
      }
      expect(seqs, id).toEqual(range(1, count));
    }
    await again.close();
  });

  it('an export that snapshots a segment before its file exists reads it after the seal', async () => {
    const io = new HeldReadIo();
    const store = await openStore(tmpDir(), { durability: 'always', segmentBytesMax: 2000 }, { fileIo: io });
    const log = await openModel(store);
    for (let i = 1; i <= 10; i++) log.save(rec(i));
    await log.durable();
    const last = saveUntilRoll(log, 11) - 1;
    const it = log.iterate({ select: ['id'] })[Symbol.asyncIterator]();
    io.hold();
    const first = it.next();
    await log.durable(undefined, { rejectWhenReadOnly: true });
    io.letGo();
    const ids = [(await first).value?.id];
    for (let r = await it.next(); !r.done; r = await it.next()) ids.push(r.value.id);
    expect(ids).toEqual(range(1, last));
    log.save(rec(last + 1));
    await log.durable(undefined, { rejectWhenReadOnly: true });
    await store.close();
  });
});

describe('retention after a restart', () => {
  it('segments found at open are removed like segments sealed since', async () => {
    const dir = tmpDir();
    const options = { segmentBytesMax: 4096, retention: { maxRecords: 300, maxBytes: 0, maxAgeMs: 0 } };
    let store = await openStore(dir, options);
    let log = await openModel(store);
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    await log.durable();
    await log.enforceRetention();
    const perSegment = Math.max(...segFiles(`${dir}/m`).map((f) => frameOffsets(`${dir}/m/${f}`).length));
    expect(log.stats().total).toBeLessThanOrEqual(300);
    await store.close();

    for (const [round, upTo] of [[1, 3000], [2, 6000]] as const) {
      store = await openStore(dir, options);
      log = await openModel(store);
      for (let i = log.stats().lastId + 1; i <= upTo; i++) log.save(rec(i));
      await log.durable();
      await log.enforceRetention();
      const s = log.stats();
      expect(s.total, `round ${round}`).toBeLessThanOrEqual(300);
      expect(s.total, `round ${round}`).toBeGreaterThan(300 - perSegment);
      expect(segFiles(`${dir}/m`).length).toBe(s.segments);
      expect(await allIds(log)).toEqual(range(s.firstId, upTo));
      await store.close();
    }
    expect(fs.readdirSync(`${dir}/m`).filter((n) => n.endsWith('.idx')).length).toBeLessThanOrEqual(segFiles(`${dir}/m`).length);
  });

  it('keeps the segment of the newest record when recovery left the active segment empty', async () => {
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: 2000 });
    let log = await openModel(store);
    for (let i = 1; i <= 200; i++) log.save(rec(i));
    await log.durable();
    await store.abandon();
    const files = segFiles(`${dir}/m`);
    const active = `${dir}/m/${files[files.length - 1]}`;
    fs.truncateSync(active, 32);
    fs.appendFileSync(active, Buffer.alloc(600)); // its frames never reached the disk: zeroed pages
    store = await openStore(dir, { segmentBytesMax: 2000, retention: { maxRecords: 5, maxBytes: 0, maxAgeMs: 0 } });
    log = await openModel(store);
    // Ids the manifest knew were handed out stay used: the next id follows them, the newest record is older.
    const newest = log.latest()?.id as number;
    expect(newest).toBeGreaterThan(0);
    expect(log.stats().lastId).toBe(newest);
    await log.enforceRetention();
    expect(log.stats().lastId).toBe(newest);
    expect(log.stats().total).toBeGreaterThan(0);
    expect((await log.page({ current: 1, size: 1, order: 'desc' })).records[0]).toMatchObject({ id: newest });
    const next = log.updateLast({ seq: -1 });
    expect(next).toBeGreaterThan(newest + 1);
    expect(log.findings()?.lostRanges).toContainEqual({ fromId: newest + 1, toId: next - 1 });
    expect((await log.page({ current: 1, size: 1, order: 'desc' })).records[0]).toMatchObject({ id: next, seq: -1 });
    await store.close();
  });
});

describe('age retention and the wall clock', () => {
  it('a clock that jumped or is behind the newest record never deletes by age; a steady one does', async () => {
    const notes: string[] = [];
    const store = await openStore(tmpDir(), { segmentBytesMax: 1000 }, { warn: (m) => notes.push(m) });
    const log = await openModel(store);
    for (let i = 1; i <= 300; i++) log.save(rec(i));
    await log.durable();
    const segments = log.stats().segments;
    log.setRetention({ maxRecords: 0, maxBytes: 0, maxAgeMs: 3_600_000 });
    const now = Date.now();
    await log.enforceRetention(now - 86_400_000); // behind the newest record
    await log.enforceRetention(now); // back: a jump of a day since the last check, still waits
    await log.enforceRetention(now + 10); // steady: trusted, and nothing is an hour old
    expect(log.stats().segments).toBe(segments);
    await log.enforceRetention(now + 2 * 86_400_000); // two days forward since the last check
    expect(log.stats().segments).toBe(segments);
    expect(notes).toHaveLength(2);
    expect(notes[0]).toMatch(/model m: age retention waits for a steady clock: the clock .* is behind the newest record/);
    expect(notes[1]).toMatch(/the clock jumped by 17280\d s since the last check/);
    await log.enforceRetention(now + 2 * 86_400_000 + 50); // steady since: trusted, everything sealed is old
    expect(log.stats().segments).toBe(1);
    expect(log.latest()?.seq).toBe(300);
    await store.close();
  });
});
