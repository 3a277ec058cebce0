import fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { Store } from '../../src/store/store.js';
import type { RecordView } from '../../src/store/base/types.js';
import { openModel, openStore, rec, removeTmpDirs, tmpDir } from './helpers.js';
import { CHUNK_CODEC, chunkBytes, readChunkTableSync, type ChunkTable } from '../../src/store/format/zlog.js';

afterEach(() => {
  vi.useRealTimers();
  removeTmpDirs();
});

/** Records are stamped T0 + 100 ms * i, so two logs filled alike hold the same bytes. */
const T0 = Date.UTC(2026, 0, 1);

const SEGMENT_BYTES = 8 * 1024;
const compacting = { segmentBytesMax: SEGMENT_BYTES, compactSealed: true } as const;

function files(dir: string, ext: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith(ext)).sort();
}

/** Writes `n` records (every 50th one updated after it is saved), durably. */
async function fill(log: ModelLog, n: number, from = 1): Promise<void> {
  vi.useFakeTimers({ toFake: ['Date'] });
  for (let i = from; i < from + n; i++) {
    vi.setSystemTime(T0 + 100 * i);
    log.save(rec(i));
    if (i % 50 === 0) log.updateLast({ status: `updated-${i}` });
  }
  vi.useRealTimers();
  await log.durable();
}

async function allPages(log: ModelLog, size: number, order: 'asc' | 'desc'): Promise<RecordView[]> {
  const out: RecordView[] = [];
  for (let current = 1; ; current++) {
    const page = await log.page({ current, size, order });
    out.push(...page.records);
    if (page.records.length < size) return out;
  }
}

async function everything(log: ModelLog): Promise<unknown> {
  const exported: RecordView[] = [];
  for await (const r of log.iterate()) exported.push(r);
  return {
    asc: await allPages(log, 7, 'asc'),
    desc: await allPages(log, 64, 'desc'),
    big: await allPages(log, 1000, 'asc'),
    exported,
    latest: log.latest(),
    agg: await log.aggregate({ fields: ['temp', 'hum'], fromMs: T0, toMs: T0 + 3_600_000, intervalMs: 60_000 }),
    // 7.3 s buckets against 6.4 s blocks: nearly every block straddles an edge and is read record by record,
    // from a compacted chunk's column streams for numbers and booleans, the full way for a string column.
    aggEdges: await log.aggregate({ fields: ['temp', 'hum', 'ok', 'seq'], fromMs: T0 + 1, toMs: T0 + 3_600_000, intervalMs: 7_300 }),
    aggStrings: await log.aggregate({ fields: ['status', 'temp'], fromMs: T0, toMs: T0 + 3_600_000, intervalMs: 7_300 }),
  };
}

async function openBoth(): Promise<{ raw: Store; packed: Store; rawLog: ModelLog; packedLog: ModelLog; dir: string }> {
  const raw = await openStore(tmpDir(), { segmentBytesMax: SEGMENT_BYTES });
  const dir = tmpDir();
  const packed = await openStore(dir, compacting);
  const rawLog = await openModel(raw);
  const packedLog = await openModel(packed);
  return { raw, packed, rawLog, packedLog, dir };
}

