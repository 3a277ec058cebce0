/**
 * `diskReserveBytes` (contract 14): below that much free space a model refuses writes as read-only
 * (StoreReadOnlyError naming the reserve), reads go on, stats say why and since when; 0 turns it off.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { StoreReadOnlyError } from '../../src/errors.js';
import { openModel, openStore, rec, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

describe('disk reserve', () => {
  it('a reserve larger than the free space refuses writes; reads and stats go on', async () => {
    const dir = tmpDir();
    let store = await openStore(dir);
    let log = await openModel(store);
    log.save(rec(1));
    await log.durable();
    await store.close();

    store = await openStore(dir, { diskReserveBytes: Number.MAX_SAFE_INTEGER });
    log = await openModel(store);
    expect(() => log.save(rec(2))).toThrow(StoreReadOnlyError);
    expect(() => log.updateLast({ seq: 9 })).toThrow(/below the reserve of \d+ MiB \(\[store\] disk_reserve_bytes\)/);
    expect(log.state).toBe('read-only');
    expect(log.stats()).toMatchObject({ state: 'read-only', lastError: expect.stringContaining('free disk'), readOnlySinceMs: expect.any(Number) });
    expect(log.latest()).toMatchObject({ id: 1, seq: 1 });
    expect((await log.page({ current: 1, size: 10, order: 'asc' })).records).toHaveLength(1);
    expect(store.disk.current?.freeBytes).toBeGreaterThan(0);
    await store.close();
  });

  it('0 only reports the free space', async () => {
    const store = await openStore(tmpDir(), { diskReserveBytes: 0 });
    const log = await openModel(store);
    expect(log.save(rec(1))).toBe(1);
    expect(store.disk.current?.totalBytes).toBeGreaterThan(0);
    await store.close();
  });
});
