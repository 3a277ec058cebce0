/**
 * A task's invocations run in one protected call: the prelude's loop asks `step` for each (lua-sandbox.ts
 * invokeAll). Whatever ends one invocation (a soft time limit, an error raised outside the rule's own
 * protected call, a rule that did not compile) ends only that one: the task goes on with the next, every
 * other invocation stores its records, and each is counted once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Attribute, DataModel } from '../../src/models/types.js';
import { ScriptWorker } from '../../src/scripts/lua/script-worker.js';
import { valuesOf } from '../../src/scripts/shared/op-values.js';
import { taskPayloads, unpackOps, type RuleScripts, type RunResult, type RunTask } from '../../src/scripts/shared/protocol.js';

const ATTRIBUTE: Attribute = {
  uuid: 'a-v', schemaId: 'M', name: 'v', label: 'v', type: 'STRING', rw: 'RW', unit: '', description: '',
  rule: { defaultValue: '', min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
};
const MODEL: DataModel = { uuid: 'M', name: 'm', description: '', published: true, createdAtMs: 0, attributes: [ATTRIBUTE] };

function rule(uuid: string, body: string): RuleScripts {
  return { uuid, version: 1, actions: `Actions = { function(args) ${body} return 0 end }`, success: '', failed: '' };
}

// Saves the payload; on "spin" loops until the time limit; on "escape" raises an error whose tostring
// raises in turn, which the prelude's invoke meets outside the rule's protected call, so it leaves the loop.
const SAVER = rule(
  'saver',
  'if args == "spin" then while true do end end ' +
    'if args == "escape" then error(setmetatable({}, { __tostring = function() error("tostring failed", 0) end })) end ' +
    'local e = rds:Save("M", { v = args }) if e then Throw(e) end',
);
const SECOND = rule('second', 'local e = rds:Save("M", { v = "second " .. args }) if e then Throw(e) end');
const BROKEN = rule('broken', 'this is not Lua');

describe('one protected call a task', () => {
  it('an invocation that times out or escapes the loop ends alone; the task goes on with the next one', async () => {
    const worker = await ScriptWorker.create({ timeoutMs: 50, memoryMb: 32 });
    const payloads = ['a', 'spin', 'b', 'escape', 'c', 'spin', 'escape', 'd'];
    const rules = [SAVER, BROKEN, SECOND];
    const task: RunTask = { kind: 'run', modelsVersion: 1, models: [MODEL], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: rules.map((r) => r.uuid), rules, payloads: taskPayloads(payloads) };
    const result = worker.handle(task) as RunResult;
    const stored = unpackOps(result.ops).map((op) => `${op.payload}:${op.rule}:${String(valuesOf(op)[0])}`);
    expect(stored).toEqual(payloads.flatMap((p, i) => [...(p === 'spin' || p === 'escape' ? [] : [`${i}:0:${p}`]), `${i}:2:second ${p}`]));
    const errors = result.errors.map((e) => `${e.payload}:${e.rule}:${e.message.startsWith('rule did not compile: ') ? 'rule did not compile' : e.message}`);
    expect(errors).toEqual(
      payloads.flatMap((p, i) => [
        ...(p === 'spin' ? [`${i}:0:time limit exceeded (50 ms)`] : p === 'escape' ? [`${i}:0:tostring failed`] : []),
        `${i}:1:rule did not compile`,
      ]),
    );
    expect(result.summaries.map((s) => [s.invocations, s.failures])).toEqual([
      [8, 4],
      [8, 8],
      [8, 0],
    ]);
    expect(result.summaries.map((s) => s.histogram.reduce((a, b) => a + b, 0))).toEqual([8, 0, 8]);
  });

  it('the payload after one that timed out is pushed under a fresh clock, however large', async () => {
    const worker = await ScriptWorker.create({ timeoutMs: 50, memoryMb: 32 });
    const length = rule('length', 'if args == "spin" then while true do end end local e = rds:Save("M", { v = tostring(#args) }) if e then Throw(e) end');
    // 100 KB: an allocation the allocator refuses while the clock says time is up (soft-limit.test.ts).
    const payloads = ['spin', 'x'.repeat(100_000), 'spin', 'y'.repeat(200_000)];
    const task: RunTask = { kind: 'run', modelsVersion: 1, models: [MODEL], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: ['length'], rules: [length], payloads: taskPayloads(payloads) };
    const result = worker.handle(task) as RunResult;
    expect(unpackOps(result.ops).map((op) => `${op.payload}:${String(valuesOf(op)[0])}`)).toEqual(['1:100000', '3:200000']);
    expect(result.errors.map((e) => `${e.payload}:${e.message}`)).toEqual(['0:time limit exceeded (50 ms)', '2:time limit exceeded (50 ms)']);
  });

  it('each invocation gets its own payload, byte for byte, however the payloads fill the window of wasm memory', async () => {
    const worker = await ScriptWorker.create({ timeoutMs: 5000, memoryMb: 64 });
    // The length, and a hash of 64 bytes spread over the payload: a payload read from the wrong place in
    // the window (payload-window.ts) shows in either.
    const fingerprint = rule(
      'fingerprint',
      'local n, h = #args, 0 ' +
        'if n > 0 then for k = 0, 63 do local i = 1 + (k * (n - 1)) // 63 h = (h * 31 + args:byte(i)) % 1000000007 end end ' +
        'local e = rds:Save("M", { v = n .. ":" .. h }) if e then Throw(e) end',
    );
    const expected = (bytes: Buffer): string => {
      let h = 0;
      if (bytes.length > 0) for (let k = 0; k < 64; k++) h = (h * 31 + bytes[Math.floor((k * (bytes.length - 1)) / 63)]) % 1000000007;
      return `${bytes.length}:${h}`;
    };
    const size = fc.oneof(fc.integer({ min: 0, max: 300 }), fc.integer({ min: 65_000, max: 66_000 }), fc.constant(65_536), fc.integer({ min: 66_000, max: 200_000 }));
    const payload = fc.tuple(size, fc.string({ unit: fc.constantFrom('a', 'z', '\0', 'é', '€', '{', '\n'), minLength: 1, maxLength: 8 })).map(([bytes, pattern]) => {
      const text = pattern.repeat(Math.ceil(bytes / pattern.length) + 1);
      return Buffer.from(text).subarray(0, bytes).toString('latin1');
    });
    let epoch = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(payload, { minLength: 1, maxLength: 8 }), async (texts) => {
        const payloads = taskPayloads(texts);
        const task: RunTask = { kind: 'run', modelsVersion: 1, models: [MODEL], readOnlyModels: [], rulesEpoch: ++epoch, liveRuleIds: ['fingerprint'], rules: [fingerprint], payloads };
        const result = worker.handle(task) as RunResult;
        expect(result.errors).toEqual([]);
        const seen = unpackOps(result.ops).map((op) => String(valuesOf(op)[0]));
        expect(seen).toEqual(texts.map((_, i) => expected(Buffer.from(payloads.bytes.subarray(i === 0 ? 0 : payloads.ends[i - 1], payloads.ends[i])))));
      }),
      { numRuns: 25 },
    );
  });
});
