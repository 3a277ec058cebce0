/**
 * Ships one model's log to the hub: reads its durable records in batches from the cursor (batch-reader.ts,
 * durable-watermark.ts), publishes them with several in flight and advances the cursor over the
 * contiguous run of acknowledged ones (ack-window.ts). On any failed publish it stops reading, lets the
 * others settle, waits a jittered back-off (sleeper.ts) and sends the unacknowledged batches again, byte
 * for byte, so the hub's dedup window drops those it already had.
 *
 * Update-last: a record changed after it was read is read again once every earlier batch is
 * acknowledged, so the newer version always reaches the stream after the older one.
 * A clear (new generation) starts over at id 1 of the new generation.
 */
import type { ModelLog } from '../store/log/model-log.js';
import { AckWindow, type OutgoingBatch } from './ack-window.js';
import { BatchReader } from './batch-reader.js';
import type { InflightBudget } from './budget.js';
import type { LoopShare } from './loop-share.js';
import type { Cursor } from './cursors.js';
import { DurableWatermark } from './durable-watermark.js';
import type { ShippedModel } from './message.js';
import type { Publisher } from './nats-link.js';
import { Sleeper } from './sleeper.js';

export const POLL_MS = 20;

export type ShippedLog = Pick<ModelLog, 'lines' | 'durable' | 'generation' | 'idRange' | 'onSupersede' | 'durability' | 'checkpoint'>;

export interface ShipperOptions {
  prefix: string;
  gateway: string;
  model: string;
  log: ShippedLog;
  link: Publisher;
  budget: InflightBudget;
  /** The shippers' share of a saturated main thread (one for all models). */
  share: LoopShare;
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
  /** Why shipping last failed; cleared by the next acknowledgement once no batch waits to be resent. */
  lastError: string | undefined;
}

export class Shipper {
  private generation: string;
  private readonly durable: DurableWatermark;
  private readonly reader: BatchReader;
  private readonly window: AckWindow;
  private readonly sleeper = new Sleeper();
  /** An update-last of an id already in a batch: from there the records are read and sent again. */
  private resendFrom: number | undefined;
  private waitingSinceMs: number | undefined;
  private readonly stopSupersede: () => void;
  private running: Promise<void> | undefined;
  private readonly counts = { droppedRecords: 0, gaps: 0, resends: 0 };
  private lastError: string | undefined;

