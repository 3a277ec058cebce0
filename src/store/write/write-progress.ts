/**
 * How far a generation's bytes got, in log sequence numbers (lsn: bytes appended since the generation
 * started), and the durable() callers waiting on it. appended (the write buffer's count) >= written
 * (handed to the kernel) >= synced (covered by an fdatasync); durable is what durable() has promised:
 * written under `none`, synced otherwise. Each only moves forward; both are asserted.
 */
import { assert } from '../base/constants.js';
import type { Durability } from '../base/types.js';

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

export class WriteProgress {
  private written = 0;
  private synced = 0;
  private durable = 0;
  /** In lsn order. */
  private readonly waiters: Waiter[] = [];

  constructor(
    private readonly buffer: { readonly appendedLsn: number },
    private readonly durability: Durability,
  ) {}

  get appendedLsn(): number {
    return this.buffer.appendedLsn;
  }

  get writtenLsn(): number {
    return this.written;
  }

  get syncedLsn(): number {
    return this.synced;
  }

  get durableLsn(): number {
    return this.durable;
  }

  wrote(lsn: number): void {
    assert(lsn >= this.written && lsn <= this.buffer.appendedLsn, 'writtenLsn moves forward, never past appendedLsn');
    this.written = lsn;
  }

  /** An fdatasync covered everything written up to `lsn`. */
  syncedTo(lsn: number): void {
    assert(lsn >= this.synced && lsn <= this.written, 'syncedLsn moves forward, never past writtenLsn');
    this.synced = lsn;
  }

  /** Everything up to `lsn` is durable under the mode: resolves, in one pass, the waiters it covers; returns how many. */
  durableTo(lsn: number): number {
    if (lsn > this.durable) this.durable = lsn;
    const list = this.waiters;
    let n = 0;
    while (n < list.length && list[n].lsn <= this.durable) list[n++].resolve();
    if (n > 0) list.splice(0, n);
    return n;
  }

  /**
   * A promise that resolves once everything appended so far is durable. Callers whose bytes are in the
   * same uncut chunk (above `cutLsn`) share one promise: they go out in the same write and are covered by
   * the same fdatasync.
   */
  wait(rejectWhenReadOnly: boolean, cutLsn: number): Promise<void> {
    const lsn = this.buffer.appendedLsn;
    const last = this.waiters[this.waiters.length - 1];
    assert(last === undefined || lsn >= last.lsn, 'durable() waiters are kept in lsn order');
    if (last !== undefined && last.lsn > cutLsn && last.rejectWhenReadOnly === rejectWhenReadOnly) {
      last.lsn = lsn;
      return last.promise;
    }
    const w = new Waiter(lsn, rejectWhenReadOnly);
    this.waiters.push(w);
    return w.promise;
  }

  /** The model turned read-only: the callers that asked not to wait for space are told now. */
  rejectReadOnly(error: Error): void {
    let kept = 0;
    for (const w of this.waiters) {
      if (w.rejectWhenReadOnly) w.reject(error);
      else this.waiters[kept++] = w;
    }
    this.waiters.length = kept;
  }

  /** The writer closed: nothing left waiting will be met. */
  rejectAll(error: Error): void {
    for (const w of this.waiters.splice(0)) w.reject(error);
  }

  checkOrder(): void {
    assert(this.buffer.appendedLsn >= this.written && this.written >= this.synced, 'lsn order: appended >= written >= synced');
    const durableMax = this.durability === 'none' ? this.written : this.synced;
    assert(this.durable <= durableMax, 'nothing is durable before it is written (none) or synced (interval, always)');
  }
}
