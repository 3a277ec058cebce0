/**
 * One model's log: the public write and read API over a generation (generation.ts: segments, writer with
 * its write buffer, manifest). clear() swaps in a fresh generation at once, so writes made after the call
 * land in the new, empty log with ids from 1. Background work (checkpoint and retention timers, retention
 * after a seal) has no caller to fail to: its failures go to the store's `warn`.
 */
import path from 'node:path';
import { Packr } from 'msgpackr';
import { FRAME_SAVE, FRAME_SUPERSEDE, type FrameType } from './frame.js';
import { Segment, newestRecordId } from './segment.js';
import { Generation, type GenerationConfig } from './generation.js';
import { LatencyHistogram } from './latency.js';
import { addLostRange, createModelDirSync, openModelDirSync } from './recovery.js';
import { HeldSegments, bytesOf, decodeValues, fitRange, planParts, projection, readPlanned, readRange } from './reader.js';
import { toView, validatePage, type Projection } from './reader.js';
import { applyRetention, totalBytes } from './retention.js';
import { SerialQueue } from '../util/atomic-file.js';
import type { FileIo } from './file-io.js';
import type { SealedFdCache } from './sealed-fds.js';
import { FindingsBook } from './findings.js';
import { AgeClock } from './age-clock.js';
import {
  CHECKPOINT_INTERVAL_MS,
  CLOCK_JUMP_MAX_MS_DEFAULT,
  ITERATE_CHUNK_RECORDS,
  LATEST_PROJECTIONS_MAX,
  MIB,
  PAGE_BYTES_MAX,
  RECORD_BYTES_MAX,
  RETENTION_CHECK_INTERVAL_MS,
  WRITE_QUEUE_BYTES_MAX,
  validateRetention,
} from './constants.js';
import type {
  ExportRange,
  Durability,
  ModelLogState,
  ModelLogStats,
  PageQuery,
  PageResult,
  RecordView,
  RecoveryFindings,
  RecoveryReport,
  RetentionLimits,
  StoreOptions,
} from './types.js';
import type { StoredFields } from './fields-file.js';
import { InvalidArgumentError, PayloadTooLargeError, UnavailableError } from '../errors.js';

export interface ModelLogConfig {
  dir: string;
  modelId: string;
  fields: readonly string[];
  /** The fields' types, kept in FIELDS so a retyped model definition is refused; optional for callers without types. */
  types?: readonly string[];
  options: StoreOptions;
  retention: RetentionLimits;
  io: FileIo;
  readOnlyRetryMs: number;
  /** Where clear() parks the old directory before deleting it. */
  trashDir: () => string;
  /** Notes for the operator's log: age retention waiting for a steady clock, failures of background work. */
  warn: (message: string) => void;
  /** The store's budget of fds for sealed segments, shared by all models. */
  sealedFds: SealedFdCache;
}

export class ModelLog {
  readonly modelId: string;
  readonly fields: readonly string[];
  readonly recovery: RecoveryReport;
  private gen: Generation;
  private readonly genConfig: GenerationConfig;
  private retention: RetentionLimits;
  private readonly packr = new Packr({ useRecords: false });
  private readonly fieldIndex: Map<string, number>;
  private readonly fullProjection: Projection;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Kept across generations (clear), so the counts only grow. */
  private readonly fsyncLatency = new LatencyHistogram();
  private retentionRun: Promise<void> | undefined;
  private readonly clears = new SerialQueue();
  private closed = false;
  private readonly findingsBook: FindingsBook;
  private readonly ageClock: AgeClock;
  private readonly onLost = (fromId: number, toId: number): void => {
    addLostRange(this.recovery.lostRanges, fromId, toId);
    this.findingsBook.lost(fromId, toId);
  };

