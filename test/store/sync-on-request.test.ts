/**
 * durable({ sync: true }) under `sync = none` (a push with `wait=durable`, contract 9): nothing syncs by
 * itself under `none`, so it asks for the fdatasync; a failing one is reported, never taken for durable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyIo, openModel, openStore, rec, removeTmpDirs, tmpDir } from './helpers.js';
import { StoreReadOnlyError } from '../../src/errors.js';

afterEach(removeTmpDirs);

describe('durable({ sync: true }) under none', () => {
  it('plain durable() makes no fdatasync; sync: true makes one that covers the write', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'none' }, { fileIo: io });
    const log = await openModel(store);
    const before = io.syncs;
    await log.durable(log.save(rec(1)));
    expect(io.syncs).toBe(before);
    expect(log.stats().pendingSyncBytes).toBeGreaterThan(0);
    await log.durable(log.save(rec(2)), { sync: true });
    expect(io.syncs).toBeGreaterThan(before);
    expect(log.stats().pendingSyncBytes).toBe(0);
    await store.close();
  });

  it('a failed fdatasync rejects with the read-only error (rejectWhenReadOnly), or waits for the retry that succeeds', async () => {
    const io = new FaultyIo();
    const store = await openStore(tmpDir(), { durability: 'none' }, { fileIo: io, readOnlyRetryMs: 20 });
    const log = await openModel(store);
    log.save(rec(1));
    io.failSyncs = 'EIO';
    await expect(log.durable(undefined, { sync: true, rejectWhenReadOnly: true })).rejects.toBeInstanceOf(StoreReadOnlyError);
    expect(log.state).toBe('read-only');

    const waiting = log.durable(undefined, { sync: true });
    io.failSyncs = undefined;
    await waiting;
    expect(log.state).toBe('ok');
    expect(log.stats().pendingSyncBytes).toBe(0);
    await store.close();
  });
});
