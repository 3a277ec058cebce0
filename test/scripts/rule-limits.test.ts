/**
 * Rule limits. Error messages: capped at 1024 bytes in the push answer, the rule's stats and the log, and
 * logged once per rule and message per 10 s with the count of repeats left out. Real engine and worker. One invocation may store at most 4 MiB.
 * What leaves a worker is bounded per invocation: its records (4 MiB), its error message (cut in the
 * worker, before it is copied out of Lua), its Debug lines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptPool } from '../../src/scripts/pool/pool.js';
import { MESSAGE_BYTES_MAX, RepeatFilter, capMessage } from '../../src/scripts/shared/repeat-filter.js';
import { oneRuleTask } from '../support/run-task.js';
import { inputWithRule, openHarness, type Harness } from './helpers.js';

/**
 * Time limits no run here comes near, so only the limits under test (message sizes, stored bytes) can
 * end one: 22 invocations of 8 MB strings in one task reached a 10 s hard limit beside two CPU-bound
 * processes (issue 31).
 */
const ROOMY = { timeoutMs: 20_000, hardTimeoutMs: 110_000 };

let h: Harness | undefined;
let pool: ScriptPool | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
  await pool?.close();
  pool = undefined;
});

describe('rule error messages', () => {
  it('are capped and logged once per rule and message, however often they repeat', async () => {
    const lines: Array<{ level: string; obj: object; msg: string }> = [];
    h = await openHarness({ workers: 1, ...ROOMY }, { log: (level, obj, msg) => lines.push({ level, obj, msg }) });
    const { inend, rule } = await inputWithRule(h, 'Actions = { function(args) Throw(string.rep("x", 5000)) end }');
    const result = await h.engine.push(inend, Array.from({ length: 50 }, () => '{}'));
    expect(result.failed).toBe(50);
    for (const e of result.errors) expect(Buffer.byteLength(e.message)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
    expect(result.errors[0].message).toContain('more bytes)');
    const stats = h.engine.ruleStats(rule);
    for (const e of stats.lastErrors) expect(Buffer.byteLength(e.message)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
    const warns = lines.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect(Buffer.byteLength(warns[0].msg)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
  });

  it('RepeatFilter: a repeat inside 10 s is left out and counted on the next line after the window', () => {
    let now = 0;
    const f = new RepeatFilter(() => now);
    expect(f.admit('r', 'm')).toEqual({ repeats: 0 });
    now = 5000;
    expect(f.admit('r', 'm')).toBeUndefined();
    expect(f.admit('r', 'other')).toEqual({ repeats: 0 });
    expect(f.admit('r2', 'm')).toEqual({ repeats: 0 });
    now = 10_001;
    expect(f.admit('r', 'm')).toEqual({ repeats: 1 });
    expect(capMessage('short')).toBe('short');
  });
});

describe('what one invocation may store', () => {
  it('a rule that stores more than 4 MiB of values in one invocation gets an error for the rest', async () => {
    h = await openHarness({ workers: 1, ...ROOMY });
    const model = await h.model([{ name: 's', type: 'STRING' }]);
    const { inend } = await inputWithRule(
      h,
      `Actions = { function(args)
        local big = string.rep("y", 100000)
        for i = 1, 100 do
          local err = rds:Save("${model}", { s = big })
          if err ~= nil then Throw("at " .. i .. ": " .. err) end
        end
        return true, args
      end }`,
    );
    const result = await h.engine.push(inend, ['{}']);
    expect(result.failed).toBe(1);
    expect(result.errors[0].message).toMatch(/at 42: one invocation may store at most 4194304 bytes of values/);
  });
});

describe('what one invocation sends back', () => {
  it('an 8 MB error message or Debug line leaves the worker cut to about 1 KB, saying how much was left out', async () => {
    pool = new ScriptPool({ workers: 1, ...ROOMY, memoryMb: 32 });
    const task = oneRuleTask(
      `Actions = { function(args)
          local big = string.rep("z", 8e6)
          if args == "debug" then Debug(big) return true, args end
          if args == "utf8" then error(string.rep("é", 3000), 0) end
          error(big, 0)
        end }`,
      [...Array.from({ length: 20 }, () => 'error'), 'debug', 'utf8'],
    );
    const result = await pool.run(task);
    expect(result.errors).toHaveLength(21);
    // 1,024 bytes in all: the text, `… (`, the count of the bytes left out (those never read included), ` more bytes)`.
    for (const e of result.errors.slice(0, 20)) {
      expect(e.message).toBe(`${'z'.repeat(1000)}… (${8e6 - 1000} more bytes)`);
    }
    // Cut at a character: é is two bytes.
    expect(result.errors[20].message).toBe(`${'é'.repeat(501)}… (${6000 - 1002} more bytes)`);
    expect(capMessage(result.errors[0].message)).toBe(result.errors[0].message);
    expect(result.debug).toHaveLength(1);
    expect(result.debug[0].message).toBe(`${'z'.repeat(1000)}…`);
  });
});
