/**
 * A model's new data built beside the live one, then swapped in by renames (restore, import). The
 * staging directory `<root>/.staging-<modelId>-…` is garbage until its one commit point, the rename to
 * `<root>/.ready-<modelId>`: `Store.open` deletes leftover staging directories, and whoever opens the
 * store next finishes a ready one (`Store.adoptReady`). The ready directory carries `RESTORE.json`, what
 * the caller needs to finish the swap (the model definition); it stays in the model directory until
 * the caller has recorded it and calls `clearRestoreMarker`, so a crash in between repeats that step.
 * See docs/storage-format.md "Restore and import".
 */
import fs from 'node:fs';
import path from 'node:path';
import { ModelLog } from './log/model-log.js';
import { createModelDirSync } from './recovery/recovery.js';
import { Segment } from './segment/segment.js';
import type { FileIo } from './base/file-io.js';
import type { SealedFdCache } from './base/sealed-fds.js';
import type { ModelSpec, StoreOptions } from './base/types.js';
import { fsyncDir, writeFileAtomic } from '../util/atomic-file.js';

export const STAGING_PREFIX = '.staging-';
export const READY_PREFIX = '.ready-';
export const RESTORE_MARKER = 'RESTORE.json';

/** Records between two waits for the writer, so the write queue stays far below its cap. */
const SETTLE_EVERY_RECORDS = 50_000;

export interface StagingConfig {
  rootDir: string;
  dir: string;
  modelId: string;
  spec: ModelSpec;
  options: StoreOptions;
  io: FileIo;
  sealedFds: SealedFdCache;
  readOnlyRetryMs: number;
  warn: (message: string) => void;
}

/** A model log being written in a staging directory with the ids and timestamps it is given. */
export class StagingLog {
  private log: ModelLog | undefined;
  private sinceSettle = 0;
  /** The writes of the last settled batch, until they are awaited. */
  private written: Promise<void> | undefined;
  private done = false;
  /** Records appended so far. */
  count = 0;

  constructor(private readonly c: StagingConfig) {}

  /** The directory is created at the first record, whose id becomes the log's first id. */
  append(id: number, tsMs: number, record: Record<string, unknown>): void {
    const log = this.log ?? this.open(id);
    log.appendStored(id, tsMs, record);
    this.count++;
    this.sinceSettle++;
  }

  /** Enough was appended since the last settle() that the writer should catch up. */
  get due(): boolean {
    return this.sinceSettle >= SETTLE_EVERY_RECORDS;
  }

  /**
   * Waits for the writer when it is due, but only for the writes of the batch before this one: the
   * writer (libuv threads) writes one batch while the caller parses the next, and at most two batches
   * are ever queued, so memory stays constant for any size.
   */
  async settle(): Promise<void> {
    if (!this.due || this.log === undefined) return;
    this.sinceSettle = 0;
    const previous = this.written;
    const now = this.log.durable();
    // Awaited by the next settle or by commit; a rejection before then must not be an unhandled one.
    now.catch(() => {});
    this.written = now;
    await previous;
  }

  /**
   * Closes the log cleanly (everything fdatasync'ed), writes `marker` as RESTORE.json and renames the
   * directory to `.ready-<modelId>`: from here on the swap happens, now or at the next open.
   */
  async commit(marker: unknown): Promise<string> {
    const log = this.log ?? this.open(1);
    await this.written;
    this.done = true;
    await log.close();
    await writeFileAtomic(path.join(this.c.dir, RESTORE_MARKER), JSON.stringify(marker));
    await fsyncDir(this.c.dir);
    const ready = readyPath(this.c.rootDir, this.c.modelId);
    await fs.promises.rm(ready, { recursive: true, force: true });
    await fs.promises.rename(this.c.dir, ready);
    await fsyncDir(this.c.rootDir);
    return ready;
  }

  /** Throws the staged data away (bad input, client gone). Safe to call after commit (does nothing). */
  async discard(): Promise<void> {
    if (this.done) return;
    this.done = true;
    await this.log?.abandon();
    await fs.promises.rm(this.c.dir, { recursive: true, force: true });
  }

  private open(firstId: number): ModelLog {
    const c = this.c;
    // The directory is laid out as a new model's whose ids start at `firstId`; the log then opens it.
    const first = new Segment(1, firstId, Date.now());
    const manifest = createModelDirSync(c.io, c.dir, first, storedFieldsOf(c.spec));
    first.file.retire();
    void manifest.close();
    this.log = ModelLog.open({
      dir: c.dir,
      modelId: c.modelId,
      fields: c.spec.fields,
      ...(c.spec.types === undefined ? {} : { types: c.spec.types }),
      // Durable once, at commit (close fdatasyncs): a crash before it leaves garbage that open deletes.
      options: { ...c.options, durability: 'none', compactSealed: false },
      retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
      io: c.io,
      readOnlyRetryMs: c.readOnlyRetryMs,
      trashDir: () => `${c.dir}.trash`,
      warn: c.warn,
      sealedFds: c.sealedFds,
    });
    return this.log;
  }
}

export function readyPath(rootDir: string, modelId: string): string {
  return path.join(rootDir, `${READY_PREFIX}${modelId}`);
}

function storedFieldsOf(spec: ModelSpec): { names: readonly string[]; types?: readonly string[] } {
  return spec.types === undefined ? { names: spec.fields } : { names: spec.fields, types: spec.types };
}

/** Model ids with a committed ready directory, to be swapped in. */
export async function readyModelIds(rootDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.promises.readdir(rootDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  return names.filter((n) => n.startsWith(READY_PREFIX)).map((n) => n.slice(READY_PREFIX.length));
}

/**
 * The swap: the model's directory (if any) goes to `trash`, the ready one takes its name, then the root
 * is fsynced. Repeating it after a crash at any step ends the same way (a crash after the first rename
 * leaves the trash, which `Store.open` deletes, and the ready directory, which the next call moves).
 */
export async function swapReady(rootDir: string, modelId: string, trash: string): Promise<void> {
  const dir = path.join(rootDir, modelId);
  try {
    await fs.promises.rename(dir, trash);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  await fs.promises.rename(readyPath(rootDir, modelId), dir);
  await fsyncDir(rootDir);
  await fs.promises.rm(trash, { recursive: true, force: true });
}

/** The RESTORE.json of every model directory that still has one (the caller has not recorded it yet). */
export async function restoreMarkers(rootDir: string, modelIds: readonly string[]): Promise<Array<{ modelId: string; marker: unknown }>> {
  const out: Array<{ modelId: string; marker: unknown }> = [];
  for (const modelId of modelIds) {
    let text: string;
    try {
      text = await fs.promises.readFile(path.join(rootDir, modelId, RESTORE_MARKER), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw e;
    }
    out.push({ modelId, marker: JSON.parse(text) as unknown });
  }
  return out;
}

export async function clearRestoreMarker(rootDir: string, modelId: string): Promise<void> {
  const dir = path.join(rootDir, modelId);
  await fs.promises.rm(path.join(dir, RESTORE_MARKER), { force: true });
  await fsyncDir(dir);
}
