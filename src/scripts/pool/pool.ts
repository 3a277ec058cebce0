/**
 * The piscina pool of Lua workers. Tasks wait for a free worker here, not in piscina's queue, so the
 * hard time limit (an AbortSignal that ends the worker) measures running time only: a signal
 * started while the task still queued would abort tasks that never ran.
 *
 * Each task has an owner (its input). A freed worker goes to the waiting task whose owner holds the
 * fewest workers, oldest first: an input that keeps every worker busy with slow rules cannot make
 * another input wait for more than the first of its tasks to finish.
 *
 * Workers start on demand and stop after `idleStopMs` without work, so an idle service holds no
 * isolate or wasm heap (docs/performance.md, "Memory"). A task that finds no worker for its slot
 * first starts one with a `start` task outside the hard time limit: a cold start (isolate, wasm
 * compile) is several times slower on an ARM board and must not count as the rule's running time.
 *
 * Run tasks go slim (protocol.ts slimTask), whole only to a worker that lacks what the slim form leaves
 * out; and without Lua's instruction hook, watched (overrun-watch.ts): one that overruns ends its worker
 * and runs again hooked, and so do its owner's next tasks for a while.
 */
import { fileURLToPath } from 'node:url';
import { Piscina } from '../../util/lazy-piscina.js';
import { WorkerLostError } from '../../errors.js';
import { OverrunWatch } from './overrun-watch.js';
import { isStale, slimTask, WATCH_OVERRAN, type CompileTask, type RunResult, type RunTask, type StaleAnswer, type StartTask, type WorkerAnswer, type WorkerTask } from '../shared/protocol.js';
import type { ValidationResult } from '../shared/types.js';
import { defaultWorkerCount } from './worker-count.js';

export interface PoolOptions {
  /** Workers at most; 0 = defaultWorkerCount(). */
  workers: number;
  timeoutMs: number;
  hardTimeoutMs: number;
  memoryMb: number;
  /** A worker without work this long stops; 0 = all workers start now and never stop. Default 60 s. */
  idleStopMs?: number;
  /** Compiled worker module; defaults to dist/scripts/lua/worker.js beside this module's compiled form. */
  workerFile?: string;
}

export const IDLE_STOP_MS_DEFAULT = 60_000;
/** A worker that is not ready by then (a wedged start) fails the task that waits for it. */
const WORKER_START_MS_MAX = 30_000;

/** /healthz says degraded while a worker fault is younger than this. */
const FAULT_WINDOW_MS = 60_000;
const FAULTS_KEPT = 20;

/**
 * Compiled, the worker module is in lua/ beside this folder (dist/scripts/lua/, or dist-bench/src/scripts/lua/
 * for the benchmarks). Under vitest this module runs from src/scripts/pool/pool.ts, but worker threads need
 * compiled JS, so a TS path inside src/ maps to the same place in dist/; the tests' global setup
 * (test/support/fresh-dist.ts) rebuilds dist/ first whenever it is older than src/.
 */
export function defaultWorkerFile(moduleUrl: string = import.meta.url): string {
  const here = fileURLToPath(moduleUrl);
  const compiled = here.endsWith('.ts') ? here.replace(/([\\/])src([\\/])(?=[^\\/]+[\\/][^\\/]+[\\/][^\\/]+$)/, '$1dist$2') : here;
  return compiled.replace(/pool[\\/][^\\/]+$/, 'lua/worker.js');
}

/**
 * One task's time limit as the abort signal piscina takes. Not AbortSignal.timeout: its timer outlives
 * the task and fires `limitMs` after every task, each time building a DOMException with a stack and
 * dispatching an abort event nobody listens to any more; nor an AbortController, whose EventTarget
 * listener bookkeeping piscina's own per-task work already doubles. Together about 0.8 µs a record of
 * main-thread CPU at ~100 payloads a task (docs/performance.md, "HTTP ingest").
 */
