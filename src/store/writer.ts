/**
 * The write path of one model generation: frames are appended to an in-memory chunk, chunks are handed to
 * the kernel by one async write at a time, and fdatasync follows the durability mode. Ordering is by a
 * single job queue; a failed job stays at its head while the model is read-only and is retried on a timer.
 * Progress is counted in log sequence numbers (lsn: bytes appended since the generation started), which is
 * what durable() waits on.
 */
import { type FileIo, describeIoError, writeFully } from './file-io.js';
import { type MemChunk, type Segment, encodeSegmentHeader, segmentName } from './segment.js';
import { writeIndex } from './index-file.js';
import { FLUSH_DELAY_MS, UNSYNCED_BYTES_MAX, WRITE_CHUNK_BYTES, assert } from './constants.js';
import type { Durability, ModelLogState } from './types.js';
import { StoreReadOnlyError } from '../errors.js';
import type { LatencyHistogram } from './latency.js';
import type { SealedFdCache } from './sealed-fds.js';

/** Chunks per writev (IOV_MAX is 1024 on Linux). */
const WRITEV_CHUNKS_MAX = 512;
/**
 * A due fdatasync lets at most this many further writes of queued chunks go first (each gathers the
 * writers that arrived meanwhile into the same fdatasync); then it starts, so a steady stream of writes
 * cannot starve it.
 */
const SYNC_POSTPONE_WRITES_MAX = 8;

type Job = { kind: 'write'; seg: Segment; chunk: MemChunk } | { kind: 'seal'; seg: Segment; next: Segment };

class Waiter {
  readonly promise: Promise<void>;
  resolve!: () => void;
  reject!: (e: Error) => void;

  constructor(
    /** Raised while later callers share this waiter (their bytes are in the same uncut chunk). */
    public lsn: number,
    /** Rejected with the read-only error as soon as the model turns read-only, instead of waiting for space. */
    readonly rejectWhenReadOnly: boolean,
  ) {
    this.promise = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }
}

export interface WriterOptions {
  modelId: string;
  dir: string;
  io: FileIo;
  durability: Durability;
  syncIntervalMs: number;
  retryMs: number;
  /** Writes the manifest from the current in-memory state (checkpoint after a seal). */
  checkpoint: () => Promise<void>;
  onSealed: () => void;
  /** Observes the duration of every successful fdatasync of a segment file. */
  fsyncLatency?: LatencyHistogram;
  /** Where a sealed segment's reads open it (the writer's fd is closed at the seal). */
  sealedFds: SealedFdCache;
  /** Where failures that no caller sees go (a failed cut-back). */
  warn: (message: string) => void;
}

export class Writer {
  /** The chunk frames are appended to; always the last entry of its segment's `mem`. */
  cur: MemChunk | undefined;
  private curSeg: Segment | undefined;
  appendedLsn = 0;
  writtenLsn = 0;
  syncedLsn = 0;
  durableLsn = 0;
  state: ModelLogState = 'ok';
  /** When the model last turned read-only (wall clock, ms); undefined while writable. */
  readOnlySinceMs: number | undefined;
  reason: string | undefined;
  lastError: string | undefined;
  private readonly jobs: Job[] = [];
  private readonly waiters: Waiter[] = [];
  private idleWaiters: Array<() => void> = [];
  /** requestSync() callers: released by the next fdatasync that starts after the request, or at idle. */
  private syncWaiters: Array<() => void> = [];
  /** appendedLsn when `cur` was last cut into a write job: waiters above it share `cur`'s fate. */
  private cutLsn = 0;
  /** Writes that went ahead of a due fdatasync since the last one started. */
  private postponed = 0;
  /** A writev (of one or more queued chunks) is in flight. */
  private writing = false;
  /** An fdatasync (preceded by a rewrite after a failed one) is in flight. */
  private syncing = false;
  /** A seal job is running; it excludes writes and syncs. */
  private sealing = false;
  /** A step failed: nothing new starts until the retry (timer, drain, requestSync, unblock). */
  private stalled = false;
  /** The cut-back after a failure is running. */
  private failing = false;
  /** A pump is scheduled with setImmediate (see afterSync). */
  private deferred = false;
  /** A failure whose cut-back and retry timer wait for the steps still in flight. */
  private failurePending = false;
  /** The failed write whose partial bytes must be cut back once nothing is in flight. */
  private failedWrite: { seg: Segment } | undefined;
  private blocked: boolean;
  private closed = false;
  private forceSync = false;
  private syncRequested = false;
  private flushScheduled = false;
  /** A flush came while a write was in flight: the write lane cuts `cur` when it frees up. */
  private flushWanted = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly flushNow = (): void => {
    this.flushScheduled = false;
    if (this.writing) {
      // Keep appending to `cur`; one chunk per write instead of one per flush.
      this.flushWanted = true;
      return;
    }
    this.cutChunk(false);
    this.pump();
  };
  private readonly deferredPump = (): void => {
    this.deferred = false;
    this.pump();
  };
  private readonly retry = (): void => this.kick();

