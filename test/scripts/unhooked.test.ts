/**
 * Run tasks go without Lua's instruction hook (lua-sandbox.ts `invokeAll`, overrun-watch.ts). In one
 * thread: a task run unhooked answers what the same task run hooked answers, for any payloads through
 * rules that save, fail, catch, loop briefly and use coroutines; an invocation that ends past its deadline
 * stops the task and marks its watch cell. With real worker threads (ScriptPool): an endless loop ends the
 * worker and the task runs again hooked, with the soft limit's outcome; the owner then runs hooked for a
 * while; a coroutine made in an unhooked task still stops at the soft limit in a hooked one; and a storm
 * of owners, their loops placed and their submissions ordered by a seeded scheduler, gets each task's
 * hooked outcome.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Attribute, DataModel } from '../../src/models/types.js';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import { ScriptWorker } from '../../src/scripts/lua/script-worker.js';
import { valuesOf } from '../../src/scripts/shared/op-values.js';
import { taskPayloads, unpackOps, watchCell, WATCH_OVERRAN, WATCH_STARTED, type RunResult, type RunTask } from '../../src/scripts/shared/protocol.js';

function attribute(name: string, type: 'INTEGER' | 'STRING'): Attribute {
  return {
    uuid: `a-${name}`, schemaId: 'M', name, label: name, type, rw: 'RW', unit: '', description: '',
    rule: { defaultValue: type === 'STRING' ? '' : 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
  };
}

const MODEL: DataModel = { uuid: 'M', name: 'm', description: '', published: true, createdAtMs: 0, attributes: [attribute('i', 'INTEGER'), attribute('s', 'STRING')] };

/** Rule bodies over `args`; each ends with `return 0`. */
const RULES: Record<string, string> = {
  save: 'local t, err = json:J2T(args) if err then Throw(err) end local e = rds:Save("M", t) if e then Throw(e) end',
  saveText: 'local e = rds:Save("M", { s = args, i = #args }) if e then Throw(e) end',
  fail: 'if #args % 3 == 0 then error("three: " .. args) end',
  caught: 'local ok, e = pcall(error, "inner " .. args) Debug(tostring(ok), e) local ok2 = pcall(json.J2T, json, args) Debug(tostring(ok2))',
  briefLoop: 'local n = 0 for k = 1, (#args % 7) * 200 do n = n + k end rds:Save("M", { i = n % 1000 })',
  coroutines:
    'local co = coroutine.create(function(a) local x = coroutine.yield(#a) error("co " .. tostring(x)) end) ' +
    'Debug(tostring(select(2, coroutine.resume(co, args)))) Debug(tostring(select(2, coroutine.resume(co, 5)))) ' +
    'local w = coroutine.wrap(function() coroutine.yield(1) return 2 end) Debug(tostring(w() + w())) ' +
    'Debug(tostring(pcall(coroutine.create, 5))) Debug(tostring(select(2, pcall(coroutine.wrap, 5))))',
  counter: 'count = (count or 0) + 1 rds:Save("M", { i = count })',
};

function ruleScripts(names: readonly string[]): RunTask['rules'] {
  return names.map((uuid) => ({ uuid, version: 1, actions: `Actions = { function(args) ${RULES[uuid]} return 0 end }`, success: '', failed: '' }));
}

function runTask(rules: readonly string[], payloads: string[], watch?: Int32Array): RunTask {
  const task: RunTask = { kind: 'run', modelsVersion: 1, models: [MODEL], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: [...rules], rules: ruleScripts(rules), payloads: taskPayloads(payloads) };
  if (watch !== undefined) task.watch = watch;
  return task;
}

/** What a task answered, without its timings. */
function outcome(result: RunResult): unknown {
  const records = unpackOps(result.ops).map((op) => [op.payload, op.rule, op.modelId, op.kind, op.keys, valuesOf(op)]);
  return { records, errors: result.errors, debug: result.debug, invocations: result.summaries.map((s) => [s.invocations, s.failures]), readOnly: result.readOnlyPayloads };
}