  private constructor(private readonly c: ModelLogConfig) {
    this.modelId = c.modelId;
    this.fields = Object.freeze([...c.fields]);
    this.fieldIndex = new Map(this.fields.map((f, i) => [f, i]));
    this.fullProjection = projection(this.fields, undefined);
    this.retention = c.retention;
    const opened = openModelDirSync(c.io, c.dir, c.modelId, storedFields(this.c), c.sealedFds);
    this.recovery = opened.report;
    const warn = (m: string): void => c.warn(`model ${c.modelId}: ${m}`);
    this.findingsBook = new FindingsBook(c.io, c.dir, opened.report, warn);
    this.ageClock = new AgeClock(c.options.clockJumpMaxMs ?? CLOCK_JUMP_MAX_MS_DEFAULT, warn);
    this.genConfig = {
      modelId: c.modelId,
      dir: c.dir,
      io: c.io,
      options: c.options,
      retryMs: c.readOnlyRetryMs,
      onSealed: () => this.inBackground('retention after a seal', () => this.enforceRetention()),
      fsyncLatency: this.fsyncLatency,
      sealedFds: c.sealedFds,
      warn: c.warn,
      gapReported: (fromId, toId) => this.recovery.lostRanges.some((r) => r.fromId <= fromId && r.toId >= toId),
    };
    this.gen = new Generation(this.genConfig, opened.segments, opened.manifest, false);
    this.gen.loadNewest();
    this.timers.push(setInterval(() => this.inBackground('checkpoint', () => this.checkpoint()), CHECKPOINT_INTERVAL_MS));
    this.timers.push(setInterval(() => this.inBackground('retention', () => this.enforceRetention()), RETENTION_CHECK_INTERVAL_MS));
    for (const t of this.timers) t.unref();
  }

  static open(c: ModelLogConfig): ModelLog {
    return new ModelLog(c);
  }

  /** When durable() resolves: after the write (none), the next interval sync (interval) or the sync of the write (always). */
  get durability(): Durability {
    return this.c.options.durability;
  }

  get state(): ModelLogState {
    return this.gen.writer.state;
  }

  save(record: Record<string, unknown>): number {
    const g = this.writable();
    const n = this.fields.length;
    const values = new Array<unknown>(n);
    for (let i = 0; i < n; i++) values[i] = record[this.fields[i]] ?? null;
    return this.append(g, FRAME_SAVE, g.nextId, this.ageClock.recordTs(Date.now(), g.lastTs), values);
  }

  updateLast(fields: Record<string, unknown>): number {
    const g = this.writable();
    if (g.lastValues === undefined) return this.save(fields);
    const values = g.lastValues.slice();
    for (const k of Object.keys(fields)) {
      const i = this.fieldIndex.get(k);
      if (i === undefined) throw new InvalidArgumentError(`updateLast: unknown field ${JSON.stringify(k)}`);
      if (fields[k] !== undefined) values[i] = fields[k];
    }
    // The newest id handed out lost its record (recovery): the update becomes a new record.
    if (g.lastId !== g.nextId - 1) return this.append(g, FRAME_SAVE, g.nextId, this.ageClock.recordTs(Date.now(), g.lastTs), values);
    return this.append(g, FRAME_SUPERSEDE, g.lastId, g.lastTs, values);
  }

  /**
   * Resolves once every write so far (id given or not) is durable under the store's durability mode.
   * While the model is read-only (disk full) it waits for space to return, unless
   * `rejectWhenReadOnly`: then it rejects with StoreReadOnlyError; the records stay accepted in memory
   * and are written when space returns.
   */
  durable(id?: number, options: { rejectWhenReadOnly?: boolean } = {}): Promise<void> {
    if (id !== undefined && (!Number.isSafeInteger(id) || id < 0)) {
      return Promise.reject(new InvalidArgumentError(`durable: id must be a non-negative integer, got ${id}`));
    }
    return this.gen.writer.durable(options.rejectWhenReadOnly === true);
  }

  async page(q: PageQuery): Promise<PageResult> {
    const p = validatePage(q, this.fields);
    const g = this.gen;
    const firstId = g.segments[0].firstId;
    const lastId = newestRecordId(g.segments);
    const total = Math.max(0, lastId - firstId + 1);
    const skip = (q.current - 1) * q.size;
    const lo = q.order === 'asc' ? firstId + skip : Math.max(firstId, lastId - skip - q.size + 1);
    const hi = q.order === 'asc' ? Math.min(lastId, firstId + skip + q.size - 1) : lastId - skip;
    if (lo > hi) return { total, records: [] };
    const plan = planParts(g.segments, lo, hi);
    const bytes = bytesOf(plan);
    if (bytes > PAGE_BYTES_MAX) {
      throw new InvalidArgumentError(
        `size: a page of ${q.size} records here reads ${Math.ceil(bytes / MIB)} MiB of stored records, more than the ` +
          `${PAGE_BYTES_MAX / MIB} MiB a page may; ask for fewer records per page`,
      );
    }
    const recs = await readPlanned(this.c.io, g.buffer, plan, this.onLost);
    const records = recs.map((r) => toView(p, r.id, r.ts, decodeValues(r.payload)));
    if (q.order === 'desc') records.reverse();
    return { total, records };
  }