  constructor(
    private readonly o: WriterOptions,
    /** The segment whose file receives writes; changes when a seal job completes. */
    private fileSeg: Segment,
    blocked: boolean,
  ) {
    this.blocked = blocked;
  }

  /** Makes room for a frame of `bytes` in `cur` (on segment `seg`). */
  ensureRoom(seg: Segment, bytes: number): MemChunk {
    const c = this.cur;
    if (c && c.len + bytes <= c.buf.length) return c;
    this.cutChunk(true);
    const chunk: MemChunk = {
      base: seg.bytes,
      buf: Buffer.allocUnsafe(Math.max(WRITE_CHUNK_BYTES, bytes)),
      len: 0,
      endLsn: this.appendedLsn,
    };
    seg.mem.push(chunk);
    this.cur = chunk;
    this.curSeg = seg;
    return chunk;
  }

  /** The frame just written at cur.len is accepted. */
  commit(bytes: number): void {
    const c = this.cur as MemChunk;
    c.len += bytes;
    this.appendedLsn += bytes;
    c.endLsn = this.appendedLsn;
    if (!this.flushScheduled) this.scheduleFlush();
  }

  /** Bytes accepted but not yet handed to the kernel. */
  get queuedBytes(): number {
    return this.appendedLsn - this.writtenLsn;
  }

  get pendingSyncBytes(): number {
    return this.appendedLsn - this.syncedLsn;
  }

  roll(seg: Segment, next: Segment): void {
    this.cutChunk(false);
    this.jobs.push({ kind: 'seal', seg, next });
    this.pump();
  }

