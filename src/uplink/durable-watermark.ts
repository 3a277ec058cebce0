/**
 * How much of one model's log the shipper knows to be on disk under the store's durability. Only such
 * records leave the gateway: a power cut can then never hand the same id to another record after the hub
 * got it. Several asks may be under way, each covering what was saved before it, so the records saved
 * during a sync are known durable at the next one.
 */
import type { ModelLog } from '../store/log/model-log.js';

/** durable() calls in flight at once: each covers the records saved before it, so the newest batch waits for one sync, not two. */
const DURABLE_ASKS_MAX = 4;

export type DurableLog = Pick<ModelLog, 'durable' | 'durability' | 'checkpoint' | 'idRange'>;

export class DurableWatermark {
  private upTo = 0;
  private asOf = 0;
  /** Bumped by forgetFrom: an ask under way then answers for records that changed since. */
  private epoch = 0;
  private asks = 0;
  private askedId = 0;
  private error: Error | undefined;

  constructor(
    private readonly log: DurableLog,
    /** Called when an ask is answered, made or failed. */
    private readonly onAnswer: () => void,
  ) {}

  /** Every id up to this one is durable. */
  get upToId(): number {
    return this.upTo;
  }

  /** Every record saved before this time is durable. */
  get asOfMs(): number {
    return this.asOf;
  }

  /** Asks the store to make what is saved now durable (sync = none: an fdatasync). */
  ask(): void {
    const { log } = this;
    const { lastId } = log.idRange();
    if (this.asks > 0 && (lastId <= this.askedId || log.durability === 'none' || this.asks >= DURABLE_ASKS_MAX)) return;
    const atMs = Date.now();
    const epoch = this.epoch;
    this.asks++;
    this.askedId = Math.max(this.askedId, lastId);
    const made = log.durable().then(() => (log.durability === 'none' ? log.checkpoint() : undefined));
    made.then(
      () => {
        this.asks--;
        if (epoch !== this.epoch) return;
        this.upTo = Math.max(this.upTo, lastId);
        this.asOf = Math.max(this.asOf, atMs);
        this.onAnswer();
      },
      (err: Error) => {
        this.asks--;
        if (epoch !== this.epoch) return;
        this.error = err;
        this.onAnswer();
      },
    );
  }

  /** A record from `id` on changed (update-last) or belongs to another generation: its durability is asked again. */
  forgetFrom(id: number): void {
    this.epoch++;
    this.upTo = Math.min(this.upTo, id - 1);
    this.asOf = 0;
    this.askedId = Math.min(this.askedId, id - 1);
  }

  /** The failure of an ask, once: the next call returns undefined until another ask fails. */
  takeError(): Error | undefined {
    const err = this.error;
    this.error = undefined;
    return err;
  }
}