  latest(select?: readonly string[]): RecordView | undefined {
    const g = this.gen;
    if (g.lastValues === undefined) return undefined;
    if (select === undefined) {
      g.lastView ??= Object.freeze(toView(this.fullProjection, g.lastId, g.lastTs, g.lastValues));
      return g.lastView;
    }
    if (!Array.isArray(select)) throw new InvalidArgumentError('select must be an array of field names');
    const key = select.join('\u0000');
    let v = g.lastProjected.get(key);
    if (!v) {
      v = Object.freeze(toView(projection(this.fields, select), g.lastId, g.lastTs, g.lastValues));
      if (g.lastProjected.size >= LATEST_PROJECTIONS_MAX) g.lastProjected.clear();
      g.lastProjected.set(key, v);
    }
    return v;
  }

  /** Pulls ITERATE_CHUNK_RECORDS at a time over a snapshot (last id, segment list) taken at the start. */
  async *iterate(range: ExportRange = {}): AsyncGenerator<RecordView, void, undefined> {
    const p = projection(this.fields, range.select);
    const g = this.gen;
    const held = new HeldSegments(g.segments);
    try {
      const segments = held.segments;
      const a = Math.max(range.fromId ?? 1, segments[0].firstId);
      const b = Math.min(range.toId ?? Number.MAX_SAFE_INTEGER, g.nextId - 1);
      for (let lo = a; lo <= b; ) {
        held.releaseBefore(lo);
        const hi = fitRange(segments, lo, Math.min(b, lo + ITERATE_CHUNK_RECORDS - 1), PAGE_BYTES_MAX);
        const recs = await readRange(this.c.io, g.buffer, segments, lo, hi, this.onLost);
        for (const r of recs) yield toView(p, r.id, r.ts, decodeValues(r.payload));
        lo = hi + 1;
      }
    } finally {
      held.releaseAll();
    }
  }

  /** The swap happens now; the old generation's files are retired in the background, one clear at a time. */
  clear(): Promise<void> {
    if (this.closed) return Promise.reject(new UnavailableError(`model ${this.modelId} is closed`));
    this.findingsBook.forget();
    const old = this.gen;
    const fresh = new Generation(this.genConfig, [new Segment(1, 1, Date.now())], undefined, true);
    this.gen = fresh;
    return this.clears.run(() => this.clearNow(old, fresh));
  }

  /** Losses found at open or by reads that nobody has acknowledged; undefined when there are none. */
  findings(): RecoveryFindings | undefined {
    return this.findingsBook.get();
  }

  /** What this open found that was not reported or acknowledged before (the operator's log says it once). */
  findingsAtOpen(): Pick<RecoveryReport, 'truncatedBytes' | 'lostRanges'> {
    return this.findingsBook.newAtOpen;
  }

  /** The operator has seen the findings: forget them (also on disk). */
  acknowledgeFindings(): Promise<void> {
    return this.findingsBook.acknowledge();
  }

  setRetention(limits: RetentionLimits): void {
    validateRetention(limits);
    this.retention = { ...limits };
  }

  enforceRetention(nowMs = Date.now()): Promise<void> {
    this.retentionRun ??= this.retentionNow(nowMs).finally(() => (this.retentionRun = undefined));
    return this.retentionRun;
  }