const payload = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.record({ i: fc.integer({ min: -5, max: 5 }), s: fc.string({ maxLength: 4 }) }).map((o) => JSON.stringify(o)),
  fc.constantFrom('{', '{"i":1.5}', '{"i":"x"}', '[1,2]', '{"zz":1}', ''),
);

describe('tasks without the instruction hook, in one thread', () => {
  it('answer what the same task answers hooked, for any payloads and rules', async () => {
    const hooked = await ScriptWorker.create({ timeoutMs: 5000, memoryMb: 16 });
    const unhooked = await ScriptWorker.create({ timeoutMs: 5000, memoryMb: 16 });
    const names = Object.keys(RULES);
    fc.assert(
      fc.property(fc.array(payload, { minLength: 1, maxLength: 12 }), fc.subarray(names, { minLength: 1 }), (payloads, rules) => {
        const watch = watchCell();
        const withHook = outcome(hooked.handle(runTask(rules, payloads)) as RunResult);
        const withoutHook = outcome(unhooked.handle(runTask(rules, payloads, watch)) as RunResult);
        expect(withoutHook).toEqual(withHook);
        expect(Atomics.load(watch, WATCH_OVERRAN)).toBe(0);
        // Every invocation counted, and the first compile of each rule.
        expect(Atomics.load(watch, WATCH_STARTED)).toBeGreaterThanOrEqual(payloads.length * rules.length);
      }),
      { numRuns: 60 },
    );
  });

  it('an invocation that ends past its deadline stops the task and marks the cell; hooked, it times out', async () => {
    // 1e8 turns of an empty loop take far longer than 20 ms in any Lua, so the end is always late.
    const rule = [{ uuid: 'L', version: 1, actions: 'Actions = { function(a) if a == "late" then for i = 1, 1e8 do end end rds:Save("M", { s = a }) return 0 end }', success: '', failed: '' }];
    const task = (watch?: Int32Array): RunTask => ({ ...runTask([], ['a', 'late', 'b'], watch), liveRuleIds: ['L'], rules: rule });
    const worker = await ScriptWorker.create({ timeoutMs: 20, memoryMb: 16 });
    const watch = watchCell();
    expect(() => worker.handle(task(watch))).toThrow(/ran past its time limit/);
    expect(Atomics.load(watch, WATCH_OVERRAN)).toBe(1);
    // The compile, then 'a', then 'late': the task stopped there.
    expect(Atomics.load(watch, WATCH_STARTED)).toBe(3);
    const hooked = outcome((await ScriptWorker.create({ timeoutMs: 20, memoryMb: 16 })).handle(task()) as RunResult) as { records: unknown[][]; errors: unknown[] };
    expect(hooked.records.map((r) => r[0])).toEqual([0, 2]);
    expect(hooked.errors).toEqual([{ payload: 1, rule: 0, message: 'time limit exceeded (20 ms)' }]);
  });
});

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

const LOOP_RULE = [{ uuid: 'loop', version: 1, actions: 'Actions = { function(a) if a == "loop" then while true do end end rds:Save("M", { s = a }) return 0 end }', success: '', failed: '' }];

function loopTask(payloads: string[]): RunTask {
  return { ...runTask([], payloads), liveRuleIds: ['loop'], rules: LOOP_RULE };
}

/** The hooked outcome of loopTask(payloads): a record of each payload but the loops, which time out. */
function expectLoopOutcome(result: RunResult, payloads: string[], timeoutMs: number): void {
  const got = outcome(result) as { records: unknown[][]; errors: unknown[] };
  const loops = payloads.flatMap((p, i) => (p === 'loop' ? [i] : []));
  const text = (r: unknown[]): unknown => (r[5] as unknown[])[(r[4] as string[]).indexOf('s')];
  expect(got.records.map((r) => [r[0], text(r)])).toEqual(payloads.flatMap((p, i) => (p === 'loop' ? [] : [[i, p]])));
  expect(got.errors).toEqual(loops.map((i) => ({ payload: i, rule: 0, message: `time limit exceeded (${timeoutMs} ms)` })));
}

