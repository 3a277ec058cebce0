/**
 * paged-read.ts returns exactly what iterate returns for any id range, whether a read continues the
 * previous one (the spare) or starts elsewhere, and forgets the spare when a record in it changes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/constants.js';
import type { ModelLog } from '../../src/store/model-log.js';
import type { RecordView } from '../../src/store/types.js';
import { PAGE_RECORDS, PagedRead } from '../../src/uplink/paged-read.js';

let dir: string;
let store: Store;
let log: ModelLog;
const N = 3 * PAGE_RECORDS + 123;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'paged-read-'));
  store = await Store.open(storeOptions({ rootDir: dir, durability: 'none', syncIntervalMs: 100, segmentBytesMax: 32 * 1024 }));
  log = await store.openModel('m', { fields: ['v', 's'] });
  for (let i = 0; i < N; i++) log.save({ v: i, s: `r${i}` });
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

async function iterated(from: number, to: number): Promise<RecordView[]> {
  const out: RecordView[] = [];
  for await (const r of log.iterate({ fromId: from, toId: to })) out.push(r);
  return out;
}

describe('paged reads', () => {
  it('equal iterate over consecutive ranges of every size, and over ranges that start elsewhere', async () => {
    const pages = new PagedRead(log);
    let from = 1;
    for (const size of [1, 7, 999, 1000, 1001, 250, 3, 600]) {
      const to = Math.min(N, from + size - 1);
      expect(await pages.read(from, to)).toEqual({ records: await iterated(from, to), throughId: to });
      from = to + 1;
    }
    for (const [a, b] of [[5, 5], [990, 1010], [2001, 3000], [3000, N], [N, N + 5]]) expect((await pages.read(a, b)).records).toEqual(await iterated(a, b));
  });

  it('read through iterate where a page would be over the bytes limit of a page', async () => {
    const big = await store.openModel('big', { fields: ['blob'] });
    for (let i = 0; i < PAGE_RECORDS + 10; i++) big.save({ blob: `${i}`.padEnd(9 * 1024, 'x') });
    await expect(big.page({ current: 1, size: PAGE_RECORDS, order: 'asc' })).rejects.toThrow(/reads \d+ MiB/);
    const pages = new PagedRead(big);
    const { records, throughId } = await pages.read(1, PAGE_RECORDS + 10);
    expect(throughId).toBe(PAGE_RECORDS + 10);
    expect(records.map((r) => r.id)).toEqual(Array.from({ length: PAGE_RECORDS + 10 }, (_, i) => i + 1));
    expect(records[PAGE_RECORDS].blob).toBe(`${PAGE_RECORDS}`.padEnd(9 * 1024, 'x'));
  });

  it('forget the spare when it is dropped: a changed record is read again', async () => {
    const pages = new PagedRead(log);
    await pages.read(N - 10, N - 5);
    expect(pages.readEnd).toBe(N);
    log.updateLast({ v: -1 });
    pages.drop();
    expect((await pages.read(N - 4, N)).records.map((r) => r.v)).toEqual([N - 5, N - 4, N - 3, N - 2, -1]);
  });
});
