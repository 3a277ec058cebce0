/**
 * The piscina pool of Lua workers. Tasks wait for a free worker here, not in piscina's queue, so the
 * hard time limit (an AbortSignal that ends the worker) measures running time only: a signal
 * started while the task still queued would abort tasks that never ran.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { RunResult, RunTask, ValidationResult, CompileTask } from './types.js';

export interface PoolOptions {
  /** 0 = cores - 1, at least 1. */
  workers: number;
  timeoutMs: number;
  hardTimeoutMs: number;
  memoryMb: number;
  /** Compiled worker module; defaults to dist/scripts/worker.js beside this module's compiled form. */
  workerFile?: string;
}

/** Thrown for a task whose worker was ended: the hard time limit, or a crash of the worker. */
/** /healthz says degraded while a worker fault is younger than this. */
const FAULT_WINDOW_MS = 60_000;
const FAULTS_KEPT = 20;

export class WorkerLostError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WorkerLostError';
  }
}

/**
 * Compiled, the worker module is beside this one (dist/scripts/, or dist-bench/src/scripts/ for the
 * benchmarks). Under vitest this module runs from src/scripts/pool.ts, but worker threads need
 * compiled JS, so a TS path inside src/ maps to the same place in dist/ (`npm test` builds first).
 */
export function defaultWorkerFile(moduleUrl: string = import.meta.url): string {
  const here = fileURLToPath(moduleUrl);
  const compiled = here.endsWith('.ts') ? here.replace(/([\\/])src([\\/])(?=[^\\/]+[\\/][^\\/]+$)/, '$1dist$2') : here;
  return compiled.replace(/[^\\/]+$/, 'worker.js');
}

export function defaultWorkerCount(): number {
  return Math.max(1, availableParallelism() - 1);
}

export class ScriptPool {
  readonly size: number;
  private readonly piscina: Piscina;
  private busy = 0;
  private readonly waiting: Array<() => void> = [];
  /** Worker faults (a thread that ended on an unexpected error), newest last, for /healthz. */
  private readonly faults: Array<{ atMs: number; message: string }> = [];

  constructor(private readonly options: PoolOptions) {
    this.size = options.workers > 0 ? options.workers : defaultWorkerCount();
    this.piscina = new Piscina({
      filename: options.workerFile ?? defaultWorkerFile(),
      minThreads: this.size,
      maxThreads: this.size,
      // A worker start costs an isolate, a wasm compile and rule compiles: never let them idle out.
      idleTimeout: Infinity,
      workerData: { timeoutMs: options.timeoutMs, memoryMb: options.memoryMb },
    });
  }

  run(task: RunTask): Promise<RunResult> {
    return this.submit(task) as Promise<RunResult>;
  }

  compile(task: CompileTask): Promise<ValidationResult> {
    return this.submit(task) as Promise<ValidationResult>;
  }

  async close(): Promise<void> {
    await this.piscina.destroy();
  }

  private async submit(task: RunTask | CompileTask): Promise<unknown> {
    await this.acquire();
    try {
      return await this.piscina.run(task, { signal: AbortSignal.timeout(this.options.hardTimeoutMs) });
    } catch (err) {
      const aborted = (err as Error).name === 'AbortError';
      if (!aborted) this.noteFault(`worker failed: ${(err as Error).message}`);
      throw new WorkerLostError(
        aborted ? `hard time limit exceeded (${this.options.hardTimeoutMs} ms), worker restarted` : `worker failed: ${(err as Error).message}`,
        { cause: err },
      );
    } finally {
      this.release();
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

  private acquire(): Promise<void> {
    if (this.busy < this.size) {
      this.busy++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Hands the slot straight to the next waiter, in submission order. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.busy--;
  }
}
