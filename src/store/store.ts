/**
 * The store: a root directory with one sub-directory per model. Opening the store only prepares the root
 * and finishes interrupted clears and drops (leftover `.trash-*` directories); models open on demand.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ModelLog } from './log/model-log.js';
import { validateFields } from './segment/field-layout.js';
import { DirLock } from './base/dir-lock.js';
import { type FileIo, nodeFileIo } from './base/file-io.js';
import { SealedFdCache } from './base/sealed-fds.js';
import { DiskReserve } from './retention/disk-reserve.js';
import { STAGING_PREFIX, StagingLog, clearRestoreMarker, readyModelIds, restoreMarkers, swapReady } from './staging.js';
import { fsyncDir, mkdirDurable } from '../util/atomic-file.js';
import {
  READ_ONLY_RETRY_MS_DEFAULT,
  SEALED_FDS_MAX_DEFAULT,
  validateModelId,
  validateRetention,
  validateStoreOptions,
} from './base/constants.js';
import type { ModelSpec, StoreOptions } from './base/types.js';
import { InvalidArgumentError } from '../errors.js';

export interface StoreHooks {
  /** The file layer of the write path; tests wrap it to inject ENOSPC/EIO or count fdatasync calls. */
  fileIo?: FileIo;
  /** How often a read-only model retries its pending writes (default 1000 ms). */
  readOnlyRetryMs?: number;
  /** Where notes for the operator go (default: nowhere). */
  warn?: (message: string) => void;
}

const TRASH_PREFIX = '.trash-';

export class Store {
  private readonly models = new Map<string, ModelLog>();
  private trashSeq = 0;
  private closed = false;
  /** One budget for every model: the number of segments never decides how many files are open. */
  private readonly sealedFds: SealedFdCache;
  /** Free space on the store's filesystem against `diskReserveBytes` (contract 14). */
  readonly disk: DiskReserve;

  private constructor(
    readonly options: StoreOptions,
    private readonly io: FileIo,
    private readonly readOnlyRetryMs: number,
    private readonly lock: DirLock,
    /** Where notes for the operator go (StoreHooks.warn); the registry's background work on the store's logs uses it too. */
    readonly warn: (message: string) => void,
  ) {
    this.sealedFds = new SealedFdCache(options.sealedFdsMax ?? SEALED_FDS_MAX_DEFAULT);
    this.disk = new DiskReserve(options.rootDir, options.diskReserveBytes ?? 0, warn);
    this.disk.start();
  }

  static async open(options: StoreOptions, hooks: StoreHooks = {}): Promise<Store> {
    validateStoreOptions(options);
    const opts: StoreOptions = { ...options, retention: { ...options.retention } };
    await mkdirDurable(opts.rootDir);
    const lock = DirLock.acquire(opts.rootDir);
    for (const name of await fs.promises.readdir(opts.rootDir)) {
      if (name.startsWith(TRASH_PREFIX) || name.startsWith(STAGING_PREFIX)) await fs.promises.rm(path.join(opts.rootDir, name), { recursive: true, force: true });
    }
    return new Store(opts, hooks.fileIo ?? nodeFileIo, hooks.readOnlyRetryMs ?? READ_ONLY_RETRY_MS_DEFAULT, lock, hooks.warn ?? (() => {}));
  }

  /** Creates or recovers the model's log; returns the open one when called again with the same fields. */
  async openModel(modelId: string, spec: ModelSpec): Promise<ModelLog> {
    validateModelId(modelId);
    validateFields(spec.fields);
    if (spec.retention) validateRetention(spec.retention);
    if (this.closed) throw new InvalidArgumentError('store is closed');
    const open = this.models.get(modelId);
    if (open) {
      if (open.fields.join('\u0000') !== spec.fields.join('\u0000')) {
        throw new InvalidArgumentError(`model ${modelId} is open with other fields; drop it first`);
      }
      return open;
    }
    const log = ModelLog.open({
      dir: path.join(this.options.rootDir, modelId),
      modelId,
      fields: spec.fields,
      ...(spec.types === undefined ? {} : { types: spec.types }),
      ...(spec.defaults === undefined ? {} : { defaults: spec.defaults }),
      options: this.options,
      retention: { ...(spec.retention ?? this.options.retention) },
      io: this.io,
      readOnlyRetryMs: this.readOnlyRetryMs,
      trashDir: () => this.trashPath(modelId),
      warn: this.warn,
      sealedFds: this.sealedFds,
      reserve: this.disk,
    });
    this.models.set(modelId, log);
    return log;
  }

