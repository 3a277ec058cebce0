/**
 * The store's side of the fleet uplink (docs/uplink.md): the generation of a log, the notice of an
 * update-last, and the retention floor that keeps what the hub has not acknowledged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allIds, openModel, openStore, range, rec, removeTmpDirs, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

describe('generation', () => {
  it('is kept in the model directory across reopen and changes at a clear, on disk too', async () => {
    const dir = tmpDir();
    let store = await openStore(dir);
    let log = await openModel(store);
    const first = log.generation;
    expect(first).toMatch(/^[0-9a-f]{16}$/);
    log.save(rec(1));
    await store.close();
    store = await openStore(dir);
    log = await openModel(store);
    expect(log.generation).toBe(first);
    const clearing = log.clear();
    const second = log.generation;
    expect(second).not.toBe(first);
    await clearing;
    expect(fs.readFileSync(path.join(dir, 'm', 'GENERATION'), 'utf8').trim()).toBe(second);
    log.save(rec(2));
    await log.durable();
    await store.abandon();
    log = await openModel(await openStore(dir));
    expect(log.generation).toBe(second);
  });

  it('a directory written before GENERATION existed gets one at open and keeps it', async () => {
    const dir = tmpDir();
    let store = await openStore(dir);
    await openModel(store);
    await store.close();
    fs.rmSync(path.join(dir, 'm', 'GENERATION'));
    store = await openStore(dir);
    const made = (await openModel(store)).generation;
    await store.close();
    expect((await openModel(await openStore(dir))).generation).toBe(made);
  });
});

describe('onSupersede', () => {
  it('names the id each update-last replaces, and only those', async () => {
    const store = await openStore(tmpDir());
    const log = await openModel(store);
    const seen: number[] = [];
    const stop = log.onSupersede((id) => seen.push(id));
    log.save(rec(1));
    log.updateLast({ temp: 1 });
    log.save(rec(2));
    log.updateLast({ temp: 2 });
    log.updateLast({ temp: 3 });
    stop();
    log.updateLast({ temp: 4 });
    expect(seen).toEqual([1, 2, 2]);
    await store.close();
  });
});

describe('retention floor', () => {
  async function filled(backlogMaxBytes: number, keepFromId: number, maxRecords = 100) {
    const store = await openStore(tmpDir(), { segmentBytesMax: 1000 });
    const log = await openModel(store);
    log.setRetentionFloor({ keepFromId: () => keepFromId, backlogMaxBytes });
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    await log.durable();
    log.setRetention({ maxRecords, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    return { store, log };
  }

  it('keeps every segment holding the floor id or later, whatever the limits say', async () => {
    const { store, log } = await filled(0, 400);
    const { firstId } = log.idRange();
    expect(firstId).toBeLessThanOrEqual(400);
    expect(firstId).toBeGreaterThan(300);
    expect(await allIds(log)).toEqual(range(firstId, 1000));
    log.setRetentionFloor(undefined);
    await log.enforceRetention();
    expect(log.idRange().firstId).toBeGreaterThan(850);
    await store.close();
  });

  it('gives way once the backlog from the floor on is larger than backlogMaxBytes, down to that size', async () => {
    const { store, log } = await filled(5000, 1, 10);
    const { bytes, total } = log.stats();
    expect(bytes).toBeLessThanOrEqual(5000);
    expect(bytes).toBeGreaterThan(4000);
    expect(total).toBeGreaterThan(10);
    await store.close();
  });
});
