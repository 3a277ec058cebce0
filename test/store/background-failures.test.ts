/**
 * Work the store does in the background has no caller to throw to: its failures reach the operator's
 * log through StoreHooks.warn, with the model and the error, instead of vanishing.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyIo, allIds, frameOffsets, openModel, openStore, rec, removeTmpDirs, segFiles, sleep, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

/** Fails the file operations named in `failing` with EIO. */
class FailingIo extends FaultyIo {
  readonly failing = new Set<'remove' | 'replaceFile' | 'ftruncate'>();

  override remove(target: string): Promise<void> {
    return this.failing.has('remove') ? Promise.reject(eio('unlink', target)) : super.remove(target);
  }

  override replaceFile(file: string, data: Buffer): Promise<void> {
    return this.failing.has('replaceFile') ? Promise.reject(eio('open', file)) : super.replaceFile(file, data);
  }

  override ftruncate(fd: number, len: number): Promise<void> {
    return this.failing.has('ftruncate') ? Promise.reject(eio('ftruncate', String(fd))) : super.ftruncate(fd, len);
  }
}

function eio(syscall: string, what: string): Error {
  return Object.assign(new Error(`EIO: i/o error, ${syscall} '${what}'`), { code: 'EIO' });
}

// A ceiling: the background pass is waited for, however long a busy machine makes it take.
async function until(cond: () => boolean, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await sleep(10);
}

describe('background failures are logged', () => {
  it('a retention pass after a seal that fails', async () => {
    const io = new FailingIo();
    io.failing.add('remove');
    const warnings: string[] = [];
    const retention = { maxRecords: 5, maxBytes: 0, maxAgeMs: 0 };
    const store = await openStore(tmpDir(), { segmentBytesMax: 500, durability: 'none', retention }, { fileIo: io, warn: (m) => warnings.push(m) });
    const log = await openModel(store);
    for (let i = 1; i <= 40; i++) log.save(rec(i));
    await log.durable();
    await until(() => warnings.length > 0);
    expect(warnings[0]).toMatch(/^model m: retention after a seal failed: EIO: i\/o error, unlink '.*seg-0000000001\.log'$/);
    await store.close();
  });

  it('a FINDINGS write after a read found a lost record', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 500, durability: 'none' });
    const log = await openModel(store);
    for (let i = 1; i <= 40; i++) log.save(rec(i));
    await store.close();
    const file = `${dir}/m/${segFiles(`${dir}/m`)[1]}`;
    const b = fs.readFileSync(file);
    b[frameOffsets(file)[1] + 30] ^= 0x10;
    fs.writeFileSync(file, b);
    const io = new FailingIo();
    io.failing.add('replaceFile');
    const warnings: string[] = [];
    const again = await openStore(dir, { segmentBytesMax: 500, durability: 'none' }, { fileIo: io, warn: (m) => warnings.push(m) });
    await allIds(await openModel(again));
    await until(() => warnings.length > 1);
    expect(warnings).toEqual([
      expect.stringMatching(/^model m: record \d+ is lost: a read found its stored frame damaged/),
      expect.stringMatching(/^model m: FINDINGS could not be written: EIO: i\/o error, open '.*FINDINGS'$/),
    ]);
    io.failing.clear();
    await again.close();
  });

  it('the cut-back of a failed write that fails', async () => {
    const io = new FailingIo();
    const warnings: string[] = [];
    const store = await openStore(tmpDir(), { durability: 'none' }, { fileIo: io, warn: (m) => warnings.push(m), readOnlyRetryMs: 20 });
    const log = await openModel(store);
    io.failWrites = 'ENOSPC';
    io.partialBytes = 10;
    io.failing.add('ftruncate');
    log.save(rec(1));
    await until(() => warnings.length > 0);
    expect(warnings[0]).toBe('model m: cutting back a failed write failed: I/O error (EIO) on ftruncate');
    io.failWrites = undefined;
    io.failing.clear();
    await log.durable();
    expect(await allIds(log)).toEqual([1]);
    await store.close();
  });
});
