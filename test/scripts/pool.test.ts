/**
 * A worker whose task fails outside the rule (a wasm trap, an unexpected exception) ends at once; the
 * task fails with WorkerLostError, the next task runs on a fresh worker, and the fault is reported for
 * /healthz. Real piscina worker threads running dist/scripts/lua/worker.js (rebuilt from src/ by the tests'
 * global setup when older).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerLostError } from '../../src/errors.js';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import type { RunTask } from '../../src/scripts/shared/protocol.js';
import { oneRuleTask } from '../support/run-task.js';

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('ScriptPool worker faults', () => {
  it('an unexpected error ends the worker; the next task runs on a fresh one; the fault is recent', async () => {
    // A hard limit no run here comes near: the task must fail for the worker's error, not for the limit.
    pool = new ScriptPool({ workers: 1, timeoutMs: 1000, hardTimeoutMs: 120_000, memoryMb: 16 });
    const good = { kind: 'compile' as const, actions: 'Actions = { function(a) return true, a end }', success: '', failed: '' };
    expect(await pool.compile(good)).toEqual({ ok: true });
    expect(pool.recentFaults()).toEqual([]);
    // No payloads: handle throws once it has the whole task (the slim one is answered stale first).
    const broken = { ...oneRuleTask('Actions = { function(a) return true, a end }', []), payloads: undefined } as unknown as RunTask;
    const failure = await pool.run(broken).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(WorkerLostError);
    // Ended at once by the worker's own failure, not by the hard time limit (which would say so).
    expect((failure as Error).message).toMatch(/^worker failed: /);
    expect((failure as Error).message).not.toMatch(/hard time limit/);
    expect(pool.recentFaults()).toHaveLength(1);
    expect(pool.recentFaults()[0]).toMatch(/^worker failed: /);
    for (let i = 0; i < 5; i++) expect(await pool.compile(good)).toEqual({ ok: true });
    expect(pool.recentFaults(60_000, Date.now() + 61_000)).toEqual([]);
  });
});

describe('ScriptPool sharing', () => {
  it('a freed worker goes to the waiting owner that holds the fewest workers, not simply the oldest task', async () => {
    pool = new ScriptPool({ workers: 2, timeoutMs: 10_000, hardTimeoutMs: 30_000, memoryMb: 16 });
    const busy = (ms: number): RunTask =>
      oneRuleTask(
        `Actions = { function(a)
          local t0 = tonumber(time:TsUnixNano())
          while tonumber(time:TsUnixNano()) - t0 < ${ms} * 1e6 do end
          return true, a
        end }`,
        ['x'],
      );
    // Until two tasks run side by side: both workers started, the rule compiled on each, so A1 and A2
    // end within moments of each other.
    for (let tries = 0; tries < 10; tries++) {
      const started = performance.now();
      await Promise.all([pool.run(busy(100), 'warm'), pool.run(busy(100), 'warm')]);
      if (performance.now() - started < 180) break;
    }
    const finished: string[] = [];
    // A's tasks are short and the others ten times longer, so C1 (started when A1 ends) still runs when A2
    // ends: on a busy machine A2 may start well after A1, and with equal lengths C1 had ended first, its
    // owner then held no worker either and the older C2 won the tie.
    const submit = (owner: string, name: string) => pool!.run(busy(owner === 'A' ? 300 : 3000), owner).then(() => finished.push(name));
    // A takes both workers; C queues two tasks, then B one.
    const all = [submit('A', 'A1'), submit('A', 'A2'), submit('C', 'C1'), submit('C', 'C2'), submit('B', 'B1')];
    await Promise.all(all);
    // In submission order B would run last; sharing by owner runs it beside C1, before C2.
    expect(finished.indexOf('B1')).toBeLessThan(finished.indexOf('C2'));
    expect(finished.slice(0, 2).sort()).toEqual(['A1', 'A2']);
  });
});