  /** Ids of the model directories on disk, open or not. */
  async modelDirs(): Promise<string[]> {
    try {
      const entries = await fs.promises.readdir(this.options.rootDir, { withFileTypes: true });
      return entries.filter((e) => e.isDirectory() && !e.name.startsWith('.')).map((e) => e.name);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
  }

  model(modelId: string): ModelLog | undefined {
    return this.models.get(modelId);
  }

  /** Closes the model and deletes its directory: rename to trash first, so a crash never leaves half a model. */
  async dropModel(modelId: string): Promise<void> {
    validateModelId(modelId);
    const log = this.models.get(modelId);
    this.models.delete(modelId);
    if (log) await log.abandon();
    const dir = path.join(this.options.rootDir, modelId);
    const trash = this.trashPath(modelId);
    try {
      await fs.promises.rename(dir, trash);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    await fsyncDir(this.options.rootDir);
    await fs.promises.rm(trash, { recursive: true, force: true });
  }

  /** Restore and import: a log of `modelId` written in a staging directory, then committed and swapped in (staging.ts). */
  stage(modelId: string, spec: ModelSpec): StagingLog {
    validateModelId(modelId);
    validateFields(spec.fields);
    if (this.closed) throw new InvalidArgumentError('store is closed');
    return new StagingLog({
      rootDir: this.options.rootDir,
      dir: path.join(this.options.rootDir, `${STAGING_PREFIX}${modelId}-${Date.now()}-${this.trashSeq++}`),
      modelId,
      spec,
      options: this.options,
      io: this.io,
      sealedFds: this.sealedFds,
      readOnlyRetryMs: this.readOnlyRetryMs,
      warn: this.warn,
    });
  }

  /** Model ids whose committed restore or import waits for adoptReady (after a crash). */
  readyModels(): Promise<string[]> {
    return readyModelIds(this.options.rootDir);
  }

  /** Drops the open log of `modelId` (its data is being replaced) and swaps the committed directory in. */
  async adoptReady(modelId: string): Promise<void> {
    validateModelId(modelId);
    const log = this.models.get(modelId);
    this.models.delete(modelId);
    if (log) await log.abandon();
    await swapReady(this.options.rootDir, modelId, this.trashPath(modelId));
  }

  /** The RESTORE.json markers of swapped-in directories that the caller has not recorded yet. */
  async restoreMarkers(): Promise<Array<{ modelId: string; marker: unknown }>> {
    return restoreMarkers(this.options.rootDir, await this.modelDirs());
  }

  clearRestoreMarker(modelId: string): Promise<void> {
    validateModelId(modelId);
    return clearRestoreMarker(this.options.rootDir, modelId);
  }

  /** Flushes, fdatasyncs and marks every model clean. */
  async close(): Promise<void> {
    this.closed = true;
    this.disk.stop();
    const logs = [...this.models.values()];
    this.models.clear();
    try {
      await Promise.all(logs.map((l) => l.close()));
    } finally {
      this.lock.release();
    }
  }

  /** Test support: drops every model like a kill -9 (no flush, no clean flag). */
  async abandon(): Promise<void> {
    this.closed = true;
    this.disk.stop();
    const logs = [...this.models.values()];
    this.models.clear();
    await Promise.all(logs.map((l) => l.abandon()));
    this.lock.release();
  }

  private trashPath(modelId: string): string {
    return path.join(this.options.rootDir, `${TRASH_PREFIX}${modelId}-${Date.now()}-${this.trashSeq++}`);
  }
}
