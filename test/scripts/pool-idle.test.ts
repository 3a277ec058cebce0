/**
 * Lua workers start on demand and stop when idle (issue 15): an idle service holds no worker, the
 * first task starts one, a worker without work for `idleStopMs` stops, and the next task starts a
 * fresh one. A cold start is not counted against the hard time limit: with a hard limit far below
 * a worker's start time (a worker made 3 s slower to start), tasks after an idle stop still succeed.
 * Real piscina worker threads running dist/scripts/lua/worker.js.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import { defaultWorkerCount, SMALL_BOARD_MEMORY_BYTES } from '../../src/scripts/pool/worker-count.js';

const GOOD = { kind: 'compile' as const, actions: 'Actions = { function(a) return true, a end }', success: '', failed: '' };
const GIB = 2 ** 30;
/** The extra start time of test/support/slow-start-worker.mjs (its SLOW_START_MS). */
const SLOW_START_MS = 3000;
/** The hard time limit in the cold-start case: half the start, many times a compile's time on a loaded machine. */
const HARD_MS = 1500;
const SLOW_WORKER = fileURLToPath(new URL('../support/slow-start-worker.mjs', import.meta.url));

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not reached within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('ScriptPool workers on demand', () => {
  it('starts no worker until a task, stops it after idleStopMs, starts a fresh one for the next task', async () => {
    pool = new ScriptPool({ workers: 2, timeoutMs: 1000, hardTimeoutMs: 5000, memoryMb: 16, idleStopMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(pool.workers).toBe(0);
    expect(await pool.compile(GOOD)).toEqual({ ok: true });
    expect(pool.workers).toBe(1); // one task at a time needs one worker, not `workers`
    await until(() => pool!.workers === 0, 30_000);
    expect(await pool.compile(GOOD)).toEqual({ ok: true });
    expect(pool.workers).toBe(1);
    expect(pool.recentFaults()).toEqual([]); // an idle stop is not a fault
  });

  it('a cold start does not count against the hard time limit', async () => {
    // The worker here (test/support/slow-start-worker.mjs) takes SLOW_START_MS more to start than a real
    // one, always: a limit that counted the start would end every task that found no worker. The limit
    // itself is far above what a compile takes on a loaded machine, so only a counted start can trip it.
    pool = new ScriptPool({ workers: 1, timeoutMs: 1000, hardTimeoutMs: HARD_MS, memoryMb: 16, idleStopMs: 100, workerFile: SLOW_WORKER });
    for (let round = 0; round < 2; round++) {
      expect(pool.workers).toBe(0);
      const started = performance.now();
      expect(await pool.compile(GOOD)).toEqual({ ok: true });
      // The task waited for the whole start (a lower bound, which load cannot break): longer than the limit.
      expect(performance.now() - started).toBeGreaterThanOrEqual(SLOW_START_MS);
      await until(() => pool!.workers === 0, 30_000);
    }
    expect(pool.recentFaults()).toEqual([]);
  }, 60_000);

  it('idleStopMs = 0 starts every worker with the pool and keeps them', async () => {
    pool = new ScriptPool({ workers: 2, timeoutMs: 200, hardTimeoutMs: 5000, memoryMb: 16, idleStopMs: 0 });
    expect(pool.workers).toBe(2);
    expect(await pool.compile(GOOD)).toEqual({ ok: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pool.workers).toBe(2);
  });
});

describe('defaultWorkerCount', () => {
  it('is cores - 1, but one on boards with 2 cores or fewer or under 3 GiB', () => {
    expect(defaultWorkerCount(1, 8 * GIB)).toBe(1);
    expect(defaultWorkerCount(2, 8 * GIB)).toBe(1);
    expect(defaultWorkerCount(4, 8 * GIB)).toBe(3);
    expect(defaultWorkerCount(4, SMALL_BOARD_MEMORY_BYTES)).toBe(3);
    expect(defaultWorkerCount(4, 1.8 * GIB)).toBe(1); // a "2 GB" Raspberry Pi 4
    expect(defaultWorkerCount(4, 0.9 * GIB)).toBe(1);
  });
});
