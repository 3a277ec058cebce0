/**
 * One model's log: the public write and read API over a generation (generation.ts: segments, writer with
 * its write buffer, manifest). clear() swaps in a fresh generation at once, so writes made after the call
 * land in the new, empty log with ids from 1. Background work (checkpoint and retention timers, retention
 * after a seal) has no caller to fail to: its failures go to the store's `warn`.
 */
import path from 'node:path';
import { Packr, RESET_BUFFER_MODE } from 'msgpackr';
import { FRAME_SAVE, FRAME_SUPERSEDE, type FrameType } from '../format/frame.js';
import { Segment, newestRecordId } from '../segment/segment.js';
import { Generation, type GenerationConfig } from './generation.js';
import { LatencyHistogram } from '../base/latency.js';
import { addLostRange, createModelDirSync, openModelDirSync } from '../recovery/recovery.js';
import { HeldSegments, decodeValues } from '../read/reader.js';
import { packedArrayFits } from '../format/value-pack.js';
import { Compactor } from './compactor.js';
import { type ReadContext, idRangeOfTime, iterateRecords, latestOf, readLines, readPage, readPageJson } from './log-reads.js';
import type { LineFormat, RecordLines } from '../read/record-lines.js';
import type { Stamp } from '../read/record-json.js';
import type { RetentionFloor } from '../retention/retention.js';
import { LogRetention } from './log-retention.js';
import { newGeneration } from '../segment/generation-file.js';
import type { IdRange, TimeRange } from '../read/time-index.js';
import { aggregate, bucketSpan, type AggregateQuery, type Bucket } from '../aggregate/aggregate.js';
import { SummaryBook } from '../aggregate/summaries.js';
import { SerialQueue } from '../../util/atomic-file.js';
import type { FileIo } from '../base/file-io.js';
import type { SealedFdCache } from '../base/sealed-fds.js';
import { FindingsBook } from '../recovery/findings.js';
import { AgeClock } from '../retention/age-clock.js';
import { ID_MAX, createAtDomainRule, idDomainRule } from '../base/domain.js';
import { storedIdCount } from '../segment/id-spans.js';
import {
  CHECKPOINT_INTERVAL_MS,
  CLOCK_JUMP_MAX_MS_DEFAULT,
  RECORD_BYTES_MAX,
  RETENTION_CHECK_INTERVAL_MS,
  WRITE_QUEUE_BYTES_MAX,
  assert,
} from '../base/constants.js';
import type {
  ExportRange,
  Durability,
  ModelLogState,
  ModelLogStats,
  ModelSpec,
  PageQuery,
  PageJson,
  PageResult,
  RecordView,
  RecoveryFindings,
  RecoveryReport,
  RetentionLimits,
  StoreOptions,
} from '../base/types.js';
import type { VisibleFields } from '../segment/field-layout.js';
import { LogFields } from './log-fields.js';
import { InvalidArgumentError, PayloadTooLargeError, StoreReadOnlyError, UnavailableError } from '../../errors.js';
import type { DiskReserve } from '../retention/disk-reserve.js';

export interface ModelLogConfig {
  dir: string;
  modelId: string;
  fields: readonly string[];
  /** The fields' types: a field reads the stored column of its name and type (field-layout.ts). */
  types?: readonly string[];
  /** What each field reads in a record written before its column existed. */
  defaults?: readonly unknown[];
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
  /** Free space below `[store] disk_reserve_bytes` refuses writes like a read-only model. */
  reserve?: DiskReserve;
}

export class ModelLog {
  readonly modelId: string;
  /** Which stored column each field reads (log-fields.ts); replaced by setFields. */
  private fieldBook: LogFields;
  readonly recovery: RecoveryReport;
  private gen: Generation;
  private readonly genConfig: GenerationConfig;
  private readonly retention: LogRetention;
  private readonly packr = new Packr({ useRecords: false });
  private readonly timers: NodeJS.Timeout[] = [];
  /** Kept across generations (clear), so the counts only grow. */
  private readonly fsyncLatency = new LatencyHistogram();
  private readonly clears = new SerialQueue();
  private readonly compactor = new Compactor();
  private closed = false;
  /** Why save/updateLast are refused while a restore or import appends alone (see holdWrites). */
  private writesHeldFor: string | undefined;
  private readonly findingsBook: FindingsBook;
  /** Aggregation summaries of each generation (summaries.ts), dropped with it. */
  private readonly summaryBooks = new WeakMap<Generation, SummaryBook>();
  private readonly ageClock: AgeClock;
  /** Told when updateLast replaces a record under its id (the uplink sends it again). */
  private readonly supersedeListeners = new Set<(id: number) => void>();
  private readonly onLost = (fromId: number, toId: number): void => {
    addLostRange(this.recovery.lostRanges, fromId, toId);
    this.findingsBook.lost(fromId, toId);
  };
  /** What the reads (log-reads.ts) need, with the layout of the moment. */
  private get reads(): ReadContext {
    return { io: this.c.io, layout: this.fieldBook.layout, lost: this.onLost };
  }

