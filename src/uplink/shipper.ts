/**
 * Ships one model's log to the hub: reads durable records from a position in id order (no copy: the log
 * is the buffer), cuts them into batches at boundaries that depend on the records only (batching.ts),
 * publishes them with several in flight, and advances the cursor only over a
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
import type { RecordView } from '../store/types.js';
import { BATCH_RECORDS_MAX, cutBatch, slotEndMs } from './batching.js';
import { batchMessage, gapMessage, type Message, recordLineWriter, type ShippedModel } from './message.js';
import type { Publisher } from './nats-link.js';
import type { Cursor } from './cursors.js';
import type { InflightBudget } from './budget.js';

export const POLL_MS = 20;
/** durable() calls in flight at once: each covers the records saved before it, so the newest batch waits for one sync, not two. */
const DURABLE_ASKS_MAX = 4;
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
  /** The first id not yet in a batch. */
  private readPos: number;
  /** Records readPos..aheadEnd read from the log and not yet in a batch (a batch may need more than one read). */
  private ahead: RecordView[] = [];
  /** The NDJSON line of each record of `ahead`, made once even when the newest batch is cut again. */
  private aheadLines: Array<string | undefined> = [];
  private aheadEnd = 0;
  /** Bumped whenever `ahead` must be dropped (update-last of an id in it, resend, clear): a read under way then is void. */
  private aheadEpoch = 0;
  /** Durable on disk: every id up to durableUpTo, and every record saved before durableAsOfMs. */
  private durableUpTo = 0;
  private durableAsOfMs = 0;
  private durableEpoch = 0;
  private durableAsks = 0;
  private durableAskedId = 0;
  private durableError: Error | undefined;
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
  private lines: { generation: string; write: (r: RecordView) => string } | undefined;

  constructor(private readonly o: ShipperOptions) {
    const { log } = o;
    this.generation = log.generation;
    const first = log.idRange().firstId;
    this.acked = o.cursor?.generation === this.generation ? Math.max(o.cursor.nextId, 1) : first;
    this.readPos = this.acked;
    this.shipped = () => ({ gateway: o.gateway, model: o.model, generation: this.generation });
    this.stopSupersede = log.onSupersede((id) => {
      if (log.generation !== this.generation) return;
      // The newer value leaves only once it is durable, like every record.
      if (id <= this.durableUpTo) this.forgetDurableFrom(id);
      if (id >= this.readPos) {
        if (id <= this.aheadEnd) this.dropAhead(); // read, not sent: read again for the newer value
        this.wake();
        return;
      }
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
    const head = this.pending[0]?.firstCreateAtMs ?? this.ahead[0]?.create_at ?? this.waitingSinceMs;
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

  /** One turn of the loop: at most one batch cut and sent, or one wait. */
  private async step(): Promise<void> {
    const { log } = this.o;
    if (log.generation !== this.generation) return this.newGeneration();
    if (this.failing) return this.resendFailed();
    if (this.resendFrom !== undefined) {
      // The newer version of a record goes out only after every batch before it is acknowledged.
      if (this.pending.length > 0) return this.settled(1000);
      this.acked = this.readPos = Math.min(this.readPos, this.resendFrom);
      this.dropAhead();
      this.forgetDurableFrom(this.readPos);
      this.resendFrom = undefined;
      this.counts.resends++;
    }
    if (this.durableError !== undefined) {
      const err = this.durableError;
      this.durableError = undefined;
      throw err;
    }
    const { lastId } = log.idRange();
    if (lastId < this.readPos) {
      this.waitingSinceMs = undefined;
      return this.idle();
    }
    this.waitingSinceMs ??= Date.now();
    // Only records on disk under the store's durability leave the gateway: a power cut can then never
    // hand the same id to another record after the hub got it.
    if (lastId > this.durableUpTo) this.askDurable();
    if (this.readPos > this.durableUpTo) return this.sleep(POLL_MS);
    if (!this.o.budget.hasRoom()) return this.pending.length > 0 ? this.settled(1000) : this.sleep(POLL_MS);
    const notBeforeMs = await this.nextBatch();
    if (notBeforeMs === undefined) return;
    // The newest batch's slot may still get records: once it is over, ask what is durable since.
    const waitMs = notBeforeMs - Date.now();
    if (waitMs > 0) return this.sleep(waitMs);
    this.askDurable();
    return this.sleep(POLL_MS);
  }

  /**
   * Reads what the batch at readPos needs and sends it; returns the time before which the newest batch
   * cannot be closed, if that is why nothing was sent.
   */
  private async nextBatch(): Promise<number | undefined> {
    const { log } = this.o;
    const generation = this.generation;
    const lo = this.readPos;
    const want = Math.min(this.durableUpTo, lo + BATCH_RECORDS_MAX - 1);
    if (this.ahead.length === 0) this.aheadEnd = lo - 1;
    if (this.aheadEnd < want) {
      const epoch = this.aheadEpoch;
      const from = this.aheadEnd + 1;
      this.aheadEnd = want; // an update-last of an id in from..want from now on voids this read
      const read: RecordView[] = [];
      for await (const r of log.iterate({ fromId: from, toId: want })) read.push(r);
      if (log.generation !== generation || epoch !== this.aheadEpoch) return undefined;
      if (log.idRange().firstId > from) {
        // Retention removed records at the head (backlog_max_bytes): the gap starts at lo, read from there.
        const gap = from === lo && this.sendGap(lo, read[0]?.id ?? want + 1);
        if (gap || from !== lo) {
          this.dropAhead();
          return undefined;
        }
      }
      for (const r of read) this.ahead.push(r);
    }
    const m = this.shipped();
    const line = this.lineWriter();
    const lines = this.aheadLines;
    const cut = cutBatch(lo, this.ahead, this.aheadEnd, (r, i) => (lines[i] ??= line(r)));
    if (cut.open && cut.count > 0) {
      // Became durable while reading: read those too before deciding where the newest batch ends.
      if (this.aheadEnd < Math.min(this.durableUpTo, lo + BATCH_RECORDS_MAX - 1)) return undefined;
      const closesAtMs = slotEndMs(this.ahead[cut.count - 1].create_at as number);
      if (this.durableAsOfMs < closesAtMs) return closesAtMs;
    }
    const firstCreateAtMs = this.ahead[0]?.create_at;
    this.ahead = cut.count === this.ahead.length ? [] : this.ahead.slice(cut.count);
    this.aheadLines = this.ahead.length === 0 ? [] : this.aheadLines.slice(cut.count);
    this.readPos = cut.lastId + 1;
    if (cut.lines.length === 0) {
      // Every id of the range was lost to corruption (recovery reported it): nothing to send.
      this.send({ firstId: lo, lastId: cut.lastId, records: 0, lost: 0, firstCreateAtMs: undefined, message: undefined });
      return undefined;
    }
    this.send({ firstId: lo, lastId: cut.lastId, records: cut.lines.length, lost: 0, firstCreateAtMs, message: batchMessage(this.o.prefix, m, lo, cut.lastId, cut.lines) });
    return undefined;
  }

  /** Retention removed lo..(first id in the log - 1) before the hub acknowledged them (backlog_max_bytes): say so. */
  private sendGap(lo: number, firstReadId: number): boolean {
    const gapEnd = Math.min(this.o.log.idRange().firstId, firstReadId) - 1;
    if (gapEnd < lo) return false;
    this.counts.droppedRecords += gapEnd - lo + 1;
    this.counts.gaps++;
    this.o.warn(`uplink: model ${this.o.model}: ids ${lo}..${gapEnd} were removed by retention before the hub acknowledged them`);
    this.send({ firstId: lo, lastId: gapEnd, records: 0, lost: gapEnd - lo + 1, firstCreateAtMs: undefined, message: gapMessage(this.o.prefix, this.shipped(), lo, gapEnd, 'backlog_max_bytes') });
    this.readPos = gapEnd + 1;
    return true;
  }

  /** One writer per generation: the envelope is part of every line. */
  private lineWriter(): (r: RecordView) => string {
    if (this.lines?.generation !== this.generation) this.lines = { generation: this.generation, write: recordLineWriter(this.shipped()) };
    return this.lines.write;
  }

  private dropAhead(): void {
    this.ahead = [];
    this.aheadLines = [];
    this.aheadEnd = this.readPos - 1;
    this.aheadEpoch++;
  }

  /**
   * Asks the store to make what is saved now durable (sync = none: an fdatasync). Several asks may be
   * under way, each covering what was saved before it, so the records saved during a sync are known
   * durable at the next one.
   */
  private askDurable(): void {
    const { log } = this.o;
    const { lastId } = log.idRange();
    if (this.durableAsks > 0 && (lastId <= this.durableAskedId || log.durability === 'none' || this.durableAsks >= DURABLE_ASKS_MAX)) return;
    const atMs = Date.now();
    const epoch = this.durableEpoch;
    this.durableAsks++;
    this.durableAskedId = Math.max(this.durableAskedId, lastId);
    const made = log.durable().then(() => (log.durability === 'none' ? log.checkpoint() : undefined));
    made.then(
      () => {
        this.durableAsks--;
        if (epoch !== this.durableEpoch) return;
        this.durableUpTo = Math.max(this.durableUpTo, lastId);
        this.durableAsOfMs = Math.max(this.durableAsOfMs, atMs);
        this.wake();
      },
      (err: Error) => {
        this.durableAsks--;
        if (epoch !== this.durableEpoch) return;
        this.durableError = err;
        this.wake();
      },
    );
  }

  /** A record from `id` on changed (update-last) or belongs to another generation: its durability is asked again. */
  private forgetDurableFrom(id: number): void {
    this.durableEpoch++;
    this.durableUpTo = Math.min(this.durableUpTo, id - 1);
    this.durableAsOfMs = 0;
    this.durableAskedId = Math.min(this.durableAskedId, id - 1);
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
    this.dropAhead();
    this.forgetDurableFrom(1);
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
