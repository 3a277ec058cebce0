/**
 * A fixed-bucket latency histogram, cheap enough to observe every fdatasync. Read through
 * `ModelLog.stats().fsync` (the HTTP layer turns it into a Prometheus histogram at scrape time).
 */

/** Upper bounds in seconds; one more bucket (+Inf) follows. */
export const FSYNC_BUCKETS_S: readonly number[] = Object.freeze([
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
]);

export interface LatencySnapshot {
  /** Upper bounds in seconds. */
  bounds: readonly number[];
  /** Observations per bucket (not cumulative); `counts.length === bounds.length + 1`, the last is +Inf. */
  counts: number[];
  sumS: number;
  count: number;
}

export class LatencyHistogram {
  private readonly counts: number[];
  private sumS = 0;
  private count = 0;

  constructor(private readonly bounds: readonly number[] = FSYNC_BUCKETS_S) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  observe(seconds: number): void {
    let i = 0;
    while (i < this.bounds.length && seconds > this.bounds[i]) i++;
    this.counts[i]++;
    this.sumS += seconds;
    this.count++;
  }

  /** Times `op` and observes it when it succeeds. */
  async time<T>(op: () => Promise<T>): Promise<T> {
    const t0 = process.hrtime.bigint();
    const result = await op();
    this.observe(Number(process.hrtime.bigint() - t0) / 1e9);
    return result;
  }

  snapshot(): LatencySnapshot {
    return { bounds: this.bounds, counts: [...this.counts], sumS: this.sumS, count: this.count };
  }
}
