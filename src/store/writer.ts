/**
 * The write path of one model generation: frames are appended to an in-memory chunk, chunks are handed to
 * the kernel by one async write at a time, and fdatasync follows the durability mode. Ordering is by a
 * single job queue; a failed job stays at its head while the model is read-only and is retried on a timer.
 * Progress is counted in log sequence numbers (lsn: bytes appended since the generation started), which is
 * what durable() waits on.
 */
import fs from 'node:fs';
import { type FileIo, SegmentFile, describeIoError, nodeFileIo, readFully, writeFully } from './file-io.js';
import { fsyncDir } from '../util/atomic-file.js';
import { type MemChunk, type Segment, encodeSegmentHeader, segmentName } from './segment.js';
import { writeIndex } from './index-file.js';
import { FLUSH_DELAY_MS, WRITE_CHUNK_BYTES, assert } from './constants.js';
import type { Durability, ModelLogState } from './types.js';
import { StoreReadOnlyError } from '../errors.js';
import type { LatencyHistogram } from './latency.js';

/** Chunks per writev (IOV_MAX is 1024 on Linux). */
const WRITEV_CHUNKS_MAX = 512;

type Job = { kind: 'write'; seg: Segment; chunk: MemChunk } | { kind: 'seal'; seg: Segment; next: Segment };