class TaskDeadline {
  aborted = false;
  /** Ended by the overrun watch, not by the time limit. */
  stalled = false;
  reason: unknown;
  private listener: (() => void) | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(limitMs: number) {
    this.timer = setTimeout(() => this.abort(), limitMs).unref();
  }

  /** Piscina listens once per task. */
  addEventListener(_name: 'abort', listener: () => void): void {
    this.listener = listener;
  }

  removeEventListener(_name: 'abort', listener: () => void): void {
    if (this.listener === listener) this.listener = undefined;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.listener = undefined;
  }

  /** The overrun watch ends the task's worker. */
  stall(): void {
    if (this.aborted) return;
    this.stalled = true;
    this.abort();
  }

  private abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = new Error(this.stalled ? 'an invocation without the instruction hook stalled' : 'time limit exceeded');
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}

/** runUnhooked's answer when the task must run again hooked. */
const OVERRAN = Symbol('overran');

export class ScriptPool {
  readonly size: number;
  private readonly piscina: Piscina;
  private busy = 0;
  private readonly waiting: Array<{ owner: string; resolve: () => void }> = [];
  /** Workers held per owner. */
  private readonly held = new Map<string, number>();
  /** Worker faults (a thread that ended on an unexpected error), newest last, for /healthz. */
  private readonly faults: Array<{ atMs: number; message: string }> = [];
  private readonly overrunWatch: OverrunWatch;
  /** Run tasks sent again whole after a worker answered their slim form as stale. */
  wholeTasks = 0;

  constructor(private readonly options: PoolOptions) {
    this.size = options.workers > 0 ? options.workers : defaultWorkerCount();
    const idleStopMs = options.idleStopMs ?? IDLE_STOP_MS_DEFAULT;
    this.piscina = new Piscina({
      filename: options.workerFile ?? defaultWorkerFile(),
      minThreads: idleStopMs === 0 ? this.size : 0,
      maxThreads: this.size,
      idleTimeout: idleStopMs === 0 ? Infinity : idleStopMs,
      // Its run and wait time histograms (about 0.7 MB) are never read: rule timings are our own (stats.ts).
      recordTiming: false,
      workerData: { timeoutMs: options.timeoutMs, memoryMb: options.memoryMb },
    });
    this.overrunWatch = new OverrunWatch(options.timeoutMs);
  }

  /**
   * `owner`: whose turn this is (the input's uuid), for sharing the workers fairly. The task goes slim
   * (slimTask): whole only to a worker that answers that it lacks the models' version or a rule's.
   */
  async run(task: RunTask, owner = ''): Promise<RunResult> {
    const answer = await this.submit(slimTask(task), owner);
    if (!isStale(answer)) return answer as RunResult;
    this.wholeTasks++;
    const whole = await this.submit(task, owner);
    if (isStale(whole)) throw new Error('a worker answered a whole task as stale: the task lacks its models or a rule its scripts');
    return whole as RunResult;
  }

  compile(task: CompileTask): Promise<ValidationResult> {
    return this.submit(task, 'compile') as Promise<ValidationResult>;
  }

  /** Worker threads running or starting now. */
  get workers(): number {
    return this.piscina.threads.length;
  }

  /** Run tasks that overran without the instruction hook and ran again with it. */
  get overruns(): number {
    return this.overrunWatch.overruns;
  }

  async close(): Promise<void> {
    this.overrunWatch.close();
    await this.piscina.destroy();
  }