  /**
   * Resolves once everything appended so far is durable under the mode. While the model is read-only
   * the records stay in memory and are written when space returns; by default the promise waits for
   * that, with `rejectWhenReadOnly` it rejects with the read-only error instead (a caller that must
   * answer someone now).
   */
  durable(rejectWhenReadOnly = false): Promise<void> {
    const lsn = this.appendedLsn;
    if (lsn <= this.durableLsn) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error(`model ${this.o.modelId} is closed`));
    if (rejectWhenReadOnly && this.state === 'read-only') return Promise.reject(this.readOnlyError());
    // The newest waiter's bytes are still in `cur` (not cut yet), like ours: they go out in the same
    // write and are covered by the same fdatasync, so one promise serves both.
    const last = this.waiters[this.waiters.length - 1];
    if (last !== undefined && last.lsn > this.cutLsn && last.rejectWhenReadOnly === rejectWhenReadOnly) {
      last.lsn = lsn;
      return last.promise;
    }
    const w = new Waiter(lsn, rejectWhenReadOnly);
    this.waiters.push(w);
    return w.promise;
  }

  readOnlyError(): StoreReadOnlyError {
    return new StoreReadOnlyError(this.o.modelId, this.reason ?? 'unknown');
  }

  unblock(): void {
    this.blocked = false;
    this.kick();
  }

  /** Writes and fdatasyncs everything; false when the model is read-only and could not finish. */
  async drain(): Promise<boolean> {
    this.cutChunk(false);
    this.forceSync = true;
    this.kick();
    await this.whenIdle();
    this.forceSync = false;
    return this.jobs.length === 0 && this.syncedLsn === this.appendedLsn;
  }

  /**
   * An fdatasync now (checkpoint), whatever the mode. Resolves when an fdatasync that started after the
   * call has finished (or failed), or when there is nothing left to do.
   */
  requestSync(): Promise<void> {
    this.syncRequested = true;
    const done = new Promise<void>((r) => this.syncWaiters.push(r));
    this.kick();
    return done;
  }

  /** close(), then waits for the step in flight; a seal in progress stops after its current step. */
  async stop(): Promise<void> {
    this.close();
    await this.whenIdle();
  }

  /** Stops timers; rejects durable() promises that can no longer be met. */
  close(): void {
    this.closed = true;
    clearTimeout(this.syncTimer);
    clearTimeout(this.retryTimer);
    const err = this.state === 'read-only' ? this.readOnlyError() : new Error(`model ${this.o.modelId} is closed`);
    for (const w of this.waiters.splice(0)) w.reject(err);
    this.settle();
  }

  private scheduleFlush(): void {
    this.flushScheduled = true;
    // `always`: at the end of the current macrotask (after the microtasks it queued), so concurrent
    // writers resolved by one fdatasync all land in the same write.
    if (this.o.durability === 'always') queueMicrotask(this.flushNow);
    else setTimeout(this.flushNow, FLUSH_DELAY_MS);
  }

  /** Hands `cur` to the job queue; `pump` starts the write at once when the chunk is big (bulk appends). */
  private cutChunk(pump: boolean): void {
    const c = this.cur;
    const seg = this.curSeg;
    if (!c || !seg) return;
    this.cur = this.curSeg = undefined;
    this.cutLsn = this.appendedLsn;
    if (c.len === 0) {
      seg.mem.splice(seg.mem.indexOf(c), 1);
      return;
    }
    this.jobs.push({ kind: 'write', seg, chunk: c });
    if (pump && (c.len >= WRITE_CHUNK_BYTES / 2 || this.jobs.length > 1)) this.pump();
  }

  private get busy(): boolean {
    return this.writing || this.syncing || this.sealing || this.failing || this.deferred;
  }

  private whenIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** An explicit retry point (timer, drain, requestSync, unblock): a stalled writer tries again. */
  private kick(): void {
    if (this.stalled && !this.busy) this.stalled = false;
    this.pump();
  }

  /**
   * Starts whatever may start now. Lanes: one write at a time (jobs in order), one fdatasync at a time;
   * a write may run while an fdatasync is in flight (the fdatasync covers only what was written when it
   * started: writtenLsn is taken then), a seal runs alone. An fdatasync never starts while a write is in
   * flight: it waits to cover that write too. `afterWrite` (a write just completed): a due fdatasync
   * starts now, unless more chunks are queued and fewer than SYNC_POSTPONE_WRITES_MAX writes went ahead
   * of it already; then the next write goes first.
   */
  private pump(afterWrite = false): void {
    if (this.stalled || this.blocked || this.closed) return this.settle();
    if (afterWrite) {
      if (this.jobs[0]?.kind === 'write' && this.postponed < SYNC_POSTPONE_WRITES_MAX) this.postponed++;
      else this.maybeSync();
    }
    const job = this.jobs[0];
    if (job !== undefined && !this.writing && !this.sealing) {
      if (job.kind === 'write') this.startWrite(job);
      else if (!this.syncing) this.startSeal(job);
    }
    this.maybeSync();
    this.settle();
  }

  private maybeSync(): void {
    if (this.syncing || this.writing || this.sealing || !this.syncDue()) return;
    this.syncing = true;
    this.postponed = 0;
    const requested = this.syncRequested;
    this.syncRequested = false;
    const released = this.syncWaiters.length > 0 ? this.syncWaiters.splice(0) : undefined;
    this.sync().then(
      (resolved) => {
        this.syncing = false;
        if (released) for (const r of released) r();
        this.afterSync(resolved);
      },
      (err: unknown) => {
        this.syncing = false;
        this.syncRequested ||= requested;
        if (released) for (const r of released) r();
        this.onFail(err, 'fdatasync', undefined);
      },
    );
  }

  private syncDue(): boolean {
    if (this.writtenLsn === this.syncedLsn && !this.fileSeg.rewriteNeeded) return false;
    return this.forceSync || this.syncRequested || this.o.durability === 'always';
  }

  /**
   * After a successful fdatasync. When it resolved waiters and bytes written meanwhile are waiting for
   * the next one, that next one starts after the resolved writers had their turn (setImmediate): their
   * new records are written first and ride the same fdatasync, instead of the writers splitting into
   * cohorts that alternate fdatasyncs.
   */
  private afterSync(resolved: number): void {
    if (
      resolved > 0 &&
      !this.stalled &&
      this.o.durability === 'always' &&
      !this.forceSync &&
      !this.syncRequested &&
      !this.writing &&
      this.jobs.length === 0 &&
      this.writtenLsn > this.syncedLsn &&
      !this.closed
    ) {
      this.deferred = true;
      setImmediate(this.deferredPump);
      return;
    }
    this.pump();
  }

  /** Consecutive writes to one segment go out as a single writev. */
  private startWrite(job: Job & { kind: 'write' }): void {
    let n = 1;
    while (n < WRITEV_CHUNKS_MAX && this.jobs[n]?.kind === 'write' && this.jobs[n].seg === job.seg) n++;
    const chunks = new Array<MemChunk>(n);
    for (let i = 0; i < n; i++) chunks[i] = (this.jobs[i] as { chunk: MemChunk }).chunk;
    this.writing = true;
    this.write(job.seg, chunks).then(
      () => {
        this.jobs.splice(0, n);
        this.writing = false;
        if (!this.stalled) this.recovered();
        if (this.flushWanted) {
          this.flushWanted = false;
          this.cutChunk(false);
        }
        this.pump(true);
      },
      (err: unknown) => {
        this.writing = false;
        this.onFail(err, 'write', job);
      },
    );
  }

  private async write(seg: Segment, chunks: MemChunk[]): Promise<void> {
    assert(chunks[0].base === seg.writtenBytes && seg.mem[0] === chunks[0], 'chunks are written in order');
    assert(seg.file.attached, 'segment file exists before its first write');
    const bufs = new Array<Buffer>(chunks.length);
    for (let i = 0; i < chunks.length; i++) bufs[i] = chunks[i].buf.subarray(0, chunks[i].len);
    await seg.file.use((fd) => writeFully(this.o.io, fd, bufs, chunks[0].base));
    const last = chunks[chunks.length - 1];
    seg.writtenBytes = last.base + last.len;
    seg.mem.splice(0, chunks.length);
    for (const c of chunks) seg.keepUnsynced(c);
    // The kept bytes are bounded: beyond the cap an fdatasync is due whatever the mode.
    if (seg.unsyncedBytes > UNSYNCED_BYTES_MAX) this.syncRequested = true;
    this.writtenLsn = last.endLsn;
    if (this.o.durability === 'none') this.advanceDurable(this.writtenLsn);
    if (this.o.durability === 'interval' && !this.syncTimer) this.armSyncTimer();
  }

  private armSyncTimer(): void {
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncRequested = true;
      this.pump();
    }, this.o.syncIntervalMs);
  }

  /** Returns how many waiters it resolved. */
  private async sync(): Promise<number> {
    const seg = this.fileSeg;
    // Only bytes whose write completed before the fdatasync starts count as covered by it.
    const lsn = this.writtenLsn;
    const bytes = seg.writtenBytes;
    await this.syncSegment(seg);
    seg.markSynced(bytes);
    this.syncedLsn = lsn;
    return this.advanceDurable(lsn);
  }

  /** fdatasync of a segment file; after a failed one, the bytes it may have dropped are written again first. */
  private syncSegment(seg: Segment): Promise<void> {
    return seg.file.use(async (fd) => {
      if (seg.rewriteNeeded) await seg.rewriteUnsynced(this.o.io, fd);
      try {
        await this.fdatasync(fd);
      } catch (e) {
        seg.rewriteNeeded = true;
        throw e;
      }
    });
  }

  private fdatasync(fd: number): Promise<void> {
    const latency = this.o.fsyncLatency;
    return latency === undefined ? this.o.io.fdatasync(fd) : latency.time(() => this.o.io.fdatasync(fd));
  }

  private startSeal(job: Job & { kind: 'seal' }): void {
    this.sealing = true;
    this.seal(job.seg, job.next).then(
      () => {
        this.jobs.shift();
        this.sealing = false;
        if (!this.stalled) this.recovered();
        this.pump();
      },
      (err: unknown) => {
        this.sealing = false;
        this.onFail(err, 'segment seal', job);
      },
    );
  }

  /** Seal: the old segment is synced and indexed before the new one exists; then the manifest moves on. */
  private async seal(seg: Segment, next: Segment): Promise<void> {
    await this.syncSegment(seg);
    seg.markSynced(seg.writtenBytes);
    this.syncedLsn = this.writtenLsn;
    this.advanceDurable(this.syncedLsn);
    if (this.closed) return;
    await writeIndex(this.o.io, this.o.dir, seg);
    if (this.closed) return;
    // A retried seal (the first attempt failed after creating the file) keeps the file it has.
    if (!next.file.attached) next.file.attach(await this.createSegmentFile(next));
    if (this.closed) return;
    this.fileSeg = next;
    // A retried seal (its checkpoint failed) finds the segment sealed already.
    if (!seg.sealedOnDisk) seg.file.seal(`${this.o.dir}/${segmentName(seg.segNo)}`, this.o.sealedFds);
    seg.sealedOnDisk = true;
    await this.o.checkpoint();
    this.o.onSealed();
  }

  private createSegmentFile(seg: Segment): Promise<number> {
    const header = encodeSegmentHeader({ segNo: seg.segNo, firstId: seg.firstId, createdMs: seg.createdMs });
    return this.o.io.createFile(`${this.o.dir}/${segmentName(seg.segNo)}`, header);
  }

  /** Resolves, in one pass, the waiters covered by `lsn`; returns how many. */
  private advanceDurable(lsn: number): number {
    // Progress means the failed step went through; waiters must see the model writable again.
    if (!this.stalled) this.recovered();
    if (lsn > this.durableLsn) this.durableLsn = lsn;
    const waiters = this.waiters;
    let n = 0;
    while (n < waiters.length && waiters[n].lsn <= this.durableLsn) waiters[n++].resolve();
    if (n > 0) waiters.splice(0, n);
    return n;
  }

  private recovered(): void {
    if (this.state === 'ok') return;
    this.state = 'ok';
    this.readOnlySinceMs = undefined;
    this.reason = undefined;
    clearTimeout(this.retryTimer);
  }

  private rejectReadOnlyWaiters(): void {
    const error = this.readOnlyError();
    let kept = 0;
    for (const w of this.waiters) {
      if (w.rejectWhenReadOnly) w.reject(error);
      else this.waiters[kept++] = w;
    }
    this.waiters.length = kept;
  }

  /** A step failed: read-only at once; the cut-back and the retry timer follow once nothing is in flight. */
  private onFail(err: unknown, op: 'write' | 'segment seal' | 'fdatasync', job: Job | undefined): void {
    this.readOnlySinceMs ??= Date.now();
    this.state = 'read-only';
    this.reason = describeIoError(err, op);
    this.lastError = this.reason;
    this.stalled = true;
    this.rejectReadOnlyWaiters();
    if (job?.kind === 'write') this.failedWrite = { seg: job.seg };
    this.failurePending = true;
    this.settle();
  }

  /** Nothing in flight: finish a failure (cut-back, retry timer), then release the idle waiters. */
  private settle(): void {
    if (this.busy) return;
    if (!this.failurePending) return this.settleIdle();
    this.failurePending = false;
    this.failing = true;
    void this.cutBack().finally(() => {
      this.failing = false;
      if (!this.closed) {
        clearTimeout(this.retryTimer);
        this.retryTimer = setTimeout(this.retry, this.o.retryMs);
        this.retryTimer.unref();
      }
      this.settleIdle();
    });
  }

  /**
   * A short or failed write may have left part of a chunk: cut back to the last whole frame (the retried
   * write overwrites it anyway, so a failed cut-back is only logged).
   */
  private async cutBack(): Promise<void> {
    const failed = this.failedWrite;
    this.failedWrite = undefined;
    if (failed?.seg.file.attached) {
      const seg = failed.seg;
      await seg.file.use((fd) => this.o.io.ftruncate(fd, seg.writtenBytes)).catch((e: unknown) => {
        this.o.warn(`model ${this.o.modelId}: cutting back a failed write failed: ${describeIoError(e, 'ftruncate')}`);
      });
    }
  }

  private settleIdle(): void {
    if (this.idleWaiters.length > 0) for (const r of this.idleWaiters.splice(0)) r();
    if (this.syncWaiters.length > 0) for (const r of this.syncWaiters.splice(0)) r();
  }
}
