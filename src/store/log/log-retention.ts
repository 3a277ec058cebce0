/**
 * Retention of one model's log: its limits, the floor the fleet uplink sets, and one pass at a time (a
 * call while a pass runs joins it). Age retention waits while the clock is not steady (age-clock.ts).
 */
import type { Generation } from './generation.js';
import { type RetentionFloor, applyRetention } from '../retention/retention.js';
import type { AgeClock } from '../retention/age-clock.js';
import type { FileIo } from '../base/file-io.js';
import type { RetentionLimits } from '../base/types.js';
import { validateRetention } from '../base/constants.js';

export class LogRetention {
  private limits: RetentionLimits;
  private floor: RetentionFloor | undefined;
  private run: Promise<void> | undefined;
  /** The limits the pass in flight applies: a pass with older limits does not stand for a new one. */
  private runLimits: RetentionLimits | undefined;

  constructor(
    private readonly io: FileIo,
    private readonly dir: string,
    limits: RetentionLimits,
    private readonly ageClock: AgeClock,
  ) {
    this.limits = limits;
  }

  set(limits: RetentionLimits): void {
    validateRetention(limits);
    this.limits = { ...limits };
  }

  /** Retention keeps what the floor holds (retention.ts RetentionFloor); undefined removes it. */
  setFloor(floor: RetentionFloor | undefined): void {
    this.floor = floor;
  }

  /** A pass over `g`: the one in flight when it applies the current limits, else one after it. */
  enforce(g: Generation, nowMs: number): Promise<void> {
    if (this.run !== undefined && this.runLimits === this.limits) return this.run;
    const before = this.ended();
    const limits = this.limits;
    const run: Promise<void> = before.then(() => this.pass(g, nowMs, limits)).finally(() => {
      if (this.run === run) this.run = undefined;
    });
    this.run = run;
    this.runLimits = limits;
    return run;
  }

  /** The pass in flight has ended; its failure is its caller's (enforce) to report. */
  async ended(): Promise<void> {
    await this.run?.then(
      () => undefined,
      () => undefined,
    );
  }

  private async pass(g: Generation, nowMs: number, r: RetentionLimits): Promise<void> {
    if (!g.manifest) return;
    const limits = r.maxAgeMs > 0 && !this.ageClock.trusted(nowMs, g.lastTs) ? { ...r, maxAgeMs: 0 } : r;
    await applyRetention(this.io, this.dir, g.segments, g.manifest, limits, nowMs, this.floor);
  }
}