  stats(): ModelLogStats {
    const g = this.gen;
    const w = g.writer;
    const firstId = g.segments[0].firstId;
    const lastId = newestRecordId(g.segments);
    return {
      state: w.state,
      total: Math.max(0, lastId - firstId + 1),
      firstId,
      lastId,
      nextId: g.nextId,
      segments: g.segments.length,
      bytes: totalBytes(g.segments),
      pendingSyncBytes: w.pendingSyncBytes,
      recoveryTruncatedBytes: this.findingsBook.get()?.truncatedBytes ?? 0,
      recoveryLostIds: this.findingsBook.get()?.lostIds ?? 0,
      fsync: this.fsyncLatency.snapshot(),
      ...(w.lastError !== undefined ? { lastError: w.lastError } : {}),
      ...(w.readOnlySinceMs !== undefined ? { readOnlySinceMs: w.readOnlySinceMs } : {}),
    };
  }

  /** Flush, fdatasync, index of the active segment and a clean manifest: the next open does not scan. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.clears.run(async () => {});
    await this.retentionEnded();
    await this.gen.close();
  }

  /**
   * Stops without flushing, like a kill -9 of the process: only what reached the kernel stays. The file
   * operation in flight finishes first (a killed process either made its syscall or did not), so nothing
   * of this incarnation touches the files after it returns.
   */
  async abandon(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.clears.run(async () => {});
    await this.retentionEnded();
    await this.gen.writer.stop();
    await this.gen.release();
  }

  private writable(): Generation {
    const g = this.gen;
    if (this.closed) throw new UnavailableError(`model ${this.modelId} is closed`);
    if (g.writer.state !== 'ok') throw g.writer.readOnlyError();
    if (g.writer.queuedBytes > WRITE_QUEUE_BYTES_MAX) {
      throw new UnavailableError(`write queue of model ${this.modelId} is full (${WRITE_QUEUE_BYTES_MAX} bytes)`);
    }
    return g;
  }

  private append(g: Generation, type: FrameType, id: number, ts: number, values: unknown[]): number {
    const payload = this.packr.pack(values);
    if (payload.length > RECORD_BYTES_MAX) {
      throw new PayloadTooLargeError(`record of ${payload.length} bytes exceeds ${RECORD_BYTES_MAX} bytes`);
    }
    return g.append(type, id, ts, values, payload);
  }

  /** A retention pass in flight has ended; its failure is its caller's (enforceRetention) or logged (inBackground). */
  private async retentionEnded(): Promise<void> {
    await this.retentionRun?.then(
      () => undefined,
      () => undefined,
    );
  }

  /** Work no caller waits for: a failure is logged, unless a close, drop or clear overtook the work. */
  private inBackground(what: string, work: () => Promise<void>): void {
    const g = this.gen;
    work().catch((e: unknown) => {
      if (this.closed || g !== this.gen) return;
      this.c.warn(`model ${this.modelId}: ${what} failed: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  /**
   * fdatasync, then record in the manifest how far the active segment is synced: recovery trusts the
   * data before that offset and ends the log at the first bad frame after it. Runs on a timer too.
   */
  checkpoint(): Promise<void> {
    return this.gen.checkpoint();
  }

  private async retentionNow(nowMs: number): Promise<void> {
    const g = this.gen;
    if (!g.manifest || this.closed) return;
    const r = this.retention;
    const limits = r.maxAgeMs > 0 && !this.ageClock.trusted(nowMs, g.lastTs) ? { ...r, maxAgeMs: 0 } : r;
    await applyRetention(this.c.io, this.c.dir, g.segments, g.manifest, limits, nowMs);
  }

  /**
   * NATS purge pattern: the directory is renamed to trash (atomic), then recreated empty. A crash before
   * the rename keeps the old data, after it the model opens empty; open finishes removing the trash.
   */
  private async clearNow(old: Generation, fresh: Generation): Promise<void> {
    await this.retentionEnded();
    await old.writer.drain();
    old.writer.close();
    await old.release();
    // A generation that a later clear replaced before it got a directory never had one.
    const trash = old.manifest ? this.c.trashDir() : undefined;
    if (trash) {
      await this.c.io.rename(this.c.dir, trash);
      await this.c.io.fsyncDir(path.dirname(this.c.dir));
    }
    if (this.gen === fresh) {
      fresh.manifest = createModelDirSync(this.c.io, this.c.dir, fresh.segments[0], storedFields(this.c));
      fresh.writer.unblock();
    }
    if (trash) await this.c.io.remove(trash);
  }
}

function storedFields(c: ModelLogConfig): StoredFields {
  return c.types === undefined ? { names: c.fields } : { names: c.fields, types: c.types };
}