  private constructor(private readonly c: ModelLogConfig) {
    this.modelId = c.modelId;
    const opened = openModelDirSync(c.io, c.dir, c.modelId, visibleOf(c), c.sealedFds);
    this.fieldBook = new LogFields(opened.columns, opened.layout);
    this.recovery = opened.report;
    const warn = (m: string): void => c.warn(`model ${c.modelId}: ${m}`);
    this.findingsBook = new FindingsBook(c.io, c.dir, opened.report, warn);
    this.ageClock = new AgeClock(c.options.clockJumpMaxMs ?? CLOCK_JUMP_MAX_MS_DEFAULT, warn);
    this.retention = new LogRetention(c.io, c.dir, c.retention, this.ageClock);
    this.genConfig = {
      modelId: c.modelId,
      dir: c.dir,
      io: c.io,
      options: c.options,
      retryMs: c.readOnlyRetryMs,
      onSealed: () => {
        this.inBackground('retention after a seal', () => this.enforceRetention());
        this.compact();
      },
      fsyncLatency: this.fsyncLatency,
      sealedFds: c.sealedFds,
      warn: c.warn,
      gapReported: (fromId, toId) => this.recovery.lostRanges.some((r) => r.fromId <= fromId && r.toId >= toId),
    };
    this.gen = new Generation(this.genConfig, opened.generation, opened.segments, opened.manifest, false);
    this.gen.loadNewest();
    this.compact();
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

  /** The fields a record shows, in the model's order. */
  get fields(): readonly string[] {
    return this.fieldBook.names;
  }

  /**
   * A published model's attributes changed through the API (contract 13): a field without a column gets
   * a new one, recorded in FIELDS before it is used, so a crash can only leave an unused column behind.
   */
  setFields(spec: Pick<ModelSpec, 'fields' | 'types' | 'defaults'>): void {
    if (this.closed) throw new UnavailableError(`model ${this.modelId} is closed`);
    const next = this.fieldBook.changed(this.modelId, this.c.dir, visibleOf(spec));
    // Summaries are kept per stored column: a new column needs a new book.
    if (next.columns !== this.fieldBook.columns) this.summaryBooks.delete(this.gen);
    this.fieldBook = next;
    this.gen.lastView = undefined;
    this.gen.lastProjected = new Map();
  }

  get state(): ModelLogState {
    return this.gen.writer.state !== 'ok' || this.c.reserve?.lowSince === undefined ? this.gen.writer.state : 'read-only';
  }

  save(record: Record<string, unknown>): number {
    const g = this.writable();
    return this.append(g, FRAME_SAVE, this.newId(g), this.clockTs(g), this.fieldBook.valuesOf(record));
  }

  /**
   * save() of the record whose keys are `keys` and whose values are the msgpack array bytes[start, end)
   * in their order (value-pack.ts): how the rules' batches arrive, without an object per record. Where
   * the fields are stored in the keys' order, those bytes are the payload; elsewhere they are decoded
   * and stored as save() stores them.
   */
  savePacked(keys: readonly string[], bytes: Buffer, start: number, end: number): number {
    const g = this.writable();
    if (!this.fieldBook.storesInKeyOrder(keys)) {
      return this.append(g, FRAME_SAVE, this.newId(g), this.clockTs(g), this.fieldBook.valuesFrom(keys, decodeValues(bytes.subarray(start, end)), 0));
    }
    const id = this.newId(g);
    const ts = this.clockTs(g);
    assert(packedArrayFits(bytes, start, end, keys.length), 'packed values are one array of record values, as many as their keys');
    if (end - start > RECORD_BYTES_MAX) throw this.tooLarge(end - start);
    return g.appendPacked(id, ts, bytes, start, end);
  }

  updateLast(fields: Record<string, unknown>): number {
    const g = this.writable();
    if (g.lastValues === undefined) return this.save(fields);
    const values = this.fieldBook.updated(g.lastValues, fields, 'updateLast');
    // The newest id handed out lost its record (recovery): the update becomes a new record.
    if (g.lastId !== g.nextId - 1) return this.append(g, FRAME_SAVE, this.newId(g), this.clockTs(g), values);
    const id = this.append(g, FRAME_SUPERSEDE, g.lastId, g.lastTs, values);
    for (const listener of this.supersedeListeners) listener(id);
    return id;
  }

  /**
   * `listener(id)` runs synchronously each time updateLast replaces the record `id` (of the current
   * generation) by a newer version; returns the function that stops it. For the fleet uplink, which
   * sends a record again when it changed after it was read.
   */
  onSupersede(listener: (id: number) => void): () => void {
    this.supersedeListeners.add(listener);
    return () => this.supersedeListeners.delete(listener);
  }

  /** This incarnation of the log: a new random value at creation and at every clear (ids restart at 1). */
  get generation(): string {
    return this.gen.name;
  }

  /** The oldest and newest stored id of the current generation (lastId = firstId - 1 when empty). */
  idRange(): { firstId: number; lastId: number } {
    const g = this.gen;
    return { firstId: g.segments[0].firstId, lastId: newestRecordId(g.segments) };
  }

  /** How many ids in [a, b] the current generation holds (id-spans.ts): gaps between runs of ids count nothing. */
  storedIdCount(a: number, b: number): number {
    return storedIdCount(this.gen.segments, a, b);
  }

  /**
   * Retention keeps what the floor holds (retention.ts RetentionFloor); one floor per log, undefined
   * removes it. Set by the fleet uplink for the models it ships.
   */
  setRetentionFloor(floor: RetentionFloor | undefined): void {
    this.retention.setFloor(floor);
  }

  /** The id a new record takes; 503 once the id space of domain.ts is used up (never an id a double cannot hold). */
  private newId(g: Generation): number {
    if (g.nextId > ID_MAX) {
      throw new UnavailableError(
        `model ${this.modelId}: id space exhausted: the next id ${g.nextId} would pass ${ID_MAX}, the highest an id may be; ` +
          'back up the records you need, then clear the model (ids start again at 1)',
        3600,
        undefined,
        'ERR_ID_SPACE_EXHAUSTED',
      );
    }
    return g.nextId;
  }

  /** create_at of a record written now (age-clock.ts); 503 while the clock reads outside the domain of domain.ts. */
  private clockTs(g: Generation): number {
    const ts = this.ageClock.recordTs(Date.now(), g.lastTs);
    const rule = createAtDomainRule(ts);
    if (rule !== undefined) throw new UnavailableError(`model ${this.modelId}: the clock gives a create_at outside its domain: ${rule}; set the clock`, 60, undefined, 'ERR_CLOCK_OUT_OF_DOMAIN');
    return ts;
  }

  /**
   * Restore and import: until the returned function is called, save/updateLast throw UnavailableError
   * (503, retry) naming `reason`, and only appendStored writes, so its ids and create_at stay in order.
   */
  holdWrites(reason: string): () => void {
    if (this.writesHeldFor !== undefined) throw new UnavailableError(`model ${this.modelId}: ${this.writesHeldFor}`, 5);
    this.writesHeldFor = reason;
    return () => {
      this.writesHeldFor = undefined;
    };
  }

  /**
   * Appends a record with the given id and create_at (restore, import): `id` >= the next id (a gap starts
   * a new segment, as ids lost to corruption do), both inside the domain of domain.ts. create_at may step
   * back, as the clock's may (age-clock.ts): a backup of a log written across a clock correction restores
   * as it was. Unknown keys are ignored, a missing attribute is stored as never received. Throws
   * UnavailableError when the write queue is full: await durable() now and then.
   */
  appendStored(id: number, tsMs: number, record: Record<string, unknown>): number {
    const g = this.writable(true);
    const idRule = idDomainRule(id);
    if (idRule !== undefined) throw new InvalidArgumentError(`appendStored: ${idRule}`);
    if (id < g.nextId) throw new InvalidArgumentError(`appendStored: id ${id} is below the next id ${g.nextId}`);
    const tsRule = createAtDomainRule(tsMs);
    if (tsRule !== undefined) throw new InvalidArgumentError(`appendStored: ${tsRule}`);
    const values = this.fieldBook.valuesOf(record);
    const active = g.segments[g.segments.length - 1];
    if (id > g.nextId) {
      if (active.count === 0) throw new InvalidArgumentError(`appendStored: id ${id} leaves a gap at the start of a segment (first id ${active.firstId})`);
      g.skipTo(id, tsMs);
    }
    return this.append(g, FRAME_SAVE, id, tsMs, values);
  }

  /**
   * Resolves once every write so far (id given or not) is durable under the store's durability mode.
   * While the model is read-only (disk full) it waits for space to return, unless
   * `rejectWhenReadOnly`: then it rejects with StoreReadOnlyError; the records stay accepted in memory
   * and are written when space returns. `sync`: durable means fdatasync'ed under every mode, `none`
   * included (there it asks for an fdatasync that nothing else would make).
   */
  durable(id?: number, options: { rejectWhenReadOnly?: boolean; sync?: boolean } = {}): Promise<void> {
    if (id !== undefined && (!Number.isSafeInteger(id) || id < 0)) {
      return Promise.reject(new InvalidArgumentError(`durable: id must be a non-negative integer, got ${id}`));
    }
    const reject = options.rejectWhenReadOnly === true;
    return options.sync === true ? this.gen.writer.synced(reject) : this.gen.writer.durable(reject);
  }

  async page(q: PageQuery): Promise<PageResult> {
    const g = this.gen;
    return (await readPage(this.reads, g, q, () => this.gen === g)) ?? this.page(q);
  }

  /** `page` as JSON text, printed from the stored bytes (record-json.ts); `stamp` prints create_at. */
  async pageJson(q: PageQuery, stamp: Stamp): Promise<PageJson> {
    const g = this.gen;
    return (await readPageJson(this.reads, g, q, stamp, () => this.gen === g)) ?? this.pageJson(q, stamp);
  }

  /**
   * The records fromId..toId as lines of `format`, printed from the stored bytes (record-lines.ts): the
   * fleet uplink's message bodies. Ids retention removed are only ever missing at the start; a read
   * stops after a page's worth of records or bytes (`throughId` says where).
   */
  lines(fromId: number, toId: number, format: LineFormat): Promise<RecordLines> {
    return readLines(this.reads, this.gen, fromId, toId, format);
  }

  /** The ids of the records whose create_at lies in [fromMs, toMs): a binary search (time-index.ts), never a scan. */
  idRangeOfTime(range: TimeRange): Promise<IdRange> {
    return idRangeOfTime(this.reads, this.gen, range);
  }

  /** Buckets of [fromMs, toMs) with per-field statistics, from the segment summaries (aggregate.ts). */
  async aggregate(q: AggregateQuery): Promise<Bucket[]> {
    bucketSpan(q);
    const fieldIndexes = q.fields.map((name) => {
      const column = this.fieldBook.columnOf(name);
      if (column < 0) throw new InvalidArgumentError(`aggregate: unknown field ${JSON.stringify(name)}`);
      return column;
    });
    const g = this.gen;
    let book = this.summaryBooks.get(g);
    if (!book) {
      book = new SummaryBook(this.c.io, g.buffer, this.c.dir, this.fieldBook.columns.names.length, this.onLost, () => this.gen === g && !this.closed);
      this.summaryBooks.set(g, book);
    }
    const newest = g.lastValues === undefined ? undefined : { id: g.lastId, ts: g.lastTs, values: g.lastValues };
    const held = new HeldSegments(g.segments);
    try {
      return await aggregate(g.buffer, held, book, fieldIndexes, q, newest, this.onLost);
    } finally {
      held.releaseAll();
    }
  }

  latest(select?: readonly string[]): RecordView | undefined {
    return latestOf(this.gen, this.fieldBook.layout, this.fieldBook.full, select);
  }

  iterate(range: ExportRange = {}): AsyncGenerator<RecordView, void, undefined> {
    return iterateRecords(this.reads, this.gen, range);
  }

  /** The swap happens now; the old generation's files are retired in the background, one clear at a time. */
  clear(): Promise<void> {
    if (this.closed) return Promise.reject(new UnavailableError(`model ${this.modelId} is closed`));
    this.findingsBook.forget();
    const old = this.gen;
    const fresh = new Generation(this.genConfig, newGeneration(), [new Segment(1, 1, Date.now())], undefined, true);
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
    this.retention.set(limits);
  }

  enforceRetention(nowMs = Date.now()): Promise<void> {
    return this.closed ? Promise.resolve() : this.retention.enforce(this.gen, nowMs);
  }

  stats(): ModelLogStats {
    const findings = this.findingsBook.get();
    return {
      state: this.state,
      ...this.gen.counts(),
      recoveryTruncatedBytes: findings?.truncatedBytes ?? 0,
      recoveryLostIds: findings?.lostIds ?? 0,
      fsync: this.fsyncLatency.snapshot(),
      summaryBytes: this.summaryBooks.get(this.gen)?.bytes(this.gen.segments) ?? 0,
      ...readOnlyStats(this.gen.writer, this.c.reserve),
    };
  }

  /** Flush, fdatasync, index of the active segment and a clean manifest: the next open does not scan. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    await this.clears.run(async () => {});
    await this.retention.ended();
    await this.compactor.ended();
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
    await this.retention.ended();
    await this.compactor.ended();
    await this.gen.writer.stop();
    await this.gen.release();
  }

  private writable(holder = false): Generation {
    const g = this.gen;
    if (this.closed) throw new UnavailableError(`model ${this.modelId} is closed`);
    if (this.writesHeldFor !== undefined && !holder) throw new UnavailableError(`model ${this.modelId}: ${this.writesHeldFor}`, 5);
    if (g.writer.state !== 'ok') throw g.writer.readOnlyError();
    const lowDisk = this.c.reserve?.reason;
    if (lowDisk !== undefined) throw new StoreReadOnlyError(this.modelId, lowDisk);
    if (g.writer.queuedBytes > WRITE_QUEUE_BYTES_MAX) {
      throw new UnavailableError(`write queue of model ${this.modelId} is full (${WRITE_QUEUE_BYTES_MAX} bytes)`);
    }
    return g;
  }

  private append(g: Generation, type: FrameType, id: number, ts: number, values: unknown[]): number {
    // RESET_BUFFER_MODE: the next pack writes over this payload, which the write buffer copies before any
    // other pack; without it msgpackr took a new 8 KiB ArrayBuffer every ~6 KiB of records (external
    // memory that made V8 run full collections under steady writes).
    const payload = this.packr.pack(values, RESET_BUFFER_MODE);
    if (payload.length > RECORD_BYTES_MAX) throw this.tooLarge(payload.length);
    return g.append(type, id, ts, values, payload);
  }

  private tooLarge(payloadBytes: number): PayloadTooLargeError {
    return new PayloadTooLargeError(`record of ${payloadBytes} bytes exceeds ${RECORD_BYTES_MAX} bytes`);
  }

  /** Resolves once no sealed segment waits for compaction (tests and benchmarks wait for it). */
  compactionIdle(): Promise<void> {
    return this.compactor.ended();
  }

  /** Queues the sealed segments of the open generation for compaction (compactor.ts), unless it is off. */
  private compact(): void {
    if (this.c.options.compactSealed === false || this.closed) return;
    const g = this.gen;
    this.compactor.schedule(g.segments, {
      io: this.c.io,
      dir: this.c.dir,
      listed: (seg) => this.gen === g && !this.closed && g.segments.includes(seg),
      warn: (m) => this.c.warn(`model ${this.modelId}: ${m}`),
    });
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

  /**
   * NATS purge pattern: the directory is renamed to trash (atomic), then recreated empty. A crash before
   * the rename keeps the old data, after it the model opens empty; open finishes removing the trash.
   */
  private async clearNow(old: Generation, fresh: Generation): Promise<void> {
    await this.retention.ended();
    await this.compactor.ended();
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
      fresh.manifest = createModelDirSync(this.c.io, this.c.dir, fresh.segments[0], this.fieldBook.columns, fresh.name);
      fresh.writer.unblock();
    }
    if (trash) await this.c.io.remove(trash);
  }
}

/** Why and since when writes are refused: the writer's I/O failure first, else a disk below the reserve. */
function readOnlyStats(w: Pick<Generation['writer'], 'lastError' | 'readOnlySinceMs'>, reserve: DiskReserve | undefined): Pick<ModelLogStats, 'lastError' | 'readOnlySinceMs'> {
  const lastError = w.lastError ?? reserve?.reason;
  const since = w.readOnlySinceMs ?? reserve?.lowSince;
  return { ...(lastError !== undefined ? { lastError } : {}), ...(since !== undefined ? { readOnlySinceMs: since } : {}) };
}

function visibleOf(c: Pick<ModelSpec, 'fields' | 'types' | 'defaults'>): VisibleFields {
  return { names: c.fields, ...(c.types === undefined ? {} : { types: c.types }), ...(c.defaults === undefined ? {} : { defaults: c.defaults }) };
}
