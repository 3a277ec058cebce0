/**
 * Per-rule statistics. Workers count invocation durations into a fixed-bucket histogram (cheap to
 * fill, cheap to send, mergeable), the main thread adds them up and derives p50/p99 from the buckets.
 */
import type { InvocationError, RuleRunSummary } from './protocol.js';
import { capMessage } from './repeat-filter.js';
import type { RuleError, RuleStats } from './types.js';

/** Upper bounds in milliseconds; the last bucket holds everything slower. */
export const DURATION_BUCKETS_MS = [
  0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, Infinity,
] as const;

export const LAST_ERRORS_MAX = 20;

export function newHistogram(): number[] {
  return new Array<number>(DURATION_BUCKETS_MS.length).fill(0);
}

export function recordDuration(histogram: number[], ms: number): void {
  let i = 0;
  while (ms > DURATION_BUCKETS_MS[i]) i++;
  histogram[i]++;
}

/** The upper bound of the bucket holding quantile `q`; the open last bucket reports its lower bound. */
export function quantileMs(histogram: readonly number[], q: number): number {
  const total = histogram.reduce((a, b) => a + b, 0);
  if (total === 0) return 0;
  const rank = Math.ceil(q * total);
  let seen = 0;
  for (let i = 0; i < histogram.length; i++) {
    seen += histogram[i];
    if (seen >= rank) {
      const bound = DURATION_BUCKETS_MS[i];
      return bound === Infinity ? DURATION_BUCKETS_MS[i - 1] : bound;
    }
  }
  return 0;
}

class RuleCounters {
  invocations = 0;
  failures = 0;
  lastRunAtMs: number | null = null;
  readonly histogram = newHistogram();
  readonly lastErrors: RuleError[] = [];

  /** `rules/stats` shows them: each at most 1 KB (contract 18), whoever made it. */
  addError(error: RuleError): void {
    this.lastErrors.push({ ...error, message: capMessage(error.message) });
    if (this.lastErrors.length > LAST_ERRORS_MAX) this.lastErrors.shift();
  }
}

export class RuleStatsBook {
  private readonly byRule = new Map<string, RuleCounters>();

  private counters(uuid: string): RuleCounters {
    let c = this.byRule.get(uuid);
    if (!c) {
      c = new RuleCounters();
      this.byRule.set(uuid, c);
    }
    return c;
  }

  addSummary(uuid: string, summary: RuleRunSummary, atMs = Date.now()): void {
    const c = this.counters(uuid);
    if (summary.invocations > 0) c.lastRunAtMs = atMs;
    c.invocations += summary.invocations;
    c.failures += summary.failures;
    for (let i = 0; i < c.histogram.length; i++) c.histogram[i] += summary.histogram[i] ?? 0;
  }

  /** An error found by a worker (already counted in its summary). */
  addError(uuid: string, error: Pick<InvocationError, 'message' | 'line'>, atMs = Date.now()): void {
    this.counters(uuid).addError({ message: error.message, ...(error.line !== undefined ? { line: error.line } : {}), atMs });
  }

  /** An invocation the worker counted as a success turned out to fail (the store refused its record). */
  reclassifyAsFailure(uuid: string, message: string): void {
    const c = this.counters(uuid);
    c.failures++;
    c.addError({ message, atMs: Date.now() });
  }

  /** An invocation that never produced a summary: its worker was ended by the hard time limit. */
  addLostInvocation(uuid: string, message: string): void {
    const c = this.counters(uuid);
    c.invocations++;
    c.failures++;
    c.lastRunAtMs = Date.now();
    c.addError({ message, atMs: c.lastRunAtMs });
  }

  forget(uuid: string): void {
    this.byRule.delete(uuid);
  }

  get(uuid: string): RuleStats {
    const c = this.counters(uuid);
    return {
      uuid,
      invocations: c.invocations,
      successes: c.invocations - c.failures,
      failures: c.failures,
      lastErrors: c.lastErrors.map((e) => ({ ...e })),
      p50Ms: quantileMs(c.histogram, 0.5),
      p99Ms: quantileMs(c.histogram, 0.99),
      lastRunAtMs: c.lastRunAtMs,
    };
  }
}
