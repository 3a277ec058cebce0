/**
 * Run tasks go slim (protocol.ts `slimTask`): without the model definitions and the rules' scripts, which
 * a worker keeps from one task to the next. A worker that lacks the task's models version or a rule's
 * version answers stale, having run nothing, and the pool sends the task whole. In one thread: the
 * answers of a slim task are the whole one's, and every change of version makes it stale. With real
 * worker threads: the whole task goes only when a worker lacks something, and a storm of tasks over two
 * workers, each with its own models and rule version, in an order a seeded scheduler picks, stores what
 * each task's own versions say.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import type { Attribute, DataModel } from '../../src/models/types.js';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import { ScriptWorker } from '../../src/scripts/lua/script-worker.js';
import { valuesOf } from '../../src/scripts/shared/op-values.js';
import { slimTask, taskPayloads, unpackOps, type RunResult, type RunTask, type WorkerAnswer } from '../../src/scripts/shared/protocol.js';

/** Model version m (at least 1; a max of 0 is no limit): attribute i is an INTEGER of at most m. */
function modelOf(m: number): DataModel {
  const i: Attribute = {
    uuid: 'a-i', schemaId: 'M', name: 'i', label: 'i', type: 'INTEGER', rw: 'RW', unit: '', description: '',
    rule: { defaultValue: 0, min: 0, max: m, trueLabel: '', falseLabel: '', round: 0 },
  };
  return { uuid: 'M', name: 'm', description: '', published: true, createdAtMs: 0, attributes: [i] };
}

/** Models version m, rule version k: the rule saves i = k, which the model takes when k <= m. */
function task(m: number, k: number, payloads = ['x', 'y']): RunTask {
  return {
    kind: 'run', modelsVersion: m, models: [modelOf(m)], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: ['R'],
    rules: [{ uuid: 'R', version: k, actions: `Actions = { function(a) local e = rds:Save("M", { i = ${k} }) if e then Throw(e) end return true, a end }`, success: '', failed: '' }],
    payloads: taskPayloads(payloads),
  };
}

function outcome(answer: WorkerAnswer): unknown {
  const result = answer as RunResult;
  return {
    records: unpackOps(result.ops).map((op) => [op.payload, op.keys, valuesOf(op)]),
    errors: result.errors.map((e) => [e.payload, e.message]),
  };
}

/** What task(m, k, payloads) must answer. */
function expected(m: number, k: number, payloads: readonly string[]): unknown {
  return k <= m
    ? { records: payloads.map((_, p) => [p, ['i'], [k]]), errors: [] }
    : { records: [], errors: payloads.map((_, p) => [p, expect.stringContaining('i')]) };
}

describe('slim tasks, in one thread', () => {
  it('a fresh worker answers stale; then the slim task answers as the whole one; each new version is stale again', async () => {
    const worker = await ScriptWorker.create({ timeoutMs: 1000, memoryMb: 16 });
    expect(worker.handle(slimTask(task(3, 2)))).toEqual({ stale: true });
    const whole = outcome(worker.handle(task(3, 2)));
    expect(whole).toEqual(expected(3, 2, ['x', 'y']));
    expect(outcome(worker.handle(slimTask(task(3, 2))))).toEqual(whole);
    // New models (at most 1 now): stale until sent whole, then slim again.
    expect(worker.handle(slimTask(task(1, 2)))).toEqual({ stale: true });
    expect(outcome(worker.handle(task(1, 2)))).toEqual(expected(1, 2, ['x', 'y']));
    expect(outcome(worker.handle(slimTask(task(1, 2))))).toEqual(expected(1, 2, ['x', 'y']));
    // A new rule version (saving 1): the same.
    expect(worker.handle(slimTask(task(1, 1)))).toEqual({ stale: true });
    expect(outcome(worker.handle(task(1, 1)))).toEqual(expected(1, 1, ['x', 'y']));
    expect(outcome(worker.handle(slimTask(task(1, 1))))).toEqual(expected(1, 1, ['x', 'y']));
  });
});

let pool: ScriptPool | undefined;
afterEach(async () => {
  await pool?.close();
  pool = undefined;
});

describe('slim tasks, on real workers', () => {
  it('go whole only to a worker that lacks a version', async () => {
    pool = new ScriptPool({ workers: 1, timeoutMs: 1000, hardTimeoutMs: 60_000, memoryMb: 16 });
    expect(outcome(await pool.run(task(3, 1)))).toEqual(expected(3, 1, ['x', 'y']));
    expect(pool.wholeTasks).toBe(1);
    for (let n = 0; n < 3; n++) expect(outcome(await pool.run(task(3, 1)))).toEqual(expected(3, 1, ['x', 'y']));
    expect(pool.wholeTasks).toBe(1);
    expect(outcome(await pool.run(task(4, 1)))).toEqual(expected(4, 1, ['x', 'y']));
    expect(outcome(await pool.run(task(4, 9)))).toEqual(expected(4, 9, ['x', 'y']));
    expect(pool.wholeTasks).toBe(3);
    expect(outcome(await pool.run(task(4, 9)))).toEqual(expected(4, 9, ['x', 'y']));
    expect(pool.wholeTasks).toBe(3);
  });

  it('a storm over two workers, versions changing, in a seeded order: each task stores what its own versions say', async () => {
    const steps = fc.array(
      fc.record({ m: fc.integer({ min: 1, max: 4 }), k: fc.integer({ min: 1, max: 4 }), payloads: fc.array(fc.constantFrom('p', 'q'), { minLength: 1, maxLength: 4 }) }),
      { minLength: 2, maxLength: 12 },
    );
    pool = new ScriptPool({ workers: 2, timeoutMs: 1000, hardTimeoutMs: 60_000, memoryMb: 16 });
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), steps, async (s, planned) => {
        const runs = planned.map(({ m, k, payloads }, i) =>
          s.schedule(Promise.resolve(i), `task ${i}: models ${m}, rule ${k}`).then(() => pool!.run(task(m, k, payloads), `owner${i % 3}`)),
        );
        await s.waitAll();
        const answers = await Promise.all(runs);
        answers.forEach((answer, i) => expect(outcome(answer)).toEqual(expected(planned[i].m, planned[i].k, planned[i].payloads)));
      }),
      { numRuns: 25, seed: 20261130 },
    );
  });
});
