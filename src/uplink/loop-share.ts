/**
 * The shippers' share of the main thread while other work saturates it (issue 14: the store's append rate
 * with the uplink on stays >= 0.9x of off). The shippers run on the writers' event loop: each batch they
 * read, print and publish is time the writers do not get, and a writer that kept the loop busy lost 15-25%
 * of its rate to a shipper keeping pace. So while the work other than the shippers' own (event-loop
 * utilization less their time, over the window since the last look) keeps the loop busy most of the time,
 * the shippers wait after each batch until their time is SHARE_MAX of the time since, one budget for all
 * models. The records wait in the log, which is the buffer: the lag grows while writers saturate the loop,
 * and shipping goes back to full speed as soon as they stop. A loop with room (10,000 records/s, or a
 * catch-up after an outage) never pauses a shipper.
 */
import { performance, type EventLoopUtilization } from 'node:perf_hooks';

/** The shippers' share of a saturated loop, all models together. Their NATS client's own work (acks) is not counted in it. */
export const SHARE_MAX = 0.05;
/** Other work above this share of the window means the loop is saturated. */
export const SATURATED_SHARE = 0.8;
/** The loop is looked at no more often than this: a window this long smooths out single long turns. */
const WINDOW_MS_MIN = 50;
/** A pause is never longer than this, so a shipper soon sees a loop with room again. */
export const PAUSE_MS_MAX = 500;

export class LoopShare {
  private elu: EventLoopUtilization = performance.eventLoopUtilization();
  private windowStartMs = performance.now();
  /** The shippers' time since the window started. */
  private ownMs = 0;
  private saturated = false;
  /** While saturated: when any shipper may run again. */
  private notBeforeMs = 0;

  /** A shipper spent `busyMs` of this thread on a batch: how long it waits before the next (0: at once). */
  pauseAfter(busyMs: number): number {
    this.ownMs += busyMs;
    const now = performance.now();
    const windowMs = now - this.windowStartMs;
    if (windowMs >= WINDOW_MS_MIN) this.look(now, windowMs);
    if (!this.saturated) return 0;
    // busyMs is SHARE_MAX of the time from now until the next batch of any shipper.
    this.notBeforeMs = Math.max(this.notBeforeMs, now) + busyMs * (1 / SHARE_MAX - 1);
    return Math.min(PAUSE_MS_MAX, this.notBeforeMs - now);
  }

  private look(now: number, windowMs: number): void {
    const elu = performance.eventLoopUtilization();
    const activeMs = performance.eventLoopUtilization(elu, this.elu).active;
    this.saturated = activeMs - this.ownMs >= SATURATED_SHARE * windowMs;
    this.elu = elu;
    this.windowStartMs = now;
    this.ownMs = 0;
  }
}
