/**
 * Ships one model's log to the hub: reads durable records from a position in id order (no copy: the log
 * is the buffer), publishes batches with several in flight, and advances the cursor only over a
 * contiguous run of acknowledged batches (a hub can lose one message and store the next, so the resume
 * point is the contiguous watermark, never "the newest acknowledged"). On any failed publish it stops
 * reading, lets the others settle, waits a jittered back-off and sends the unacknowledged batches again,
 * byte for byte, so the hub's dedup window drops those it already had.
 *
 * Update-last: a record changed after it was read is read again once every earlier batch is
 * acknowledged, so the newer version always reaches the stream after the older one.
 * A clear (new generation) starts over at id 1 of the new generation.
 */
import type { ModelLog } from '../store/model-log.js';
import { batchMessage, gapMessage, type Message, recordLine, type ShippedModel } from './message.js';
import type { Publisher } from './nats-link.js';
import type { Cursor } from './cursors.js';
import type { InflightBudget } from './budget.js';

export const BATCH_RECORDS_MAX = 1000;
export const BATCH_BYTES_MAX = 256 * 1024;
export const POLL_MS = 20;
export const BACKOFF_MIN_MS = 250;
export const BACKOFF_MAX_MS = 30_000;

export type ShippedLog = Pick<ModelLog, 'iterate' | 'durable' | 'generation' | 'idRange' | 'onSupersede' | 'durability' | 'checkpoint'>;

interface Batch {
  firstId: number;
  lastId: number;
  records: number;
  /** Records removed before they were shipped (a gap message). */
  lost: number;
  firstCreateAtMs: number | undefined;
  message: Message;
  state: 'inflight' | 'acked' | 'failed';
  dropped: boolean;
}

export interface ShipperOptions {
  prefix: string;
  gateway: string;
  model: string;
  log: ShippedLog;
  link: Publisher;
  budget: InflightBudget;
  /** Where a restart resumes; undefined or of another generation: the log's first id. */
  cursor: Cursor | undefined;
  onCursor(cursor: Cursor): void;
  warn(message: string): void;
}

export interface ShipperStatus {
  generation: string;
  /** First id the hub has not acknowledged (newest version). */
  nextId: number;
  newestId: number;
  lagRecords: number;
  lagSeconds: number;
  inflightBatches: number;
  ackedRecords: number;
  duplicateAcks: number;
  droppedRecords: number;
  gaps: number;
  resends: number;
  lastAckMs: number | undefined;
  lastError: string | undefined;
}

export class Shipper {
  private generation: string;
  private acked: number;
  private readPos: number;
  private durableUpTo = 0;
  private resendFrom: number | undefined;
  private pending: Batch[] = [];
  private failing = false;
  private backoffMs = BACKOFF_MIN_MS;
  private stopped = false;
  private waiters: Array<() => void> = [];
  private waitingSinceMs: number | undefined;
  private readonly stopSupersede: () => void;
  private running: Promise<void> | undefined;
  readonly counts = { ackedRecords: 0, duplicateAcks: 0, droppedRecords: 0, gaps: 0, resends: 0 };
  private lastAckMs: number | undefined;
  private lastError: string | undefined;
  private readonly shipped: () => ShippedModel;

