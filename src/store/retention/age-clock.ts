/**
 * How far the wall clock is trusted: for record timestamps, and whether it may drive age retention now
 * (contract 14). Edge gateways often boot with a wrong
 * RTC and correct it later from NTP or GPS; a reading that is behind the newest stored record, or that
 * moved by more than `jumpMaxMs` beside the monotonic clock since the previous check, would delete fresh
 * history for good. Such a check is skipped (the other limits still apply) and noted once per episode;
 * the next check with a steady clock trusts it again.
 */
export class AgeClock {
  private last: { wallMs: number; monoMs: number } | undefined;
  private distrusted = false;
  /** The newest record is ahead of the clock by more than `jumpMaxMs`; noted once per episode. */
  private behind = false;

  constructor(
    private readonly jumpMaxMs: number,
    private readonly warn: (message: string) => void,
  ) {}

  /**
   * `create_at` of a record written now. Timestamps never decrease with id across a small backward step
   * (NTP slewing, a few seconds): the newest one is kept. A step back of more than `jumpMaxMs` means the
   * newest record was stamped by a clock that was wrong (an RTC a year ahead, corrected later): keeping
   * it would freeze every later timestamp there, so the clock's time is taken and the step is logged.
   */
  recordTs(nowMs: number, newestTs: number): number {
    if (nowMs >= newestTs) {
      this.behind = false;
      return nowMs;
    }
    if (newestTs - nowMs <= this.jumpMaxMs) return newestTs;
    if (!this.behind) {
      this.warn(
        `the clock (${iso(nowMs)}) is ${Math.round((newestTs - nowMs) / 1000)} s behind the newest record (${iso(newestTs)}): ` +
          'new records take the clock\'s time, so create_at steps back once instead of staying in the future',
      );
    }
    this.behind = true;
    return nowMs;
  }

  trusted(nowMs: number, newestTs: number): boolean {
    const monoMs = performance.now();
    const prev = this.last;
    this.last = { wallMs: nowMs, monoMs };
    const jumpMs = prev === undefined ? 0 : nowMs - prev.wallMs - (monoMs - prev.monoMs);
    let reason: string | undefined;
    if (nowMs < newestTs) reason = `the clock (${iso(nowMs)}) is behind the newest record (${iso(newestTs)})`;
    else if (Math.abs(jumpMs) > this.jumpMaxMs) reason = `the clock jumped by ${Math.round(jumpMs / 1000)} s since the last check`;
    if (reason !== undefined && !this.distrusted) this.warn(`age retention waits for a steady clock: ${reason}`);
    this.distrusted = reason !== undefined;
    return !this.distrusted;
  }
}

/** A damaged frame can carry any timestamp: one out of Date's range is shown as a number. */
function iso(ms: number): string {
  const d = new Date(ms);
  return Number.isNaN(d.getTime()) ? `${ms} ms` : d.toISOString();
}
