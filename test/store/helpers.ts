import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Store, type StoreHooks } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { NodeFileIo, nodeFileIo } from '../../src/store/base/file-io.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { StoreOptions } from '../../src/store/base/types.js';

export const FIELDS = ['temp', 'hum', 'status', 'dev', 'ok', 'seq'] as const;

export function rec(i: number): Record<string, unknown> {
  return { temp: 20 + (i % 7) / 2, hum: i % 100, status: i % 3 === 0 ? 'run' : 'idle', dev: `dev-${i % 5}`, ok: i % 2 === 0, seq: i };
}

const dirs: string[] = [];

export function tmpDir(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'store-test-'));
  dirs.push(d);
  return d;
}

export function removeTmpDirs(): void {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/**
 * A store for tests that read, count or damage the bytes of `.log` files: sealed segments stay as written
 * unless `compactSealed` is passed (compaction.test.ts and compaction-corruption.test.ts cover `.zlog`s).
 */
export async function openStore(rootDir: string, o: Partial<StoreOptions> = {}, hooks: StoreHooks = {}): Promise<Store> {
  return Store.open(storeOptions({ rootDir, compactSealed: false, ...o }), hooks);
}

export async function openModel(store: Store, id = 'm'): Promise<ModelLog> {
  return store.openModel(id, { fields: [...FIELDS] });
}

export async function allIds(log: ModelLog): Promise<number[]> {
  const ids: number[] = [];
  for await (const r of log.iterate({ select: ['id'] })) ids.push(r.id as number);
  return ids;
}

export function range(a: number, b: number): number[] {
  return Array.from({ length: Math.max(0, b - a + 1) }, (_, i) => a + i);
}

/** A FileIo that counts fdatasyncs and can be switched to fail writes or syncs with an errno. */
export class FaultyIo extends NodeFileIo {
  syncs = 0;
  writes = 0;
  failWrites: string | undefined;
  failSyncs: string | undefined;
  /** Bytes a failing write still puts on disk before it fails (a torn write). */
  partialBytes = 0;

  override async writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    this.writes++;
    if (this.failWrites) {
      if (this.partialBytes > 0) await nodeFileIo.writev(fd, [Buffer.concat(bufs).subarray(0, this.partialBytes)], pos);
      throw Object.assign(new Error(`injected ${this.failWrites}`), { code: this.failWrites });
    }
    return nodeFileIo.writev(fd, bufs, pos);
  }

  override async fdatasync(fd: number): Promise<void> {
    if (this.failSyncs) throw Object.assign(new Error(`injected ${this.failSyncs}`), { code: this.failSyncs });
    this.syncs++;
    await nodeFileIo.fdatasync(fd);
  }
}

/**
 * Bytes of a segment writev that are frames: a last buffer of zeros is what the writer writes ahead to
 * preallocate the file (sync = always; a frame never is all zeros).
 */
export function frameBytesOf(bufs: readonly Buffer[]): number {
  let total = 0;
  for (const b of bufs) total += b.length;
  const last = bufs[bufs.length - 1];
  return bufs.length > 1 && last.every((x) => x === 0) ? total - last.length : total;
}

export function segFiles(dir: string): string[] {
  return fs.readdirSync(dir).filter((n) => n.endsWith('.log')).sort();
}

/** Offsets of the frames of a segment file, walking the length words (test files are not corrupt yet). */
export function frameOffsets(file: string): number[] {
  const b = fs.readFileSync(file);
  const out: number[] = [];
  for (let off = 32; off + 8 <= b.length; off += b.readUInt32LE(off) + 8) out.push(off);
  return out;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
