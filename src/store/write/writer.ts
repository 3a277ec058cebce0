/**
 * The write path of one model generation: the write buffer's chunks are handed to the kernel by one async
 * write at a time, and fdatasync follows the durability mode. Ordering is by a single job queue (writes of
 * chunks, seals of segments); a failed job stays at its head while the model is read-only and is retried
 * (write-failure.ts). Progress is counted in log sequence numbers (write-progress.ts), which is what
 * durable() waits on.
 *
 * State, checked by checkInvariants() whenever the writer settles:
 * - write lane: idle | writing (one writev of queued chunks) | sealing (a seal runs alone);
 * - sync lane: idle | syncing (one fdatasync; may overlap a write, never a seal);
 * - health (WriteFailure): ok | failed | cutting-back | stalled;
 * - lifecycle: waiting-for-dir (a cleared model's new directory is not made yet) | open | closed.
 * Besides, requests: forceSync (drain), syncRequested (checkpoint, interval timer, unsynced cap) and
 * flushWanted (a flush came while a write was in flight); pumpDeferred: a pump is scheduled (afterSync).
 * When the mode wants a flush or an fdatasync is flush-timers.ts's.
 */
import type { FileIo } from '../base/file-io.js';
import type { Segment } from '../segment/segment.js';
import { type MemChunk, WriteBuffer } from './write-buffer.js';
import { WriteSteps } from './write-steps.js';
import { WriteProgress } from './write-progress.js';
import { type FailedStep, WriteFailure } from './write-failure.js';
import { FlushTimers } from './flush-timers.js';
import { UNSYNCED_BYTES_MAX, WRITE_CHUNK_BYTES, assert } from '../base/constants.js';
import type { Durability, ModelLogState } from '../base/types.js';
import type { StoreReadOnlyError } from '../../errors.js';
import type { LatencyHistogram } from '../base/latency.js';
import type { SealedFdCache } from '../base/sealed-fds.js';

/** Chunks per writev (IOV_MAX is 1024 on Linux). */
const WRITEV_CHUNKS_MAX = 512;
/**
 * A due fdatasync lets at most this many further writes of queued chunks go first (each gathers the
 * writers that arrived meanwhile into the same fdatasync); then it starts, so a steady stream of writes
 * cannot starve it.
 */
const SYNC_POSTPONE_WRITES_MAX = 8;

type WriteJob = { kind: 'write'; chunk: MemChunk };
type Job = WriteJob | { kind: 'seal'; seg: Segment; next: Segment };
type WriteLane = 'idle' | 'writing' | 'sealing';
type SyncLane = 'idle' | 'syncing';
type Lifecycle = 'waiting-for-dir' | 'open' | 'closed';

export interface WriterOptions {
  modelId: string;
  dir: string;
  io: FileIo;
  durability: Durability;
  syncIntervalMs: number;
  segmentBytesMax: number;
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
  /** The generation's unwritten and unsynced bytes; frames are appended to it, reads copy from it. */
  readonly buffer: WriteBuffer;
  private writeLane: WriteLane = 'idle';
  private syncLane: SyncLane = 'idle';
  private lifecycle: Lifecycle;
  private readonly failure: WriteFailure;
  private readonly steps: WriteSteps;
  private readonly progress: WriteProgress;
  private readonly timers: FlushTimers;
  private readonly jobs: Job[] = [];
  private idleWaiters: Array<() => void> = [];
  /** requestSync() callers: released by the next fdatasync that starts after the request, or at idle. */
  private syncWaiters: Array<() => void> = [];
  /** Writes that went ahead of a due fdatasync since the last one started. */
  private postponed = 0;
  private forceSync = false;
  private syncRequested = false;
  /** A flush came while a write was in flight: the write lane cuts the buffer's chunk when it frees up. */
  private flushWanted = false;
  /** A pump is scheduled with setImmediate (see afterSync). */
  private pumpDeferred = false;
  /** The mode wants a flush (flush-timers.ts). */
  private readonly flush = (): void => {
    if (this.writeLane === 'writing') {
      // Keep appending to the current chunk; one chunk per write instead of one per flush.
      this.flushWanted = true;
      return;
    }
    this.cutChunk();
    this.pump();
  };
  private readonly deferredPump = (): void => {
    this.pumpDeferred = false;
    this.pump();
  };
  private readonly retry = (): void => this.kick();

  constructor(
    private readonly o: WriterOptions,
    /** The segment whose file receives writes (until a seal makes the next one's). */
    active: Segment,
    waitingForDir: boolean,
  ) {
    this.lifecycle = waitingForDir ? 'waiting-for-dir' : 'open';
    this.failure = new WriteFailure({ modelId: o.modelId, io: o.io, retryMs: o.retryMs, warn: o.warn });
    this.timers = new FlushTimers(o.durability, o.syncIntervalMs, this.flush, () => {
      this.syncRequested = true;
      this.pump();
    });
    this.buffer = new WriteBuffer({
      appended: this.timers.appended,
      // A full chunk: bulk appends start its write at once.
      filled: (chunk) => {
        this.jobs.push({ kind: 'write', chunk });
        if (chunk.len >= WRITE_CHUNK_BYTES / 2 || this.jobs.length > 1) this.pump();
      },
    });
    this.progress = new WriteProgress(this.buffer, o.durability);
    this.steps = new WriteSteps({ ...o, buffer: this.buffer, progress: this.progress, durableTo: (lsn) => this.advanceDurable(lsn) }, active);
  }

