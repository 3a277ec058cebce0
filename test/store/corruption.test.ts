/**
 * Corruption table in the spirit of Prometheus TestWALRepair, Kafka testCorruptLog and NATS
 * TestFileStoreBitRot: damage the files of a model that was not closed cleanly, reopen, and check
 * exactly what survived and what recovery reported.
 */
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { allIds, frameOffsets, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { Store } from '../../src/store/store.js';

afterAll(removeTmpDirs);

const N = 40;

/**
 * A model with N records, left like after kill -9 (everything written, no clean flag). `checkpointed`:
 * everything was fdatasync'ed and the manifest says so, so recovery treats all of it as synced data.
 */
async function crashedModel(segmentBytesMax = 32 * 1024 * 1024, clean = false, checkpointed = false): Promise<string> {
  const dir = tmpDir();
  const store = await openStore(dir, { segmentBytesMax, durability: 'none' });
  const log = await openModel(store);
  for (let i = 1; i <= N; i++) log.save(rec(i));
  await log.durable();
  if (checkpointed) await log.checkpoint();
  if (clean) await store.close();
  else await store.abandon();
  return dir;
}

function copyOf(dir: string): string {
  const d = tmpDir();
  fs.cpSync(dir, d, { recursive: true });
  return d;
}

async function reopen(dir: string, segmentBytesMax = 32 * 1024 * 1024): Promise<{ store: Store; log: ModelLog }> {
  const store = await openStore(dir, { segmentBytesMax });
  return { store, log: await openModel(store) };
}

function flip(file: string, at: number, mask = 0x10): void {
  const b = fs.readFileSync(file);
  b[at] ^= mask;
  fs.writeFileSync(file, b);
}

describe('torn tails (active segment, unclean shutdown)', () => {
  it('a cut at every byte of the last three frames keeps exactly the whole frames before it', async () => {
    const base = await crashedModel();
    const file = `${base}/m/${segFiles(`${base}/m`)[0]}`;
    const offs = frameOffsets(file);
    const bytes = fs.readFileSync(file);
    const size = bytes.length;
    const ends = [...offs.slice(1), size];
    // The report stops at the last non-zero byte of the cut (zeros at the end are not told from preallocation).
    const reported = (from: number, cut: number): number => {
      let end = cut;
      while (end > from && bytes[end - 1] === 0) end--;
      return end - from;
    };
    for (let cut = offs[N - 3]; cut < size; cut++) {
      const d = copyOf(base);
      fs.truncateSync(`${d}/m/${segFiles(`${d}/m`)[0]}`, cut);
      const { store, log } = await reopen(d);
      const whole = ends.filter((e) => e <= cut).length;
      expect(await allIds(log), `cut at ${cut}`).toEqual(range(1, whole));
      expect(log.recovery.truncatedBytes).toBe(reported(whole > 0 ? ends[whole - 1] : 32, cut));
      expect(log.recovery.lostRanges).toEqual([]);
      expect(log.latest()?.id).toBe(whole);
      expect(log.save(rec(whole + 1))).toBe(whole + 1);
      await store.close();
      fs.rmSync(d, { recursive: true, force: true });
    }
  });

  // Zeros after the last non-zero byte are what a preallocated file (sync = always) holds past its
  // frames: cut, not reported as a lost tail.
  it.each([
    ['a zero-filled tail (4 KiB)', Buffer.alloc(4096), 0],
    ['a garbage tail', Buffer.from(Array.from({ length: 1500 }, (_, i) => (i * 151 + 7) & 0xff)), 1500],
    ['a half frame header', Buffer.from([0x30, 0, 0, 0, 1, 2]), 6],
    ['a half frame header, then zeros', Buffer.concat([Buffer.from([0x30, 0, 0, 0, 1, 2]), Buffer.alloc(8192)]), 6],
  ])('%s is cut and reported', async (_name, tail, reported) => {
    const d = copyOf(await crashedModel());
    const file = `${d}/m/${segFiles(`${d}/m`)[0]}`;
    const size = fs.statSync(file).size;
    fs.appendFileSync(file, tail);
    const { store, log } = await reopen(d);
    expect(await allIds(log)).toEqual(range(1, N));
    expect(log.recovery.truncatedBytes).toBe(reported);
    expect(fs.statSync(file).size).toBe(size);
    expect(log.recovery.clean).toBe(false);
    await store.close();
    const again = await reopen(d);
    expect(again.log.recovery).toMatchObject({ clean: true, scannedBytes: 0, truncatedBytes: 0 });
    await again.store.close();
  });
});

describe('bit flips inside synced data keep the good records after them', () => {
  const fieldsAt = [
    ['length', 1],
    ['crc', 5],
    ['type', 8],
    ['id', 16],
    ['timestamp', 25],
    ['payload', 30],
  ] as const;

  it.each(fieldsAt)('flip in %s of a middle frame of the synced active segment: skipped and reported', async (_f, at) => {
    const d = copyOf(await crashedModel(undefined, false, true));
    const file = `${d}/m/${segFiles(`${d}/m`)[0]}`;
    flip(file, frameOffsets(file)[19] + at); // id 20
    const { store, log } = await reopen(d);
    // Synced frames are only checked for plausibility at open; a CRC-only fault is found by the first read.
    expect(await allIds(log)).toEqual([...range(1, 19), ...range(21, N)]);
    expect(log.recovery.lostRanges).toEqual([{ fromId: 20, toId: 20 }]);
    expect(log.save(rec(N + 1))).toBe(N + 1);
    await store.close();
  });

  it.each(fieldsAt)('flip in %s of a frame of a sealed segment: skipped on read and reported', async (_f, at) => {
    const d = copyOf(await crashedModel(500));
    const files = segFiles(`${d}/m`);
    expect(files.length).toBeGreaterThan(3);
    const file = `${d}/m/${files[1]}`;
    const offs = frameOffsets(file);
    const before = await reopen(d, 500);
    const idsOfSeg1 = (await allIds(before.log)).slice(frameOffsets(`${d}/m/${files[0]}`).length);
    await before.store.close();
    const victim = idsOfSeg1[1];
    flip(file, offs[1] + at);
    const { store, log } = await reopen(d, 500);
    expect(await allIds(log)).toEqual(range(1, N).filter((i) => i !== victim));
    expect(log.recovery.lostRanges).toEqual([{ fromId: victim, toId: victim }]);
    const page = await log.page({ current: 1, size: 1000, order: 'desc' });
    expect(page.records.length).toBe(N - 1);
    await store.close();
  });

  it('a valid frame copied over the next one of a sealed segment (a misdirected write) breaks the id rule: skipped on read and reported', async () => {
    const d = copyOf(await crashedModel(500));
    const files = segFiles(`${d}/m`);
    const file = `${d}/m/${files[1]}`;
    const offs = frameOffsets(file);
    const b = fs.readFileSync(file);
    const bytes = (k: number): number => b.readUInt32LE(offs[k]) + 8;
    const k = offs.findIndex((_, i) => i + 2 < offs.length && bytes(i) === bytes(i + 1));
    expect(k).toBeGreaterThanOrEqual(0);
    b.copy(b, offs[k + 1], offs[k], offs[k] + bytes(k)); // CRC-valid, but a SAVE repeating the id before it
    fs.writeFileSync(file, b);
    const victim = frameOffsets(`${d}/m/${files[0]}`).length + k + 2;
    const { store, log } = await reopen(d, 500);
    expect(await allIds(log)).toEqual(range(1, N).filter((i) => i !== victim));
    expect(log.recovery.lostRanges).toEqual([{ fromId: victim, toId: victim }]);
    await store.close();
  });

  it('a flip found by a read (a cleanly closed sealed segment is not scanned at open) is logged naming the model and the lost id', async () => {
    const d = copyOf(await crashedModel(500, true));
    const file = `${d}/m/${segFiles(`${d}/m`)[0]}`;
    flip(file, frameOffsets(file)[2] + 30);
    const notes: string[] = [];
    const store = await openStore(d, { segmentBytesMax: 500 }, { warn: (m) => notes.push(m) });
    const log = await openModel(store);
    expect(log.recovery.lostRanges).toEqual([]);
    expect(await allIds(log)).toEqual(range(1, N).filter((i) => i !== 3));
    expect(notes.filter((m) => m.includes('lost'))).toEqual([expect.stringMatching(/^model m: record 3 is lost: a read found/)]);
    await allIds(log);
    expect(notes.filter((m) => m.includes('lost'))).toHaveLength(1);
    await store.close();
  });

  it('several flips in one synced segment each lose only their own record', async () => {
    const d = copyOf(await crashedModel(undefined, false, true));
    const file = `${d}/m/${segFiles(`${d}/m`)[0]}`;
    const offs = frameOffsets(file);
    for (const k of [4, 5, 30]) flip(file, offs[k] + 30);
    const { store, log } = await reopen(d);
    expect(await allIds(log)).toEqual(range(1, N).filter((i) => ![5, 6, 31].includes(i)));
    expect(log.recovery.lostRanges).toEqual([
      { fromId: 5, toId: 6 },
      { fromId: 31, toId: 31 },
    ]);
    await store.close();
  });
});

describe('a hole in the unsynced tail ends the log there (point-in-time recovery)', () => {
  it.each([
    ['a flipped byte', (b: Buffer, offs: number[]) => (b[offs[19] + 30] ^= 0x10)],
    ['a zeroed run (a page that never reached the disk)', (b: Buffer, offs: number[]) => b.fill(0, offs[19] - 5, offs[25])],
  ])('%s past the checkpoint keeps only the frames before it, with no lost range', async (_name, damage) => {
    const d = copyOf(await crashedModel());
    const file = `${d}/m/${segFiles(`${d}/m`)[0]}`;
    const b = fs.readFileSync(file);
    const offs = frameOffsets(file);
    damage(b, offs); // inside ids 19..25; valid frames follow the hole
    fs.writeFileSync(file, b);
    const { store, log } = await reopen(d);
    const kept = b[offs[19] + 30] === 0 ? 18 : 19;
    expect(await allIds(log)).toEqual(range(1, kept));
    expect(log.recovery.lostRanges).toEqual([]);
    expect(log.recovery.truncatedBytes).toBe(b.length - offs[kept]);
    expect((await log.page({ current: 1, size: 100, order: 'asc' })).total).toBe(kept);
    expect(log.latest()?.id).toBe(kept);
    await store.close();
  });
});

describe('index files and manifest', () => {
  it.each([
    ['missing', (f: string) => fs.rmSync(f)],
    ['corrupt', (f: string) => flip(f, 20)],
    ['truncated', (f: string) => fs.truncateSync(f, 10)],
  ])('a %s .idx of a sealed segment is rebuilt by scanning it', async (_n, damage) => {
    const d = await crashedModel(500, true);
    damage(`${d}/m/${segFiles(`${d}/m`)[1].replace('.log', '.idx')}`);
    const { store, log } = await reopen(d, 500);
    expect(log.recovery.rebuiltIndexes).toBe(1);
    expect(log.recovery.scannedBytes).toBeGreaterThan(0);
    expect(await allIds(log)).toEqual(range(1, N));
    expect(log.recovery.lostRanges).toEqual([]);
    await store.close();
    const again = await reopen(d, 500);
    expect(again.log.recovery).toMatchObject({ clean: true, rebuiltIndexes: 0, scannedBytes: 0 });
    await again.store.close();
  });

  it.each([0, 1])('a torn manifest slot %i falls back to the other slot', async (slot) => {
    const d = await crashedModel(500, true);
    const m = `${d}/m/MANIFEST`;
    const b = fs.readFileSync(m);
    b.fill(0xab, slot * 4096 + 10, slot * 4096 + 2000);
    fs.writeFileSync(m, b);
    const { store, log } = await reopen(d, 500);
    expect(await allIds(log)).toEqual(range(1, N));
    expect(log.save(rec(N + 1))).toBe(N + 1);
    await store.close();
  });

  it('with both manifest slots destroyed the model still opens from its segments', async () => {
    const d = await crashedModel(500, true);
    fs.writeFileSync(`${d}/m/MANIFEST`, Buffer.alloc(8192, 0x55));
    const { store, log } = await reopen(d, 500);
    expect(log.recovery.clean).toBe(false);
    expect(await allIds(log)).toEqual(range(1, N));
    await store.close();
  });

  it('leftover .tmp files and trash directories are removed at open', async () => {
    const d = await crashedModel(500, true);
    fs.writeFileSync(`${d}/m/seg-0000000001.idx.tmp`, 'x');
    fs.mkdirSync(`${d}/.trash-m-1-0/sub`, { recursive: true });
    const { store, log } = await reopen(d, 500);
    expect(fs.existsSync(`${d}/m/seg-0000000001.idx.tmp`)).toBe(false);
    expect(fs.existsSync(`${d}/.trash-m-1-0`)).toBe(false);
    expect(await allIds(log)).toEqual(range(1, N));
    await store.close();
  });

  it('a clear interrupted after the rename opens as an empty model', async () => {
    const d = await crashedModel(500, true);
    fs.renameSync(`${d}/m`, `${d}/.trash-m-123-0`);
    const { store, log } = await reopen(d, 500);
    expect(log.stats().total).toBe(0);
    expect(log.save(rec(1))).toBe(1);
    await store.close();
  });
});
