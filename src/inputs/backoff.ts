/**
 * Waits between attempts: exponential with full jitter (a random wait in [base/2, base]), so gateways
 * that lost one broker do not all come back in the same millisecond, and a full queue is retried soon
 * at first, then less often. A limit on everything: the wait never exceeds `maxMs`.
 */
export class Backoff {
  private attempt = 0;

  constructor(
    private readonly firstMs: number,
    private readonly maxMs: number,
    private readonly random: () => number = Math.random,
  ) {}

  /** The next wait; grows with each call until reset(). */
  nextMs(): number {
    const base = Math.min(this.maxMs, this.firstMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(base / 2 + (base / 2) * this.random());
  }

  reset(): void {
    this.attempt = 0;
  }
}

/** A timer that a stop can cut short: resolves false when cancelled. */
export class StopSignal {
  private stopped = false;
  private readonly waiters = new Set<() => void>();

  get isStopped(): boolean {
    return this.stopped;
  }

  stop(): void {
    this.stopped = true;
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  /** Resolves true after `ms`, or false at once when stopped (before or during the wait). */
  sleep(ms: number): Promise<boolean> {
    if (this.stopped) return Promise.resolve(false);
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.waiters.delete(wake);
        resolve(!this.stopped);
      };
      const timer = setTimeout(wake, ms);
      this.waiters.add(wake);
    });
  }
}
