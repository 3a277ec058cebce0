/**
 * Watches the tasks that run without Lua's instruction hook (lua-sandbox.ts `invokeAll`), from the main
 * thread, and says whose tasks run hooked for a while after one of them overran. Owns the watch cells'
 * reading and the check timer; pool.ts owns the tasks and ends their workers. Imports nothing of ours
 * but the protocol's cell layout.
 *
 * Without the hook nothing inside a worker stops `while true do end`. Each unhooked task gets a watch
 * cell the worker bumps as each invocation (or compile) starts. A task whose cell has not moved for the
 * soft time limit is in one invocation that has run at least that long: the hook would have ended it by
 * now, so the task's worker is ended and the task runs again hooked, which gives the limit's outcome.
 * The check runs every half limit (at least every CHECK_MS_MIN), so an endless loop holds a worker for
 * one to one and a half limits before the hooked run, instead of to the hard limit.
 */
import { WATCH_STARTED, watchCell } from '../shared/protocol.js';

/** After an overrun, the owner's tasks run hooked this long: an endless loop costs a worker once. */
export const HOOKED_AFTER_OVERRUN_MS = 60_000;
const CHECK_MS_MIN = 10;
/** Cells kept for reuse; one per worker at most is ever in use. */
const SPARE_CELLS_MAX = 64;

export interface WatchedRun {
  readonly cell: Int32Array;
  /** WATCH_STARTED when last seen (-1: not yet; the first check takes the baseline), and the checks since it last moved. */
  seen: number;
  stillChecks: number;
  /** Called once, from the timer, when the task has stalled for the time limit. */
  readonly onStall: () => void;
}

export class OverrunWatch {
  private readonly runs = new Set<WatchedRun>();
  private readonly hookedUntilMs = new Map<string, number>();
  private readonly spareCells: Int32Array[] = [];
  private readonly checkMs: number;
  /** Checks a cell must stay still through: together at least the soft limit. */
  private readonly stallChecks: number;
  private timer: NodeJS.Timeout | undefined;
  /** Tasks that overran unhooked since the start, for /metrics and the tests. */
  overruns = 0;

  constructor(timeoutMs: number) {
    if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be > 0, got ${timeoutMs}`);
    this.checkMs = Math.max(CHECK_MS_MIN, timeoutMs / 2);
    this.stallChecks = Math.max(1, Math.ceil(timeoutMs / this.checkMs));
  }

  /** Whether `owner`'s tasks run hooked now: for HOOKED_AFTER_OVERRUN_MS after one of them overran. */
  hooked(owner: string, nowMs = performance.now()): boolean {
    const untilMs = this.hookedUntilMs.get(owner);
    if (untilMs === undefined) return false;
    if (nowMs < untilMs) return true;
    this.hookedUntilMs.delete(owner);
    return false;
  }

  overran(owner: string, nowMs = performance.now()): void {
    this.overruns++;
    this.hookedUntilMs.set(owner, nowMs + HOOKED_AFTER_OVERRUN_MS);
  }

  /** Starts watching a task: its cell goes in the task (RunTask.watch). */
  watch(onStall: () => void): WatchedRun {
    const run: WatchedRun = { cell: this.spareCells.pop() ?? watchCell(), seen: -1, stillChecks: 0, onStall };
    this.runs.add(run);
    this.timer ??= setInterval(() => this.check(), this.checkMs).unref();
    return run;
  }

  /**
   * Stops watching. `reuse`: the task ended with its worker alive, so nothing writes the cell any more;
   * a cell of an ended worker is dropped, in case the thread is still going down.
   */
  unwatch(run: WatchedRun, reuse: boolean): void {
    this.runs.delete(run);
    if (reuse && this.spareCells.length < SPARE_CELLS_MAX) {
      run.cell.fill(0);
      this.spareCells.push(run.cell);
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.runs.clear();
  }

  private check(): void {
    if (this.runs.size === 0) {
      // Idle: the next watched task starts the timer again.
      clearInterval(this.timer);
      this.timer = undefined;
      return;
    }
    for (const run of this.runs) {
      const started = Atomics.load(run.cell, WATCH_STARTED);
      if (started !== run.seen) {
        run.seen = started;
        run.stillChecks = 0;
      } else if (++run.stillChecks >= this.stallChecks) {
        this.runs.delete(run);
        run.onStall();
      }
    }
  }
}
