/**
 * A worker whose task fails outside the rule (a wasm trap, an unexpected exception) ends at once; the
 * task fails with WorkerLostError, the next task runs on a fresh worker, and the fault is reported for
 * /healthz. Real piscina worker threads running dist/scripts/worker.js.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptPool, WorkerLostError } from '../../src/scripts/pool.js';
import type { RunTask } from '../../src/scripts/types.js';

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('ScriptPool worker faults', () => {
  it('an unexpected error ends the worker; the next task runs on a fresh one; the fault is recent', async () => {
    pool = new ScriptPool({ workers: 1, timeoutMs: 200, hardTimeoutMs: 5000, memoryMb: 16 });
    const good = { kind: 'compile' as const, actions: 'Actions = { function(a) return true, a end }', success: '', failed: '' };
    expect(await pool.compile(good)).toEqual({ ok: true });
    expect(pool.recentFaults()).toEqual([]);
    const broken = { kind: 'run' } as unknown as RunTask; // no rules, no payloads: handle throws
    const t0 = Date.now();
    await expect(pool.run(broken)).rejects.toThrow(WorkerLostError);
    expect(Date.now() - t0).toBeLessThan(4000); // ended at once, not by the hard time limit
    expect(pool.recentFaults()).toHaveLength(1);
    expect(pool.recentFaults()[0]).toMatch(/^worker failed: /);
    for (let i = 0; i < 5; i++) expect(await pool.compile(good)).toEqual({ ok: true });
    expect(pool.recentFaults(60_000, Date.now() + 61_000)).toEqual([]);
  });
});
