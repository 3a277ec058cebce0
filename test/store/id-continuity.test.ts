/**
 * Ids are never handed out twice: when the end of a model's log is lost at rest (an active segment cut or
 * deleted), the ids the manifest's checkpoint knew were handed out are reported lost and new records
 * continue after them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { allIds, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

async function writeAndClose(dir: string, n: number, segmentBytesMax?: number): Promise<void> {
  const store = await openStore(dir, segmentBytesMax === undefined ? {} : { segmentBytesMax });
  const log = await openModel(store);
  for (let i = 1; i <= n; i++) log.save(rec(i));
  await log.durable();
  await store.close();
}

describe('ids after a lost tail', () => {
  it('an active segment cut to its header: ids 1-10 are reported lost and the next record is id 11', async () => {
    const dir = tmpDir();
    await writeAndClose(dir, 10);
    const seg = path.join(dir, 'm', segFiles(path.join(dir, 'm'))[0]);
    fs.truncateSync(seg, 32);
    const store = await openStore(dir);
    const log = await openModel(store);
    expect(log.recovery.lostRanges).toEqual([{ fromId: 1, toId: 10 }]);
    expect(log.findings()?.lostIds).toBe(10);
    expect(log.latest()).toBeUndefined();
    expect(log.save(rec(11))).toBe(11);
    expect((await log.page({ current: 1, size: 100, order: 'asc' })).records.map((r) => r.id)).toEqual([11]);
    await store.close();
  });

  it('a deleted active segment: the sealed ones serve, the lost ids stay unused, updateLast stores a new record', async () => {
    const dir = tmpDir();
    await writeAndClose(dir, 300, 4096);
    const modelDir = path.join(dir, 'm');
    const files = segFiles(modelDir);
    expect(files.length).toBeGreaterThan(2);
    fs.rmSync(path.join(modelDir, files[files.length - 1]));
    let store = await openStore(dir, { segmentBytesMax: 4096 });
    let log = await openModel(store);
    const kept = await allIds(log);
    const lastKept = kept[kept.length - 1];
    expect(kept).toEqual(range(1, lastKept));
    expect(log.recovery.lostRanges).toEqual([{ fromId: lastKept + 1, toId: 300 }]);
    expect(log.latest()).toMatchObject({ id: lastKept, seq: lastKept });
    expect(log.updateLast({ seq: -1 })).toBe(301);
    expect(log.latest()).toMatchObject({ id: 301, seq: -1, dev: rec(lastKept).dev });
    expect((await log.page({ current: 1, size: 1, order: 'desc' })).records[0]).toMatchObject({ id: 301, seq: -1 });
    await log.durable();
    await store.close();

    store = await openStore(dir, { segmentBytesMax: 4096 });
    log = await openModel(store);
    expect(log.findingsAtOpen().lostRanges).toEqual([]);
    expect(log.findings()?.lostRanges).toEqual([{ fromId: lastKept + 1, toId: 300 }]);
    await log.acknowledgeFindings();
    await store.close();

    store = await openStore(dir, { segmentBytesMax: 4096 });
    log = await openModel(store);
    expect(log.findings()).toBeUndefined();
    expect(await allIds(log)).toEqual([...range(1, lastKept), 301]);
    expect(log.save(rec(302))).toBe(302);
    await store.close();
  });

  it('the knowledge survives a second open before any new record', async () => {
    const dir = tmpDir();
    await writeAndClose(dir, 10);
    fs.truncateSync(path.join(dir, 'm', segFiles(path.join(dir, 'm'))[0]), 32);
    let store = await openStore(dir);
    await openModel(store);
    await store.close();
    store = await openStore(dir);
    const log = await openModel(store);
    expect(log.save(rec(11))).toBe(11);
    await store.close();
  });
});
