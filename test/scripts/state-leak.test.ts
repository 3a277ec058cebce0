/**
 * Security finding 3: nothing one call leaves in a worker changes the outcome of the next one. A rule
 * that ran out of time (or memory) must not fail, slow or crash whatever the same worker runs next: a
 * compile, a validate, another rule's payload. Real piscina worker threads (dist/scripts/lua/worker.js), one
 * worker, so every task shares the Lua state of the one before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import { taskPayloads, type RuleScripts, type RunTask } from '../../src/scripts/shared/protocol.js';

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

const TIMEOUT_MS = 200;
/** pcall in a loop: the time-out is noticed by pcall asking the clock, anywhere between two hook calls. */
const CATCHES_FOREVER = 'Actions = { function(a) while true do pcall(error, "caught") end end }';
const PASSES = 'Actions = { function(a) return true, a end }';
/** Large enough that Lua allocates it in one block of more than 64 KiB. */
const LARGE = 100 * 1024;

function rule(uuid: string, version: number, actions: string): RuleScripts {
  return { uuid, version, actions, success: '', failed: '' };
}

function task(rules: RuleScripts[], payloads: string[], live: { epoch: number; ids: string[] } = { epoch: 0, ids: ['A', 'B'] }): RunTask {
  return { kind: 'run', modelsVersion: 0, models: [], readOnlyModels: [], rulesEpoch: live.epoch, liveRuleIds: live.ids, rules, payloads: taskPayloads(payloads) };
}

function openPool(limits: { timeoutMs?: number; memoryMb?: number } = {}): ScriptPool {
  pool = new ScriptPool({ workers: 1, timeoutMs: limits.timeoutMs ?? TIMEOUT_MS, hardTimeoutMs: 10_000, memoryMb: limits.memoryMb ?? 16 });
  return pool;
}

async function timeOut(p: ScriptPool): Promise<void> {
  const result = await p.run(task([rule('A', 1, CATCHES_FOREVER)], ['x']));
  expect(result.errors.map((e) => e.message)).toEqual([`time limit exceeded (${TIMEOUT_MS} ms)`]);
}

describe('after a rule ran out of time, the same worker', () => {
  it('runs a compiled rule on a payload of more than 64 KiB (it used to abort the wasm instance)', async () => {
    const p = openPool();
    const b = rule('B', 1, 'Actions = { function(a) local t = json:J2T(a) return true, #t.pad end }');
    const big = JSON.stringify({ pad: 'p'.repeat(LARGE) });
    expect((await p.run(task([b], ['{"pad":""}']))).errors).toEqual([]);
    await timeOut(p);
    expect((await p.run(task([b], [big]))).errors).toEqual([]);
    expect(p.recentFaults()).toEqual([]);
  });

  it('validates a script of more than 64 KiB', async () => {
    const p = openPool();
    await timeOut(p);
    const long = `${PASSES}\n--${'c'.repeat(LARGE)}`;
    expect(await p.compile({ kind: 'compile', actions: long, success: '', failed: '' })).toEqual({ ok: true });
    expect(p.recentFaults()).toEqual([]);
  });

  it('compiles and validates every time, and a new rule version keeps working (the reported failed:1 for every push)', async () => {
    // The time-out lands anywhere in the hook's 2000-instruction period; the environment of the next
    // compile used to run under the expired clock and failed when the hook came round within it.
    const p = openPool();
    for (let round = 1; round <= 30; round++) {
      await timeOut(p);
      const first = round % 2 === 0 ? 'validate' : 'run';
      for (const step of first === 'validate' ? ['validate', 'run'] : ['run', 'validate']) {
        if (step === 'validate') {
          expect(await p.compile({ kind: 'compile', actions: PASSES, success: '', failed: '' }), `round ${round}`).toEqual({ ok: true });
        } else {
          const b = rule('B', round, `${PASSES} -- v${round}`);
          expect((await p.run(task([b], ['{"v":1}']))).errors, `round ${round}`).toEqual([]);
          expect((await p.run(task([b], ['{"v":2}']))).errors, `round ${round}, again`).toEqual([]);
        }
      }
    }
  }, 60_000);
});

describe('a compile that failed for want of memory', () => {
  it('is tried again by the next task, not cached for the rule version', async () => {
    const p = openPool({ timeoutMs: 5_000, memoryMb: 32 });
    // string.rep needs twice its result while it builds it. HOG keeps 12 MB in its environment while
    // it is live; B's top level needs 22 MB for a moment.
    const hog = rule('HOG', 1, `Big = string.rep("h", 12 * 1024 * 1024)\n${PASSES}`);
    const b = rule('B', 1, `local scratch = string.rep("b", 11 * 1024 * 1024)\n${PASSES}`);
    const both = { epoch: 0, ids: ['HOG', 'B'] };
    expect((await p.run(task([hog], ['x'], both))).errors).toEqual([]);
    const starved = await p.run(task([b], ['x'], both));
    expect(starved.errors.map((e) => e.message)).toEqual(['rule did not compile: memory limit exceeded (32 MB)']);
    // HOG deleted: its environment is released, and B's same version compiles now.
    const alone = await p.run(task([b], ['x'], { epoch: 1, ids: ['B'] }));
    expect(alone.errors).toEqual([]);
  });

  it('a syntax error is answered the same on every task', async () => {
    const p = openPool();
    const broken = rule('B', 1, 'Actions = { function(a) return true, a end');
    for (let i = 0; i < 3; i++) {
      const result = await p.run(task([broken], ['x']));
      expect(result.errors.map((e) => e.message)).toEqual(["rule did not compile: actions:1: '}' expected near <eof>"]);
    }
  });
});