describe('compacted sealed segments', () => {
  it('every sealed segment becomes a .zlog that reads exactly like its .log, before and after a restart', async () => {
    const { raw, packed, rawLog, packedLog, dir } = await openBoth();
    await fill(rawLog, 3000);
    await fill(packedLog, 3000);
    await packedLog.compactionIdle();
    const mdir = `${dir}/m`;
    expect(files(mdir, '.log')).toHaveLength(2); // the newest sealed segment and the active one
    expect(files(mdir, '.zlog').length).toBeGreaterThan(10);
    const want = await everything(rawLog);
    expect(await everything(packedLog)).toEqual(want);
    const rawBytes = rawLog.stats().bytes;
    const packedBytes = packedLog.stats().bytes;
    const onDisk = [...files(mdir, '.zlog'), ...files(mdir, '.log')].reduce((n, f) => n + fs.statSync(`${mdir}/${f}`).size, 0);
    expect(packedBytes).toBe(onDisk);
    expect(packedBytes).toBeLessThan(rawBytes / 2);

    await packed.close();
    const again = await openStore(dir, compacting);
    const log = await openModel(again);
    expect(log.recovery.clean).toBe(true);
    expect(await everything(log)).toEqual(want);
    // Writing on: new seals are compacted too, and the ids go on.
    await fill(log, 500, 3001);
    await log.compactionIdle();
    expect(files(mdir, '.log')).toHaveLength(2);
    expect(log.stats().lastId).toBe(3500);
    await again.close();
    await raw.close();
  });

  it('chunks read from a .zlog are decoded into one reused buffer, each checked against its CRC', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, compacting);
    const log = await openModel(store);
    await fill(log, 1500);
    await log.compactionIdle();
    const mdir = `${dir}/m`;
    const [zlog] = files(mdir, '.zlog');
    const raw = fs.readFileSync(`${mdir}/${zlog}`);
    const fd = fs.openSync(`${mdir}/${zlog}`, 'r');
    const table = readChunkTableSync(fd, raw.length);
    fs.closeSync(fd);
    expect(table).toBeDefined();
    const t = table as ChunkTable;
    const coded = [...t.fileOffsets.keys()].filter((k) => k < t.fileOffsets.length - 1 && raw[t.fileOffsets[k] + 12] === CHUNK_CODEC);
    expect(coded.length).toBeGreaterThanOrEqual(2);
    const [k1, k2] = coded;
    const first = chunkBytes(t, raw, k1, t.fileOffsets[k1]) as Buffer;
    const firstBytes = Buffer.from(first);
    const second = chunkBytes(t, raw, k2, t.fileOffsets[k2]) as Buffer;
    expect(second.buffer).toBe(first.buffer);
    expect(second.length).toBe(t.logicalStarts[k2 + 1] - t.logicalStarts[k2]);
    expect(chunkBytes(t, raw, k1, t.fileOffsets[k1])?.equals(firstBytes)).toBe(true);
    await store.close();
  });

  it('compaction off leaves sealed segments as written; turned on later, it compacts them at open', async () => {
    const dir = tmpDir();
    let store = await openStore(dir, { segmentBytesMax: SEGMENT_BYTES });
    await fill(await openModel(store), 1000);
    await store.close();
    expect(files(`${dir}/m`, '.zlog')).toEqual([]);
    store = await openStore(dir, compacting);
    const log = await openModel(store);
    await log.compactionIdle();
    expect(files(`${dir}/m`, '.log')).toHaveLength(2);
    expect((await allPages(log, 1000, 'asc')).map((r) => r.seq)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
    await store.close();
  });

  it('retention and clear remove .zlog files; retention by bytes counts the bytes on disk', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, compacting);
    const log = await openModel(store);
    await fill(log, 3000);
    await log.compactionIdle();
    const zlogs = files(`${dir}/m`, '.zlog');
    const zlogBytes = zlogs.reduce((n, f) => n + fs.statSync(`${dir}/m/${f}`).size, 0);
    // Room for the active segment and half the compacted ones: a limit on logical bytes would keep far fewer.
    const maxBytes = log.stats().bytes - Math.floor(zlogBytes / 2);
    log.setRetention({ maxRecords: 0, maxBytes, maxAgeMs: 0 });
    await log.enforceRetention();
    const left = files(`${dir}/m`, '.zlog');
    expect(left.length).toBeLessThan(zlogs.length);
    expect(left.length).toBeGreaterThanOrEqual(Math.floor(zlogs.length / 2) - 1);
    expect(log.stats().bytes).toBeLessThanOrEqual(maxBytes);
    await log.clear();
    expect(files(`${dir}/m`, '.zlog')).toEqual([]);
    await store.close();
  });
});