  constructor(private readonly o: ShipperOptions) {
    const { log } = o;
    this.generation = log.generation;
    const first = log.idRange().firstId;
    const acked = o.cursor?.generation === this.generation ? Math.max(o.cursor.nextId, 1) : first;
    const shipped = (): ShippedModel => ({ gateway: o.gateway, model: o.model, generation: this.generation });
    this.durable = new DurableWatermark(log, () => this.sleeper.wake());
    this.reader = new BatchReader({ prefix: o.prefix, log, durable: this.durable, shipped }, acked);
    this.window = new AckWindow(
      {
        link: o.link,
        budget: o.budget,
        onAdvance: () => this.reportCursor(),
        onAck: () => {
          // The hub takes batches again: an error of the outage is history, unless a batch still waits to be resent.
          if (!this.window.failing) this.lastError = undefined;
          this.sleeper.resetBackoff();
          this.sleeper.wake();
        },
        onFailure: (err) => {
          this.lastError = err.message;
          this.sleeper.wake();
        },
      },
      acked,
    );
    this.stopSupersede = log.onSupersede((id) => {
      if (log.generation !== this.generation) return;
      // The newer value leaves only once it is durable, like every record.
      if (id <= this.durable.upToId) this.durable.forgetFrom(id);
      if (this.reader.superseded(id)) {
        this.sleeper.wake();
        return;
      }
      this.resendFrom = Math.min(this.resendFrom ?? id, id);
      this.reportCursor();
      this.sleeper.wake();
    });
    this.reportCursor();
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Stops reading; waits up to `graceMs` for batches in flight to be acknowledged. */
  async stop(graceMs = 2000): Promise<void> {
    this.sleeper.stop();
    this.stopSupersede();
    const deadline = Date.now() + graceMs;
    while (this.window.inflight > 0 && Date.now() < deadline) await this.sleeper.wait(deadline - Date.now());
    this.window.dropAll();
  }

  status(nowMs = Date.now()): ShipperStatus {
    const newestId = this.o.log.generation === this.generation ? this.o.log.idRange().lastId : 0;
    const nextId = this.cursorNextId();
    const lagRecords = Math.max(0, newestId - nextId + 1);
    const head = this.window.headCreateAtMs ?? this.reader.aheadCreateAtMs ?? this.waitingSinceMs;
    return {
      generation: this.generation,
      nextId,
      newestId,
      lagRecords,
      lagSeconds: lagRecords === 0 || head === undefined ? 0 : Math.max(0, nowMs - head) / 1000,
      inflightBatches: this.window.inflight,
      ...this.window.counts,
      ...this.counts,
      lastAckMs: this.window.lastAckMs,
      lastError: this.lastError,
    };
  }

  private cursorNextId(): number {
    const { acked } = this.window;
    return this.resendFrom === undefined ? acked : Math.min(acked, this.resendFrom);
  }

  private reportCursor(): void {
    this.o.onCursor({ generation: this.generation, nextId: this.cursorNextId() });
  }

  private async run(): Promise<void> {
    while (!this.sleeper.stopped) {
      try {
        await this.step();
      } catch (err) {
        if (this.sleeper.stopped) break;
        this.lastError = (err as Error).message;
        this.o.warn(`uplink: model ${this.o.model}: ${this.lastError}`);
        await this.sleeper.backOff();
      }
    }
  }

  /** One turn of the loop: at most one batch cut and sent, or one wait. */
  private async step(): Promise<void> {
    const { log } = this.o;
    const { reader, durable, window, sleeper } = this;
    if (log.generation !== this.generation) return this.newGeneration();
    if (window.failing) return this.resendFailed();
    if (this.resendFrom !== undefined) {
      // The newer version of a record goes out only after every batch before it is acknowledged.
      if (!window.isEmpty) return sleeper.sleep(1000);
      reader.restartAt(Math.min(reader.readPos, this.resendFrom));
      window.acked = reader.readPos;
      durable.forgetFrom(reader.readPos);
      this.resendFrom = undefined;
      this.counts.resends++;
    }
    const err = durable.takeError();
    if (err !== undefined) throw err;
    const { lastId } = log.idRange();
    if (lastId < reader.readPos) {
      this.waitingSinceMs = undefined;
      return sleeper.sleep(POLL_MS);
    }
    this.waitingSinceMs ??= Date.now();
    // Only records on disk under the store's durability leave the gateway (durable-watermark.ts).
    if (lastId > durable.upToId) durable.ask();
    if (reader.readPos > durable.upToId) return sleeper.sleep(POLL_MS);
    if (!this.o.budget.hasRoom()) return sleeper.sleep(window.isEmpty ? POLL_MS : 1000);
    const next = await reader.next();
    if (next === undefined) return;
    if ('batch' in next) {
      const sendStartMs = performance.now();
      this.send(next.batch);
      const pauseMs = this.o.share.pauseAfter(reader.busyMs + performance.now() - sendStartMs);
      return pauseMs > 0 ? sleeper.pause(pauseMs) : undefined;
    }
    // The newest batch's slot may still get records: once it is over, ask what is durable since.
    const waitMs = next.notBeforeMs - Date.now();
    if (waitMs > 0) return sleeper.sleep(waitMs);
    durable.ask();
    return sleeper.sleep(POLL_MS);
  }

  private send(batch: OutgoingBatch): void {
    if (batch.lost > 0) {
      this.counts.droppedRecords += batch.lost;
      this.counts.gaps++;
      this.o.warn(`uplink: model ${this.o.model}: ids ${batch.firstId}..${batch.lastId} were removed by retention before the hub acknowledged them`);
    }
    this.waitingSinceMs = undefined;
    this.window.send(batch);
  }

  private async resendFailed(): Promise<void> {
    if (this.window.inflight > 0) return this.sleeper.sleep(1000);
    await this.sleeper.backOff();
    if (this.sleeper.stopped) return;
    this.window.resendFailed();
  }

  private newGeneration(): Promise<void> {
    this.window.dropAll();
    this.resendFrom = undefined;
    this.generation = this.o.log.generation;
    this.reader.restartAt(this.o.log.idRange().firstId);
    this.window.acked = this.reader.readPos;
    this.durable.forgetFrom(1);
    this.reportCursor();
    return Promise.resolve();
  }
}
