/**
 * How many payloads one worker task of an input carries. A task carries about BATCH_TARGET_MS of work:
 * long enough to amortise the per-task cost (messaging, and this thread's appends while the worker waits
 * for its next batch), short enough to keep latency low and far below the hard time limit, which a whole
 * batch must fit in. It is also how long another input may have to wait for a worker (see ScriptPool),
 * unless one payload takes longer.
 *
 * Short for memory: what a task holds for its whole run (its payloads, the records it packs) is
 * promoted to the worker's old generation once the task outlives two young-generation collections,
 * which with `--max-semi-space-size=1` is about 2 MB of allocation, 5-10 ms of Lua. At 25 ms a task
 * (1000 sample payloads) promoted ~0.4 MB, and the worker's heap swung between 11 and 25 MB at
 * 10,000 records/s; at 2 ms it stays at 9.5 MB (docs/performance.md, "Memory").
 *
 * 3 ms, not more: every task also costs the main thread (piscina, structured clones, timers) and V8's
 * compiler and GC threads, so larger tasks cost less CPU per record. On a slow 2-core EPYC, bench:ingest's
 * server CPU per record (medians of interleaved runs) was 33.1 µs at 2 ms, 31.3 at 3, 28.2 at 4, 27.6 at
 * 8. But RSS at 10,000 records/s (bench:memory, target < 100 MiB) reached 115 and 119 MiB at 6 and 8 ms
 * and 100.1 MiB in one of eight rounds at 4 ms; at 3 ms its max stayed at 95.9-97.6 MiB in all six rounds
 * (2 ms: 96.5-99.3). The limit seems to follow how long a task lives, not how many payloads it carries: 6 ms
 * tasks of ~140 sample payloads broke it there, 2 ms tasks of 130-200 do not on a faster machine
 * (docs/performance.md, "Batch size: CPU against memory").
 */
import type { RuleScripts } from './shared/protocol.js';

export const BATCH_TARGET_MS = 3;
export const BATCH_PAYLOADS_MAX = 4096;

/**
 * Payloads that fill BATCH_TARGET_MS at the measured worker time per payload (all rules), at least
 * one (a rule that needs more than the target per payload runs one payload per task), and at most
 * twice the largest batch that completed since the rules last changed (`provenPayloads`): the first
 * batch of an input, of new rules or after a lost worker carries one payload, and sizes grow from there.
 */
export function batchLimit(msPerPayload: number | undefined, provenPayloads: number): number {
  if (msPerPayload === undefined || provenPayloads === 0) return 1;
  const fit = Math.floor(BATCH_TARGET_MS / Math.max(msPerPayload, 1e-6));
  return Math.min(BATCH_PAYLOADS_MAX, 2 * provenPayloads, Math.max(1, fit));
}

/** The measurements behind one input's batch sizes, for the rule versions they were taken with. */
export class BatchSizing {
  /** Moving average of the worker time per payload of this input's batches, for the current rules. */
  private msPerPayload: number | undefined;
  /** The largest batch completed since `rulesKey` changed or a worker was lost. */
  private provenPayloads = 0;
  /** The rule versions the sizing was measured with. */
  private rulesKey = '';

  /** Payloads the next batch may carry under `rules`; other rule versions than last time start the sizing over. */
  limitFor(rules: RuleScripts[]): number {
    const rulesKey = rulesKeyOf(rules);
    if (rulesKey !== this.rulesKey) {
      this.rulesKey = rulesKey;
      this.reset();
    }
    return batchLimit(this.msPerPayload, this.provenPayloads);
  }

  /** A batch of `payloads` under `rules` took `elapsedMs` of worker time; measured under older rules, it says nothing. */
  measured(rules: RuleScripts[], payloads: number, elapsedMs: number): void {
    if (this.rulesKey !== rulesKeyOf(rules)) return;
    const sample = elapsedMs / payloads;
    this.msPerPayload = this.msPerPayload === undefined ? sample : 0.7 * this.msPerPayload + 0.3 * sample;
    this.provenPayloads = Math.max(this.provenPayloads, payloads);
  }

  /** Start small again: the next batch carries one payload. */
  reset(): void {
    this.msPerPayload = undefined;
    this.provenPayloads = 0;
  }
}

function rulesKeyOf(rules: RuleScripts[]): string {
  return rules.map((r) => `${r.uuid}@${r.version}`).join(',');
}
