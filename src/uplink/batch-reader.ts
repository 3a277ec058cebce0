/**
 * Reads one model's durable records from a position in id order, as the NDJSON lines the store prints from
 * the stored bytes (ModelLog.lines; no copy: the log is the buffer), and cuts them into batches at
 * boundaries that depend on the records only (batching.ts). Lines read and not yet in a batch are kept
 * (line-buffer.ts): the newest batch, cut again while its slot may still get records, is not read twice.
 */
import type { ModelLog } from '../store/log/model-log.js';
import type { OutgoingBatch } from './ack-window.js';
import { BATCH_RECORDS_MAX, cutBatch, slotEndMs } from './batching.js';
import type { DurableWatermark } from './durable-watermark.js';
import { LineBuffer } from './line-buffer.js';
import { batchMessage, gapMessage, type ShippedModel } from './message.js';

export type ReadLog = Pick<ModelLog, 'lines' | 'generation' | 'idRange'>;

export interface BatchReaderOptions {
  prefix: string;
  log: ReadLog;
  durable: DurableWatermark;
  /** The model and generation the records are shipped as. */
  shipped(): ShippedModel;
}

/** What next() found: a batch to send, or the time before which the newest batch cannot be closed. */
export type NextBatch = { batch: OutgoingBatch } | { notBeforeMs: number };

export class BatchReader {
  private pos: number;
  /** The lines of the records pos..aheadEnd read and not yet in a batch (a batch may need more than one read). */
  private ahead: LineBuffer | undefined;
  private aheadEnd = 0;
  /** Bumped whenever `ahead` must be dropped (update-last of an id in it, resend, clear): a read under way then is void. */
  private aheadEpoch = 0;
  /** Main-thread ms the last next() spent on a batch it returned: printing, cutting, the message (not its file reads). */
  busyMs = 0;

  constructor(
    private readonly o: BatchReaderOptions,
    readPos: number,
  ) {
    this.pos = readPos;
  }

  /** The first id not yet in a batch. */
  get readPos(): number {
    return this.pos;
  }

  /** When the oldest record read and not yet in a batch was saved. */
  get aheadCreateAtMs(): number | undefined {
    return this.ahead?.createAtMs[0];
  }

  /** Reading starts over at `id` (resend, new generation): what was read ahead is dropped. */
  restartAt(id: number): void {
    this.pos = id;
    this.dropAhead();
  }

  /** A record changed (update-last): true if it is in no batch yet; read already, it is read again for the newer value. */
  superseded(id: number): boolean {
    if (id < this.pos) return false;
    if (id <= this.aheadEnd) this.dropAhead();
    return true;
  }

  /**
   * Reads what the batch at readPos needs and cuts it. Undefined: nothing to send now (a read was voided,
   * or more became durable while reading); read again on the next turn.
   */
  async next(): Promise<NextBatch | undefined> {
    let resumedMs = performance.now();
    this.busyMs = 0;
    const { log, durable } = this.o;
    const shipped = this.o.shipped();
    const ahead = this.aheadFor(shipped);
    const lo = this.pos;
    const want = Math.min(durable.upToId, lo + BATCH_RECORDS_MAX - 1);
    if (ahead.count === 0) this.aheadEnd = lo - 1;
    if (this.aheadEnd < want) {
      const epoch = this.aheadEpoch;
      const from = this.aheadEnd + 1;
      this.aheadEnd = want; // an update-last of an id in from..want from now on voids this read
      this.busyMs += performance.now() - resumedMs;
      const read = await log.lines(from, want, ahead.format);
      resumedMs = performance.now();
      this.busyMs += read.printMs;
      if (log.generation !== shipped.generation || epoch !== this.aheadEpoch) return undefined;
      this.aheadEnd = read.throughId;
      if (log.idRange().firstId > from) {
        // Retention removed records at the head (backlog_max_bytes): the gap starts at lo, read from there.
        const gap = from === lo ? this.gapFrom(lo, read.ids[0] ?? want + 1) : undefined;
        if (gap !== undefined || from !== lo) {
          this.dropAhead();
          return gap === undefined ? undefined : { batch: gap };
        }
      }
      ahead.append(read);
    }
    const cut = cutBatch(lo, ahead, this.aheadEnd);
    if (cut.open && cut.count > 0) {
      // Became durable while reading: read those too before deciding where the newest batch ends.
      if (this.aheadEnd < Math.min(durable.upToId, lo + BATCH_RECORDS_MAX - 1)) return undefined;
      const closesAtMs = slotEndMs(ahead.createAtMs[cut.count - 1]);
      if (durable.asOfMs < closesAtMs) return { notBeforeMs: closesAtMs };
    }
    const firstCreateAtMs = ahead.createAtMs[0];
    this.pos = cut.lastId + 1;
    if (cut.count === 0) {
      // Every id of the range was lost to corruption (recovery reported it): nothing to send.
      return { batch: { firstId: lo, lastId: cut.lastId, records: 0, lost: 0, firstCreateAtMs: undefined, message: undefined } };
    }
    const message = batchMessage(this.o.prefix, shipped, lo, cut.lastId, ahead.take(cut.count), cut.count);
    this.busyMs += performance.now() - resumedMs;
    return { batch: { firstId: lo, lastId: cut.lastId, records: cut.count, lost: 0, firstCreateAtMs, message } };
  }

  /** Retention removed lo..(first id in the log - 1) before the hub acknowledged them (backlog_max_bytes): the gap message. */
  private gapFrom(lo: number, firstReadId: number): OutgoingBatch | undefined {
    const gapEnd = Math.min(this.o.log.idRange().firstId, firstReadId) - 1;
    if (gapEnd < lo) return undefined;
    this.pos = gapEnd + 1;
    const lost = gapEnd - lo + 1;
    return { firstId: lo, lastId: gapEnd, records: 0, lost, firstCreateAtMs: undefined, message: gapMessage(this.o.prefix, this.o.shipped(), lo, gapEnd, 'backlog_max_bytes') };
  }

  /** One per generation: the envelope is part of every line. */
  private aheadFor(shipped: ShippedModel): LineBuffer {
    if (this.ahead?.shipped.generation !== shipped.generation) {
      this.ahead = new LineBuffer(shipped);
      this.aheadEnd = this.pos - 1;
    }
    return this.ahead;
  }

  private dropAhead(): void {
    this.ahead?.clear();
    this.aheadEnd = this.pos - 1;
    this.aheadEpoch++;
  }
}