  get state(): ModelLogState {
    return this.failure.state;
  }

  /** When the model last turned read-only (wall clock, ms); undefined while writable. */
  get readOnlySinceMs(): number | undefined {
    return this.failure.readOnlySinceMs;
  }

  get lastError(): string | undefined {
    return this.failure.lastError;
  }

  /** Bytes accepted but not yet handed to the kernel. */
  get queuedBytes(): number {
    return this.progress.appendedLsn - this.progress.writtenLsn;
  }

  get pendingSyncBytes(): number {
    return this.progress.appendedLsn - this.progress.syncedLsn;
  }

  /** `seg` was sealed in memory and `next` is active: `seg` is synced and indexed before `next`'s file is made. */
  roll(seg: Segment, next: Segment): void {
    this.cutChunk();
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
    if (this.progress.appendedLsn <= this.progress.durableLsn) return Promise.resolve();
    if (this.closed) return Promise.reject(new Error(`model ${this.o.modelId} is closed`));
    if (rejectWhenReadOnly && this.failure.state === 'read-only') return Promise.reject(this.readOnlyError());
    return this.progress.wait(rejectWhenReadOnly, this.buffer.cutLsn);
  }

  /**
   * durable(), and then an fdatasync that covers everything appended before the call, whatever the mode:
   * under `none` nothing syncs by itself, yet a push with `wait=durable` answers only once its records
   * are on disk (contract 9). Read-only as durable(). Under `interval` and `always` durable() already
   * means synced, so no fdatasync is added.
   */
  async synced(rejectWhenReadOnly = false): Promise<void> {
    const lsn = this.progress.appendedLsn;
    await this.durable(rejectWhenReadOnly);
    while (this.progress.syncedLsn < lsn) {
      if (this.closed) throw new Error(`model ${this.o.modelId} is closed`);
      if (this.failure.state !== 'read-only') await this.requestSync();
      else if (rejectWhenReadOnly) throw this.readOnlyError();
      // The retry's first successful step moves progress on; the fdatasync is asked for again then.
      else await this.progress.wait(false, this.buffer.cutLsn);
    }
  }

  readOnlyError(): StoreReadOnlyError {
    return this.failure.readOnlyError();
  }

  /** The generation's directory exists now (clear). */
  unblock(): void {
    assert(this.lifecycle !== 'open', 'a writer waits for its directory once');
    if (this.lifecycle === 'waiting-for-dir') this.lifecycle = 'open';
    this.kick();
  }

  /** Writes and fdatasyncs everything; false when the model is read-only and could not finish. */
  async drain(): Promise<boolean> {
    this.cutChunk();
    this.forceSync = true;
    this.kick();
    await this.whenIdle();
    this.forceSync = false;
    return this.jobs.length === 0 && this.progress.syncedLsn === this.progress.appendedLsn;
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

  /** After a drain and close: the active file ends at its last frame (see WriteSteps.trimActive). */
  trimActive(): Promise<void> {
    assert(this.closed && !this.busy, 'the active file is trimmed by an idle, closed writer');
    return this.steps.trimActive();
  }

  /** close(), then waits for the step in flight; a seal in progress stops after its current step. */
  async stop(): Promise<void> {
    this.close();
    await this.whenIdle();
  }

  /** Stops timers; rejects durable() promises that can no longer be met. */
  close(): void {
    this.lifecycle = 'closed';
    this.timers.close();
    this.failure.close();
    const err = this.failure.state === 'read-only' ? this.readOnlyError() : new Error(`model ${this.o.modelId} is closed`);
    this.progress.rejectAll(err);
    this.settle();
  }

  private cutChunk(): void {
    const chunk = this.buffer.cut();
    if (chunk !== undefined) this.jobs.push({ kind: 'write', chunk });
  }

  /** A getter, so that checks after an await see the state of now. */
  private get closed(): boolean {
    return this.lifecycle === 'closed';
  }

  private get busy(): boolean {
    return this.writeLane !== 'idle' || this.syncLane !== 'idle' || this.failure.health === 'cutting-back' || this.pumpDeferred;
  }

  private whenIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  /** An explicit retry point (timer, drain, requestSync, unblock): a stalled writer tries again. */
  private kick(): void {
    if (!this.busy) this.failure.resume();
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
    if (this.failure.stalled || this.lifecycle !== 'open') return this.settle();
    if (afterWrite) {
      if (this.jobs[0]?.kind === 'write' && this.postponed < SYNC_POSTPONE_WRITES_MAX) this.postponed++;
      else this.maybeSync();
    }
    const job = this.jobs[0];
    if (job !== undefined && this.writeLane === 'idle') {
      if (job.kind === 'write') this.startWrite(job);
      else if (this.syncLane === 'idle') this.startSeal(job);
    }
    this.maybeSync();
    this.settle();
  }

  private maybeSync(): void {
    if (this.syncLane !== 'idle' || this.writeLane !== 'idle' || !this.syncDue()) return;
    this.syncLane = 'syncing';
    this.postponed = 0;
    const requested = this.syncRequested;
    this.syncRequested = false;
    const released = this.syncWaiters.length > 0 ? this.syncWaiters.splice(0) : undefined;
    this.steps.syncFile().then(
      (resolved) => {
        this.syncLane = 'idle';
        if (released) for (const r of released) r();
        this.afterSync(resolved);
      },
      (err: unknown) => {
        this.syncLane = 'idle';
        this.syncRequested ||= requested;
        if (released) for (const r of released) r();
        this.onFail(err, 'fdatasync', undefined);
      },
    );
  }

  private syncDue(): boolean {
    if (this.progress.writtenLsn === this.progress.syncedLsn && !this.steps.rewriteNeeded) return false;
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
      !this.failure.stalled &&
      this.o.durability === 'always' &&
      !this.forceSync &&
      !this.syncRequested &&
      this.writeLane !== 'writing' &&
      this.jobs.length === 0 &&
      this.progress.writtenLsn > this.progress.syncedLsn &&
      !this.closed
    ) {
      this.pumpDeferred = true;
      setImmediate(this.deferredPump);
      return;
    }
    this.pump();
  }

