/**
 * The batches of one model sent and not yet passed by its cursor, in id order, several in flight at
 * once. The cursor advances only over a contiguous run of acknowledged batches at the head: a hub can
 * lose one message and store the next, so the resume point is the contiguous watermark, never "the newest
 * acknowledged". A failed batch stays in its place to be sent again byte for byte, so the hub's dedup
 * window drops those it already had.
 *
 * A duplicate acknowledgement at stream sequence 0 is a failure, not an acknowledgement: a clustered
 * nats-server stages a message id in its dedup window with sequence 0 when the leader proposes the message
 * and fills in the sequence once the message is stored. If the proposal is lost (quorum lost, leader
 * change) the staged id stays, and nats-server before 2.10 answers a resend with `duplicate: true, seq: 0`
 * for a message that is not in the stream (newer servers answer an error). Taking that as acknowledged
 * moved the cursor past a batch the hub never stored (issue 34); instead the batch is sent again after the
 * back-off, until the hub stores it or names its sequence.
 */
import type { InflightBudget } from './budget.js';
import type { Message } from './message.js';
import type { Publisher } from './nats-link.js';

/** A batch as cut from the log; no message: nothing to send (every id of it was lost), it counts as acknowledged. */
export interface OutgoingBatch {
  firstId: number;
  lastId: number;
  records: number;
  /** Records removed before they were shipped (a gap message). */
  lost: number;
  firstCreateAtMs: number | undefined;
  message: Message | undefined;
}

interface Batch extends OutgoingBatch {
  message: Message;
  state: 'inflight' | 'acked' | 'failed';
  dropped: boolean;
}

export interface AckWindowOptions {
  link: Publisher;
  budget: InflightBudget;
  /** The cursor moved (acked changed). */
  onAdvance(): void;
  /** A batch was acknowledged. */
  onAck(): void;
  /** A publish failed: the failed batches wait for resendFailed(). */
  onFailure(err: Error): void;
}

export class AckWindow {
  private pending: Batch[] = [];
  /** A publish failed and its batch waits for resendFailed(). */
  failing = false;
  lastAckMs: number | undefined;
  readonly counts = { ackedRecords: 0, duplicateAcks: 0 };

  constructor(
    private readonly o: AckWindowOptions,
    /** The first id the hub has not acknowledged. */
    public acked: number,
  ) {}

  get isEmpty(): boolean {
    return this.pending.length === 0;
  }

  get inflight(): number {
    return this.pending.filter((b) => b.state === 'inflight').length;
  }

  /** When the oldest record not yet acknowledged was saved, if a batch holds one. */
  get headCreateAtMs(): number | undefined {
    return this.pending[0]?.firstCreateAtMs;
  }

  send(b: OutgoingBatch): void {
    const batch: Batch = { ...b, message: b.message ?? emptyMessage, state: b.message === undefined ? 'acked' : 'inflight', dropped: false };
    this.pending.push(batch);
    if (b.message === undefined) return this.advance();
    this.o.budget.take(batch.message.body.length);
    this.publish(batch);
  }

  /** Sends every failed batch again, in order. */
  resendFailed(): void {
    this.failing = false;
    for (const b of this.pending) if (b.state === 'failed') this.publish(b);
  }

  /** Nobody waits for the pending batches any more (stop, new generation): their bytes go back to the budget, late acks are ignored. */
  dropAll(): void {
    for (const b of this.pending) this.drop(b);
    this.pending = [];
    this.failing = false;
  }

  private publish(batch: Batch): void {
    batch.state = 'inflight';
    this.o.link.publish(batch.message).then(
      (ack) => {
        if (batch.dropped) return;
        if (ack.duplicate && ack.seq === 0) {
          batch.state = 'failed';
          this.failing = true;
          this.o.onFailure(new Error(`the hub answered duplicate at stream sequence 0 for ${batch.message.msgId}: it holds the id, not the message; sent again`));
          return;
        }
        batch.state = 'acked';
        if (ack.duplicate) this.counts.duplicateAcks++;
        this.lastAckMs = Date.now();
        this.advance();
        this.o.onAck();
      },
      (err: Error) => {
        if (batch.dropped) return;
        batch.state = 'failed';
        this.failing = true;
        this.o.onFailure(err);
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
    if (moved) this.o.onAdvance();
  }

  private drop(b: Batch): void {
    if (b.dropped) return;
    b.dropped = true;
    this.o.budget.give(b.message.body.length);
  }
}

const emptyMessage: Message = { subject: '', msgId: '', headers: {}, body: Buffer.alloc(0) };
