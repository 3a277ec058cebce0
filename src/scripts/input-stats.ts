/**
 * Per input, since the service started: when a payload last arrived, how many payloads were stored or
 * failed, and the last failure. The lists of the UI show them as the input's health; the queue depth
 * comes from the dispatcher when they are read.
 */
import { capMessage } from './shared/repeat-filter.js';
import type { InputStats, RuleError } from './shared/types.js';

export class InputCounters {
  private lastPayloadAtMs: number | null = null;
  private accepted = 0;
  private failed = 0;
  private lastError: Omit<RuleError, 'line'> | null = null;

  received(atMs = Date.now()): void {
    this.lastPayloadAtMs = atMs;
  }

  /**
   * A payload ran through every rule: `error` is its first failure, undefined when it was stored. The
   * clock is read for a failure only: this runs for every payload.
   */
  settled(error: string | undefined, atMs?: number): void {
    if (error === undefined) {
      this.accepted++;
      return;
    }
    this.failed++;
    // `inends/stats` shows it: at most 1 KB (contract 18), as the push answer that carried it.
    this.lastError = { message: capMessage(error), atMs: atMs ?? Date.now() };
  }

  view(uuid: string, queued: number): InputStats {
    return {
      uuid,
      lastPayloadAtMs: this.lastPayloadAtMs,
      accepted: this.accepted,
      failed: this.failed,
      queued,
      lastError: this.lastError === null ? null : { ...this.lastError },
    };
  }
}