  /** Consecutive writes to one segment go out as a single writev. */
  private startWrite(job: WriteJob): void {
    const seg = job.chunk.seg;
    let n = 1;
    while (n < WRITEV_CHUNKS_MAX && this.jobs[n]?.kind === 'write' && (this.jobs[n] as WriteJob).chunk.seg === seg) n++;
    const chunks = new Array<MemChunk>(n);
    for (let i = 0; i < n; i++) chunks[i] = (this.jobs[i] as WriteJob).chunk;
    this.writeLane = 'writing';
    this.write(chunks).then(
      () => {
        this.jobs.splice(0, n);
        this.writeLane = 'idle';
        this.failure.stepSucceeded();
        if (this.flushWanted) {
          this.flushWanted = false;
          this.cutChunk();
        }
        this.pump(true);
      },
      (err: unknown) => {
        this.writeLane = 'idle';
        this.onFail(err, 'write', seg);
      },
    );
  }

  private async write(chunks: MemChunk[]): Promise<void> {
    await this.steps.write(chunks);
    // The kept bytes are bounded: beyond the cap an fdatasync is due whatever the mode.
    if (this.buffer.unsyncedBytes(chunks[0].seg) > UNSYNCED_BYTES_MAX) this.syncRequested = true;
    if (this.o.durability === 'none') this.advanceDurable(this.progress.writtenLsn);
    this.timers.written();
  }

  private startSeal(job: Job & { kind: 'seal' }): void {
    this.writeLane = 'sealing';
    this.steps.seal(job.seg, job.next, () => this.closed).then(
      () => {
        this.jobs.shift();
        this.writeLane = 'idle';
        this.failure.stepSucceeded();
        this.pump();
      },
      (err: unknown) => {
        this.writeLane = 'idle';
        this.onFail(err, 'segment seal', undefined);
      },
    );
  }

  /** Resolves, in one pass, the waiters covered by `lsn`; returns how many. */
  private advanceDurable(lsn: number): number {
    // Progress means the failed step went through; waiters must see the model writable again.
    this.failure.stepSucceeded();
    return this.progress.durableTo(lsn);
  }

  /** A step failed: read-only at once; the cut-back and the retry timer follow once nothing is in flight. */
  private onFail(err: unknown, op: FailedStep, failedWriteSeg: Segment | undefined): void {
    this.failure.failed(err, op, failedWriteSeg);
    this.progress.rejectReadOnly(this.readOnlyError());
    this.settle();
  }

  /** Nothing in flight: finish a failure (cut-back, retry timer), then release the idle waiters. */
  private settle(): void {
    this.checkInvariants();
    if (this.busy) return;
    if (this.failure.health !== 'failed') return this.settleIdle();
    void this.failure.cutBack().finally(() => {
      this.failure.cutBackEnded(this.closed ? undefined : this.retry);
      this.settleIdle();
    });
  }

  private settleIdle(): void {
    if (this.idleWaiters.length > 0) for (const r of this.idleWaiters.splice(0)) r();
    if (this.syncWaiters.length > 0) for (const r of this.syncWaiters.splice(0)) r();
  }

  private checkInvariants(): void {
    this.progress.checkOrder();
    assert(this.writeLane !== 'sealing' || this.syncLane === 'idle', 'a seal runs alone');
    const health = this.failure.health;
    assert(health !== 'cutting-back' || (this.writeLane === 'idle' && this.syncLane === 'idle'), 'a cut-back runs alone');
    assert(health === 'ok' || this.failure.state === 'read-only', 'a failure leaves the model read-only until a step succeeds');
  }
}
