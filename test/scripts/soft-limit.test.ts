/**
 * The soft time limit cannot be swallowed or outrun: whatever a rule does with the time-limit error
 * (`<close>` handlers that raise another error, xpcall handlers that replace it, coroutines closed
 * under it) or however much work one VM instruction does (`string.rep`, concatenation,
 * `collectgarbage`), the invocation ends within the limit plus a small grace, fails with
 * `time limit exceeded`, and the worker serves on: the hard limit (10 s here) never has to step in.
 * "Within the limit plus a grace" is measured in CPU time (the process's, worker included): a busy
 * machine stretches the wall time of a run, not the work it does, and a run that outran the soft limit
 * keeps doing work. Real engine, real worker thread.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { inputWithRule, openHarness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const TIMEOUT_MS = 100;
/** Past the soft limit: one hook interval, one large allocation, the unwinding, the task round trip. */
const GRACE_MS = 700;
/** Far beyond what any case may take: only a run that outran the soft limit for good could reach it. */
const HARD_MS = 10_000;

/** What `run` resolves to, and the CPU time (ms, all threads of this process) spent meanwhile. */
async function withCpuMs<T>(run: () => Promise<T>): Promise<{ value: T; cpuMs: number }> {
  const before = process.cpuUsage();
  const value = await run();
  const used = process.cpuUsage(before);
  return { value, cpuMs: (used.user + used.system) / 1000 };
}

const CASES: Record<string, string> = {
  'a <close> handler that raises another error, in a pcall loop': `
    while true do
      pcall(function()
        local c <close> = setmetatable({}, { __close = function() error("x", 0) end })
        while true do end
      end)
    end`,
  'a <close> handler that raises a table, in a pcall loop': `
    while true do
      pcall(function()
        local c <close> = setmetatable({}, { __close = function() error({}) end })
        while true do end
      end)
    end`,
  'a <close> handler that loops': `
    local c <close> = setmetatable({}, { __close = function() while true do end end })
    while true do end`,
  'an xpcall handler that replaces the error, in a loop': `
    while true do xpcall(function() while true do end end, function() error("y", 0) end) end`,
  'pcall(f), then going on looping': `
    local n = 0
    while true do
      pcall(function() while true do end end)
      n = n + 1
    end`,
  'a coroutine closed under the limit, in a loop': `
    while true do
      local co = coroutine.create(function()
        local c <close> = setmetatable({}, { __close = function() error("z", 0) end })
        coroutine.yield()
      end)
      coroutine.resume(co)
      pcall(function() while true do end end)
      coroutine.close(co)
    end`,
  'string.rep of 8 MB in a loop': `while true do local u = string.rep("x", 8e6) end`,
  'concatenating 4 MB strings in a loop': `local s = string.rep("x", 4e6) while true do local u = s .. s end`,
  'collectgarbage() in a loop over a large heap': `
    local t = {}
    for i = 1, 200000 do t[i] = { i } end
    while true do collectgarbage() end`,
};

describe('the soft time limit', () => {
  it('cannot be swallowed or outrun; the worker serves on', async () => {
    h = await openHarness({ workers: 1, timeoutMs: TIMEOUT_MS, hardTimeoutMs: HARD_MS, memoryMb: 32 });
    const names = Object.keys(CASES);
    const branches = names.map((name, i) => `if args == "${i}" then ${CASES[name]} end`).join('\n');
    const { inend } = await inputWithRule(h, `Actions = { function(args)\n${branches}\nreturn true, args end }`);
    const seen: Array<{ name: string; cpuMs: number; message: string }> = [];
    for (let i = 0; i < names.length; i++) {
      const { value: result, cpuMs } = await withCpuMs(() => h!.engine.push(inend, [String(i)]));
      seen.push({ name: names[i], cpuMs: Math.round(cpuMs), message: result.errors[0]?.message ?? 'accepted' });
    }
    for (const s of seen) {
      // The soft limit's message (the hard one says "hard time limit"), after no more work than the limit and its grace.
      expect(s, s.name).toMatchObject({ message: expect.stringMatching(/^rule r \(\w+\): time limit exceeded \(100 ms\)$/) });
      expect(s.cpuMs, s.name).toBeLessThan(TIMEOUT_MS + GRACE_MS);
    }
    expect(h.engine.faults()).toEqual([]);
    // The first case ran without the hook, overran and ran again with it; the input then ran hooked.
    expect(h.engine.ruleOverruns()).toBe(1);
    expect(await h.engine.push(inend, ['fine'])).toMatchObject({ accepted: 1 });
  });

  it('refuses __gc finalizers, which would run with the hook off and their errors dropped', async () => {
    h = await openHarness({ workers: 1, timeoutMs: TIMEOUT_MS, hardTimeoutMs: HARD_MS });
    const { inend } = await inputWithRule(
      h,
      `Actions = { function(args)
        if args == "gc" then setmetatable({}, { __gc = function() while true do end end }); collectgarbage() end
        return true, args
      end }`,
    );
    const { value: result, cpuMs } = await withCpuMs(() => h!.engine.push(inend, ['gc']));
    expect(cpuMs).toBeLessThan(TIMEOUT_MS + GRACE_MS);
    expect(result.errors[0].message).toMatch(/line 2: setmetatable: __gc finalizers are not allowed in rules/);
    expect(h.engine.faults()).toEqual([]);
    expect(await h.engine.push(inend, ['fine'])).toMatchObject({ accepted: 1 });
  });
});
