/**
 * Whether the wall clock may drive age retention now (contract 14). Edge gateways often boot with a wrong
 * RTC and correct it later from NTP or GPS; a reading that is behind the newest stored record, or that
 * moved by more than `jumpMaxMs` beside the monotonic clock since the previous check, would delete fresh
 * history for good. Such a check is skipped (the other limits still apply) and noted once per episode;
 * the next check with a steady clock trusts it again.
 */
export class AgeClock {
  private last: { wallMs: number; monoMs: number } | undefined;
  private distrusted = false;

  constructor(
    private readonly jumpMaxMs: number,
    private readonly warn: (message: string) => void,
  ) {}

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

function iso(ms: number): string {
  return new Date(ms).toISOString();
}
