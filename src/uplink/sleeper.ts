/**
 * How the shipper's loop waits between turns: a sleep that an ack, a failure, a supersede or stop ends
 * early, and a back-off with full jitter and a pause that only stop ends early.
 */
export const BACKOFF_MIN_MS = 250;
export const BACKOFF_MAX_MS = 30_000;

export class Sleeper {
  private waiters: Array<() => void> = [];
  private stoppedNow = false;
  private backoffMs = BACKOFF_MIN_MS;

  get stopped(): boolean {
    return this.stoppedNow;
  }

  /** Ends every wait under way; later sleeps return at once. */
  stop(): void {
    this.stoppedNow = true;
    this.wake();
  }

  /** Resolves after `ms`, or earlier on wake() or stop(); at once when stopped. */
  sleep(ms: number): Promise<void> {
    if (this.stoppedNow && ms > 0) return Promise.resolve();
    return this.wait(ms);
  }

  /** Resolves after `ms` or at the next wake(), also once stopped: the grace stop() gives acks in flight. */
  wait(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        resolve();
      }, Math.max(0, ms));
      this.waiters.push(done);
    });
  }

  wake(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /** Waits the next back-off: only stop() ends it early, so acks and supersedes of other batches cannot shorten it. */
  backOff(): Promise<void> {
    return this.pause(this.nextBackoffMs());
  }

  /** Waits `ms` that only stop() ends early (a back-off, or a yield of the main thread that acks must not cut short). */
  async pause(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (!this.stoppedNow && Date.now() < until) await this.sleep(until - Date.now());
  }

  /** The hub answered: the next back-off starts short again. */
  resetBackoff(): void {
    this.backoffMs = BACKOFF_MIN_MS;
  }

  /** Full jitter: a fleet that lost its hub does not come back in step. */
  private nextBackoffMs(): number {
    const wait = Math.random() * this.backoffMs;
    this.backoffMs = Math.min(BACKOFF_MAX_MS, this.backoffMs * 2);
    return wait;
  }
}