  private async submit(task: WorkerTask, owner: string): Promise<WorkerAnswer> {
    await this.acquire(owner);
    try {
      await this.workerForEachSlot();
      if (task.kind === 'run' && !this.overrunWatch.hooked(owner)) {
        const result = await this.runUnhooked(task, owner);
        if (result !== OVERRAN) return result;
        await this.workerForEachSlot();
      }
      return await this.runWithin(task, new TaskDeadline(this.options.hardTimeoutMs));
    } catch (err) {
      const aborted = (err as Error).name === 'AbortError';
      if (!aborted) this.noteFault(`worker failed: ${(err as Error).message}`);
      throw new WorkerLostError(
        aborted ? `hard time limit exceeded (${this.options.hardTimeoutMs} ms), worker restarted` : `worker failed: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      this.release(owner);
    }
  }

  /**
   * Runs `task` without the instruction hook, watched: OVERRAN when an invocation ran past the soft limit
   * (the worker said so and ended itself, or the watch ended it), and `owner` runs hooked for a while.
   */
  private async runUnhooked(task: RunTask, owner: string): Promise<RunResult | StaleAnswer | typeof OVERRAN> {
    const deadline = new TaskDeadline(this.options.hardTimeoutMs);
    const run = this.overrunWatch.watch(() => deadline.stall());
    let workerAlive = false;
    try {
      const result = (await this.runWithin({ ...task, watch: run.cell }, deadline)) as RunResult | StaleAnswer;
      workerAlive = true;
      return result;
    } catch (err) {
      if (!deadline.stalled && Atomics.load(run.cell, WATCH_OVERRAN) !== 1) throw err;
      this.overrunWatch.overran(owner);
      return OVERRAN;
    } finally {
      this.overrunWatch.unwatch(run, workerAlive);
    }
  }

  /** Runs `task`, aborted (its worker ended) when `deadline` fires. */
  private async runWithin(task: WorkerTask, deadline: TaskDeadline): Promise<WorkerAnswer> {
    try {
      return (await this.piscina.run(task, { signal: deadline })) as WorkerAnswer;
    } finally {
      deadline.clear();
    }
  }

  /**
   * Piscina starts a worker for a task it cannot place; this one only waits for it to be ready, when a
   * slot has none (a first task, or one after a worker was ended).
   */
  private async workerForEachSlot(): Promise<void> {
    if (this.piscina.threads.length >= this.busy) return;
    const start: StartTask = { kind: 'start' };
    try {
      await this.runWithin(start, new TaskDeadline(WORKER_START_MS_MAX));
    } catch (err) {
      const message = (err as Error).name === 'AbortError' ? `not ready after ${WORKER_START_MS_MAX} ms` : (err as Error).message;
      this.noteFault(`worker did not start: ${message}`);
      throw new WorkerLostError(`worker did not start: ${message}`, { cause: err });
    }
  }

  /** Worker faults within the last `windowMs`: rules failed for them, not for their own errors. */
  recentFaults(windowMs = FAULT_WINDOW_MS, nowMs = Date.now()): string[] {
    return this.faults.filter((f) => nowMs - f.atMs < windowMs).map((f) => f.message);
  }

  private noteFault(message: string): void {
    this.faults.push({ atMs: Date.now(), message });
    if (this.faults.length > FAULTS_KEPT) this.faults.shift();
  }

  private acquire(owner: string): Promise<void> {
    if (this.busy < this.size) {
      this.busy++;
      this.hold(owner, 1);
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push({ owner, resolve }));
  }

  /** Hands the slot straight to the waiter whose owner holds the fewest, oldest first. */
  private release(owner: string): void {
    this.hold(owner, -1);
    if (this.waiting.length === 0) {
      this.busy--;
      return;
    }
    let pick = 0;
    for (let i = 1; i < this.waiting.length; i++) {
      if ((this.held.get(this.waiting[i].owner) ?? 0) < (this.held.get(this.waiting[pick].owner) ?? 0)) pick = i;
    }
    const [next] = this.waiting.splice(pick, 1);
    this.hold(next.owner, 1);
    next.resolve();
  }

  private hold(owner: string, delta: number): void {
    const count = (this.held.get(owner) ?? 0) + delta;
    if (count === 0) this.held.delete(owner);
    else this.held.set(owner, count);
  }
}