describe('tasks without the instruction hook, on real workers', () => {
  it('an endless loop ends the worker and the task runs again hooked, with the soft limit outcome; the owner then runs hooked', async () => {
    // A hard limit far off: the loop must be caught by the watch, not by it.
    pool = new ScriptPool({ workers: 1, timeoutMs: 100, hardTimeoutMs: 60_000, memoryMb: 16 });
    const payloads = ['a', 'loop', 'b'];
    expectLoopOutcome(await pool.run(loopTask(payloads), 'X'), payloads, 100);
    expect(pool.overruns).toBe(1);
    // Not a fault: /healthz stays ok.
    expect(pool.recentFaults()).toEqual([]);
    // X runs hooked now: its next loop times out in the worker, without another overrun.
    expectLoopOutcome(await pool.run(loopTask(payloads), 'X'), payloads, 100);
    expect(pool.overruns).toBe(1);
    // Another owner still runs unhooked.
    expectLoopOutcome(await pool.run(loopTask(['loop']), 'Y'), ['loop'], 100);
    expect(pool.overruns).toBe(2);
    expectLoopOutcome(await pool.run(loopTask(['c', 'd']), 'Z'), ['c', 'd'], 100);
    expect(pool.overruns).toBe(2);
  });

  it('a coroutine made in an unhooked task stops at the soft limit when a hooked task resumes it', async () => {
    pool = new ScriptPool({ workers: 1, timeoutMs: 100, hardTimeoutMs: 20_000, memoryMb: 16 });
    const rule = [{
      uuid: 'co', version: 1, success: '', failed: '',
      actions: `Actions = { function(a)
        if a == "loop" then while true do end end
        if a == "make" then
          made = coroutine.create(function() while true do end end)
          wrapped = coroutine.wrap(function() while true do end end)
        end
        if a == "resume" then coroutine.resume(made) end
        if a == "call" then wrapped() end
        return 0
      end }`,
    }];
    const task = (payloads: string[]): RunTask => ({ ...runTask([], payloads), liveRuleIds: ['co'], rules: rule });
    // H overruns once (a fresh worker), so its tasks run hooked; U, unhooked, makes the coroutines there.
    await pool.run(task(['loop']), 'H');
    expect(pool.overruns).toBe(1);
    expect((await pool.run(task(['make']), 'U')).errors).toEqual([]);
    const resumed = await pool.run(task(['resume', 'call']), 'H');
    // Without a hook of their own, both would run to the hard limit and the pool would throw.
    expect(resumed.errors.map((e) => e.message)).toEqual(['time limit exceeded (100 ms)', 'time limit exceeded (100 ms)']);
    expect(pool.overruns).toBe(1);
  });

  it('a storm of owners, loops anywhere, submissions in a seeded order: every task gets its hooked outcome', async () => {
    const tasks = fc.array(
      fc.record({ owner: fc.constantFrom('A', 'B', 'C', 'D'), payloads: fc.array(fc.constantFrom('loop', 'p', 'q', 'r'), { minLength: 1, maxLength: 5 }) }),
      { minLength: 2, maxLength: 8 },
    );
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), tasks, async (s, planned) => {
        // A pool each run: owners that overran run hooked for a minute.
        await pool?.close();
        pool = new ScriptPool({ workers: 2, timeoutMs: 200, hardTimeoutMs: 60_000, memoryMb: 16 });
        const runs = planned.map(({ owner, payloads }) =>
          s.schedule(Promise.resolve(owner), `submit ${owner} ${payloads.join(',')}`).then(() => pool!.run(loopTask(payloads), owner)),
        );
        await s.waitAll();
        const results = await Promise.all(runs);
        results.forEach((result, i) => expectLoopOutcome(result, planned[i].payloads, 200));
        expect(pool!.recentFaults()).toEqual([]);
      }),
      { numRuns: 6, seed: 20261130 },
    );
  });
});