  constructor(private readonly o: ShipperOptions) {
    const { log } = o;
    this.generation = log.generation;
    const first = log.idRange().firstId;
    this.acked = o.cursor?.generation === this.generation ? Math.max(o.cursor.nextId, 1) : first;
    this.readPos = this.acked;
    this.shipped = () => ({ gateway: o.gateway, model: o.model, generation: this.generation });
    this.stopSupersede = log.onSupersede((id) => {
      if (log.generation !== this.generation || id >= this.readPos) return;
      this.resendFrom = Math.min(this.resendFrom ?? id, id);
      this.reportCursor();
      this.wake();
    });
    this.reportCursor();
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops reading; waits up to `graceMs` for batches in flight to be acknowledged. */
  async stop(graceMs = 2000): Promise<void> {
    this.stopped = true;
    this.stopSupersede();
    this.wake();
    const deadline = Date.now() + graceMs;
    while (this.pending.some((b) => b.state === 'inflight') && Date.now() < deadline) await this.settled(deadline - Date.now());
    for (const b of this.pending) this.drop(b);
    this.pending = [];
  }

  status(nowMs = Date.now()): ShipperStatus {
    const newestId = this.o.log.generation === this.generation ? this.o.log.idRange().lastId : 0;
    const nextId = this.cursorNextId();
    const lagRecords = Math.max(0, newestId - nextId + 1);
    const head = this.pending[0]?.firstCreateAtMs ?? this.waitingSinceMs;
    return {
      generation: this.generation,
      nextId,
      newestId,
      lagRecords,
      lagSeconds: lagRecords === 0 || head === undefined ? 0 : Math.max(0, nowMs - head) / 1000,
      inflightBatches: this.pending.filter((b) => b.state === 'inflight').length,
      ...this.counts,
      lastAckMs: this.lastAckMs,
      lastError: this.lastError,
    };
  }

  private cursorNextId(): number {
    return this.resendFrom === undefined ? this.acked : Math.min(this.acked, this.resendFrom);
  }

  private reportCursor(): void {
    this.o.onCursor({ generation: this.generation, nextId: this.cursorNextId() });
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.step();
      } catch (err) {
        if (this.stopped) break;
        this.lastError = (err as Error).message;
        this.o.warn(`uplink: model ${this.o.model}: ${this.lastError}`);
        await this.pause(this.nextBackoff());
      }
    }
  }

  /** One turn of the loop: at most one batch read and sent, or one wait. */
  private async step(): Promise<void> {
    const { log } = this.o;
    if (log.generation !== this.generation) return this.newGeneration();
    if (this.failing) return this.resendFailed();
    if (this.resendFrom !== undefined) {
      // The newer version of a record goes out only after every batch before it is acknowledged.
      if (this.pending.length > 0) return this.settled(1000);
      this.acked = this.readPos = Math.min(this.readPos, this.resendFrom);
      this.durableUpTo = Math.min(this.durableUpTo, this.readPos - 1);
      this.resendFrom = undefined;
      this.counts.resends++;
    }
    if (this.readPos > this.durableUpTo) {
      const { lastId } = log.idRange();
      if (lastId < this.readPos) {
        this.waitingSinceMs = undefined;
        return this.idle();
      }
      this.waitingSinceMs ??= Date.now();
      // Only records on disk under the store's durability leave the gateway: a power cut can then never
      // hand the same id to another record after the hub got it. With sync = none, ask for the fdatasync.
      await log.durable();
      if (log.durability === 'none') await log.checkpoint();
      if (log.generation !== this.generation) return;
      this.durableUpTo = lastId;
    }
    if (!this.o.budget.hasRoom() && this.pending.length > 0) return this.settled(1000);
    if (!this.o.budget.hasRoom()) return this.sleep(POLL_MS);
    await this.readBatch(this.readPos, Math.min(this.durableUpTo, this.readPos + BATCH_RECORDS_MAX - 1));
  }

  private async readBatch(lo: number, hi: number): Promise<void> {
    const { log } = this.o;
    const generation = this.generation;
    const m = this.shipped();
    const lines: string[] = [];
    let bytes = 0;
    let lastRead = lo - 1;
    let firstReadId: number | undefined;
    let firstCreateAtMs: number | undefined;
    const readUpTo = hi;
    this.readPos = hi + 1; // a supersede of an id in lo..hi from now on is sent again
    for await (const r of log.iterate({ fromId: lo, toId: hi })) {
      const id = r.id as number;
      firstReadId ??= id;
      firstCreateAtMs ??= r.create_at;
      const line = recordLine(m, r);
      lines.push(line);
      bytes += line.length + 1;
      lastRead = id;
      if (bytes >= BATCH_BYTES_MAX) break;
    }
    if (log.generation !== generation) return; // cleared while reading: these records belong to no one now
    const lastId = bytes >= BATCH_BYTES_MAX ? lastRead : readUpTo;
    this.readPos = lastId + 1;
    const firstId = log.idRange().firstId;
    const gapEnd = Math.min(firstId, firstReadId ?? lastId + 1) - 1;
    if (gapEnd >= lo) {
      // Retention removed these before the hub acknowledged them (backlog_max_bytes): say so.
      this.counts.droppedRecords += gapEnd - lo + 1;
      this.counts.gaps++;
      this.o.warn(`uplink: model ${this.o.model}: ids ${lo}..${gapEnd} were removed by retention before the hub acknowledged them`);
      this.send({ firstId: lo, lastId: gapEnd, records: 0, lost: gapEnd - lo + 1, firstCreateAtMs: undefined, message: gapMessage(this.o.prefix, m, lo, gapEnd, 'backlog_max_bytes') });
      if (lines.length === 0) return;
      lo = gapEnd + 1;
    }
    if (lines.length === 0) {
      // Every id of the range was lost to corruption (recovery reported it): nothing to send.
      this.send({ firstId: lo, lastId, records: 0, lost: 0, firstCreateAtMs: undefined, message: undefined });
      return;
    }
    this.send({ firstId: lo, lastId, records: lines.length, lost: 0, firstCreateAtMs, message: batchMessage(this.o.prefix, m, lo, lastId, lines) });
  }

  private send(b: Omit<Batch, 'state' | 'dropped' | 'message'> & { message: Message | undefined }): void {
    const batch: Batch = { ...b, message: b.message ?? emptyMessage, state: b.message === undefined ? 'acked' : 'inflight', dropped: false };
    this.pending.push(batch);
    this.waitingSinceMs = undefined;
    if (b.message === undefined) return this.advance();
    this.o.budget.take(batch.message.body.length);
    this.publish(batch);
  }

  private publish(batch: Batch): void {
    batch.state = 'inflight';
    this.o.link.publish(batch.message).then(
      (ack) => {
        if (batch.dropped) return;
        batch.state = 'acked';
        if (ack.duplicate) this.counts.duplicateAcks++;
        this.backoffMs = BACKOFF_MIN_MS;
        this.lastAckMs = Date.now();
        this.advance();
        this.wake();
      },
      (err: Error) => {
        if (batch.dropped) return;
        batch.state = 'failed';
        this.failing = true;
        this.lastError = err.message;
        this.wake();
      },
    );
  }

  /** Moves the cursor over the acknowledged batches at the head, in order. */
  private advance(): void {
    let moved = false;
    while (this.pending[0]?.state === 'acked') {
      const b = this.pending.shift() as Batch;
      this.o.budget.give(b.message.body.length);
      this.acked = b.lastId + 1;
      this.counts.ackedRecords += b.records;
      moved = true;
    }
    if (moved) this.reportCursor();
  }

  private async resendFailed(): Promise<void> {
    if (this.pending.some((b) => b.state === 'inflight')) return this.settled(1000);
    await this.pause(this.nextBackoff());
    if (this.stopped) return;
    this.failing = false;
    for (const b of this.pending) if (b.state === 'failed') this.publish(b);
  }

  private newGeneration(): Promise<void> {
    for (const b of this.pending) this.drop(b);
    this.pending = [];
    this.failing = false;
    this.resendFrom = undefined;
    this.generation = this.o.log.generation;
    this.acked = this.readPos = this.o.log.idRange().firstId;
    this.durableUpTo = 0;
    this.reportCursor();
    return Promise.resolve();
  }

  /** A pending batch nobody waits for any more: its bytes go back to the budget now, a late ack is ignored. */
  private drop(b: Batch): void {
    if (b.dropped) return;
    b.dropped = true;
    this.o.budget.give(b.message.body.length);
  }

  /** Full jitter: a fleet that lost its hub does not come back in step. */
  private nextBackoff(): number {
    const wait = Math.random() * this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    return wait;
  }

  private idle(): Promise<void> {
    return this.sleep(POLL_MS);
  }

  private settled(timeoutMs: number): Promise<void> {
    return this.sleep(timeoutMs);
  }

  /** Resolves after `ms`, or earlier on an ack, a failure, a supersede or stop. */
  private sleep(ms: number): Promise<void> {
    if (this.stopped && ms > 0) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      }, Math.max(0, ms));
      this.waiters.push(done);
    });
  }

  /** A back-off: only stop() ends it early, so acks and supersedes of other batches cannot shorten it. */
  private async pause(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stopped && Date.now() < until) await this.sleep(until - Date.now());
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }
}

const emptyMessage: Message = { subject: '', msgId: '', headers: {}, body: Buffer.alloc(0) };
