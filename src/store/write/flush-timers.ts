/**
 * When the durability mode wants the write buffer flushed and the file synced. A flush follows the first
 * frame appended since the last one: under `always` at the end of the current macrotask (after the
 * microtasks it queued), so writers woken together by one fdatasync share one write; otherwise within
 * FLUSH_DELAY_MS. Under `interval` an fdatasync is due syncIntervalMs after the first unsynced write.
 */
import { FLUSH_DELAY_MS } from '../base/constants.js';
import type { Durability } from '../base/types.js';

export class FlushTimers {
  private flushScheduled = false;
  private syncTimer: NodeJS.Timeout | undefined;
  private readonly flushNow = (): void => {
    this.flushScheduled = false;
    this.onFlush();
  };
  private readonly syncNow = (): void => {
    this.syncTimer = undefined;
    this.onSyncDue();
  };

  constructor(
    private readonly durability: Durability,
    private readonly syncIntervalMs: number,
    private readonly onFlush: () => void,
    private readonly onSyncDue: () => void,
  ) {}

  /** A frame was appended (a bound function: the write buffer calls it for every record). */
  readonly appended = (): void => {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    if (this.durability === 'always') queueMicrotask(this.flushNow);
    else setTimeout(this.flushNow, FLUSH_DELAY_MS);
  };

  /** Bytes were handed to the kernel. */
  written(): void {
    if (this.durability === 'interval' && !this.syncTimer) this.syncTimer = setTimeout(this.syncNow, this.syncIntervalMs);
  }

  close(): void {
    clearTimeout(this.syncTimer);
  }
}