interface Waiter {
  lsn: number;
  resolve: () => void;
  reject: (e: Error) => void;
  /** Rejected with the read-only error as soon as the model turns read-only, instead of waiting for space. */
  rejectWhenReadOnly: boolean;
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
  reason: string | undefined;
  lastError: string | undefined;
  private readonly jobs: Job[] = [];
  private readonly waiters: Waiter[] = [];
  private idleWaiters: Array<() => void> = [];
  private pumping = false;
  private blocked: boolean;
  private closed = false;
  private forceSync = false;
  private syncRequested = false;
  /** fdatasync failed: the kernel may have dropped the dirty pages, so rewrite them before syncing. */
  private rewriteNeeded = false;
  private flushScheduled = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly flushNow = (): void => {
    this.flushScheduled = false;
    this.cutChunk();
    void this.pump();
  };

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
    this.cutChunk();
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
    this.cutChunk();
    this.jobs.push({ kind: 'seal', seg, next });
    void this.pump();
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
    return new Promise((resolve, reject) => this.waiters.push({ lsn, resolve, reject, rejectWhenReadOnly }));
  }

  readOnlyError(): StoreReadOnlyError {
    return new StoreReadOnlyError(this.o.modelId, this.reason ?? 'unknown');
  }

  unblock(): void {
    this.blocked = false;
    void this.pump();
  }

  /** Writes and fdatasyncs everything; false when the model is read-only and could not finish. */
  async drain(): Promise<boolean> {
    this.cutChunk();
    this.forceSync = true;
    void this.pump();
    await this.whenIdle();
    this.forceSync = false;
    return this.jobs.length === 0 && this.syncedLsn === this.appendedLsn;
  }

  /** An fdatasync now (checkpoint), whatever the mode. */
  requestSync(): Promise<void> {
    this.syncRequested = true;
    void this.pump();
    return this.whenIdle();
  }

  /** Stops timers; rejects durable() promises that can no longer be met. */
  close(): void {
    this.closed = true;
    clearTimeout(this.syncTimer);
    clearTimeout(this.retryTimer);
    const err = this.state === 'read-only' ? this.readOnlyError() : new Error(`model ${this.o.modelId} is closed`);
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private scheduleFlush(): void {
    this.flushScheduled = true;
    if (this.o.durability === 'always') setImmediate(this.flushNow);
    else setTimeout(this.flushNow, FLUSH_DELAY_MS);
  }

  private cutChunk(): void {
    const c = this.cur;
    const seg = this.curSeg;
    if (!c || !seg) return;
    this.cur = this.curSeg = undefined;
    if (c.len === 0) {
      seg.mem.splice(seg.mem.indexOf(c), 1);
      return;
    }
    this.jobs.push({ kind: 'write', seg, chunk: c });
    if (c.len >= WRITE_CHUNK_BYTES / 2 || this.jobs.length > 1) void this.pump();
  }

  private whenIdle(): Promise<void> {
    if (!this.pumping) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private async pump(): Promise<void> {
    if (this.pumping || this.blocked || this.closed) return;
    this.pumping = true;
    try {
      for (let job = this.jobs[0]; (job || this.syncDue()) && !this.closed; job = this.jobs[0]) {
        if (job) await this.run(job);
        else await this.sync();
        this.recovered();
      }
    } catch (err) {
      await this.fail(err);
    } finally {
      this.pumping = false;
      for (const r of this.idleWaiters.splice(0)) r();
    }
  }

  private syncDue(): boolean {
    if (this.writtenLsn === this.syncedLsn && !this.rewriteNeeded) return false;
    return this.forceSync || this.syncRequested || this.o.durability === 'always';
  }

  /** Runs the head job; consecutive writes to one segment go out as a single writev. */
  private async run(job: Job): Promise<void> {
    if (job.kind === 'seal') {
      await this.seal(job.seg, job.next);
      this.jobs.shift();
      return;
    }
    let n = 1;
    while (n < WRITEV_CHUNKS_MAX && this.jobs[n]?.kind === 'write' && this.jobs[n].seg === job.seg) n++;
    await this.write(job.seg, this.jobs.slice(0, n).map((j) => (j as { chunk: MemChunk }).chunk));
    this.jobs.splice(0, n);
  }

  private async write(seg: Segment, chunks: MemChunk[]): Promise<void> {
    assert(chunks[0].base === seg.writtenBytes && seg.mem[0] === chunks[0], 'chunks are written in order');
    assert(seg.file, 'segment file exists before its first write');
    await writeFully(this.o.io, seg.file.fd, chunks.map((c) => c.buf.subarray(0, c.len)), chunks[0].base);
    const last = chunks[chunks.length - 1];
    seg.writtenBytes = last.base + last.len;
    seg.mem.splice(0, chunks.length);
    this.writtenLsn = last.endLsn;
    if (this.o.durability === 'none') this.advanceDurable(this.writtenLsn);
    if (this.o.durability === 'interval' && !this.syncTimer) this.armSyncTimer();
  }

  private armSyncTimer(): void {
    this.syncTimer = setTimeout(() => {
      this.syncTimer = undefined;
      this.syncRequested = true;
      void this.pump();
    }, this.o.syncIntervalMs);
  }

  private async sync(): Promise<void> {
    const seg = this.fileSeg;
    const file = seg.file as SegmentFile;
    if (this.rewriteNeeded) await this.rewriteUnsynced(seg, file);
    const lsn = this.writtenLsn;
    const bytes = seg.writtenBytes;
    await this.fdatasync(file.fd);
    this.rewriteNeeded = false;
    this.syncRequested = false;
    seg.syncedBytes = bytes;
    this.syncedLsn = lsn;
    this.advanceDurable(lsn);
  }

  private fdatasync(fd: number): Promise<void> {
    const latency = this.o.fsyncLatency;
    return latency === undefined ? this.o.io.fdatasync(fd) : latency.time(() => this.o.io.fdatasync(fd));
  }

  /** After a failed fdatasync, dirty pages may be marked clean yet never persisted: dirty them again. */
  private async rewriteUnsynced(seg: Segment, file: SegmentFile): Promise<void> {
    const len = seg.writtenBytes - seg.syncedBytes;
    if (len <= 0) return;
    const buf = Buffer.allocUnsafe(len);
    await readFully(this.o.io, file.fd, buf, 0, len, seg.syncedBytes);
    await writeFully(this.o.io, file.fd, [buf], seg.syncedBytes);
  }

  /** Seal: the old segment is synced and indexed before the new one exists; then the manifest moves on. */
  private async seal(seg: Segment, next: Segment): Promise<void> {
    const file = seg.file as SegmentFile;
    await this.fdatasync(file.fd);
    seg.syncedBytes = seg.writtenBytes;
    this.syncedLsn = this.writtenLsn;
    this.advanceDurable(this.syncedLsn);
    await writeIndex(this.o.dir, seg);
    if (!next.file) next.file = new SegmentFile(await createSegmentFile(this.o.dir, next));
    this.fileSeg = next;
    seg.sealedOnDisk = true;
    await this.o.checkpoint();
    this.o.onSealed();
  }

  private advanceDurable(lsn: number): void {
    // Progress means the failed job went through; waiters must see the model writable again.
    this.recovered();
    this.durableLsn = Math.max(this.durableLsn, lsn);
    let n = 0;
    while (n < this.waiters.length && this.waiters[n].lsn <= this.durableLsn) this.waiters[n++].resolve();
    if (n > 0) this.waiters.splice(0, n);
  }

  private recovered(): void {
    if (this.state === 'ok') return;
    this.state = 'ok';
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

  private async fail(err: unknown): Promise<void> {
    const job = this.jobs[0];
    const op = job?.kind === 'write' ? 'write' : job?.kind === 'seal' ? 'segment seal' : 'fdatasync';
    this.state = 'read-only';
    this.reason = describeIoError(err, op);
    this.lastError = this.reason;
    this.rejectReadOnlyWaiters();
    if (!job) this.rewriteNeeded = true;
    if (job?.kind === 'write' && job.seg.file) {
      // A short or failed write may have left part of the chunk: cut back to the last whole frame.
      await this.o.io.ftruncate(job.seg.file.fd, job.seg.writtenBytes).catch(() => {});
    }
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => void this.pump(), this.o.retryMs);
    this.retryTimer.unref();
  }
}

async function createSegmentFile(dir: string, seg: Segment): Promise<number> {
  const fd = await new Promise<number>((resolve, reject) =>
    fs.open(`${dir}/${segmentName(seg.segNo)}`, 'w+', (e, f) => (e ? reject(e) : resolve(f))),
  );
  const header = encodeSegmentHeader({ segNo: seg.segNo, firstId: seg.firstId, createdMs: seg.createdMs });
  try {
    await writeFully(nodeFileIo, fd, [header], 0);
    await new Promise<void>((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve())));
    await fsyncDir(dir);
  } catch (e) {
    fs.close(fd, () => {});
    throw e;
  }
  return fd;
}

