/**
 * Rule limits. Error messages: capped at 1024 characters in the push answer, the rule's stats and the log, and
 * logged once per rule and message per 10 s with the count of repeats left out. Real engine and worker. One invocation may store at most 4 MiB.
 * What leaves a worker is bounded per invocation: its records (4 MiB), its error message (cut in the
 * worker, before it is copied out of Lua), its Debug lines.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ScriptPool } from '../../src/scripts/pool.js';
import { MESSAGE_CHARS_MAX, RepeatFilter, capMessage } from '../../src/scripts/shared/repeat-filter.js';
import { oneRuleTask } from '../support/run-task.js';
import { inputWithRule, openHarness, type Harness } from './helpers.js';

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
    h = await openHarness({ workers: 1 }, { log: (level, obj, msg) => lines.push({ level, obj, msg }) });
    const { inend, rule } = await inputWithRule(h, 'Actions = { function(args) Throw(string.rep("x", 5000)) end }');
    const result = await h.engine.push(inend, Array.from({ length: 50 }, () => '{}'));
    expect(result.failed).toBe(50);
    for (const e of result.errors) expect(e.message.length).toBeLessThan(MESSAGE_CHARS_MAX + 200);
    expect(result.errors[0].message).toContain('more characters)');
    const stats = h.engine.ruleStats(rule);
    for (const e of stats.lastErrors) expect(e.message.length).toBeLessThan(MESSAGE_CHARS_MAX + 100);
    const warns = lines.filter((l) => l.level === 'warn');
    expect(warns).toHaveLength(1);
    expect(warns[0].msg.length).toBeLessThan(MESSAGE_CHARS_MAX + 100);
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
    h = await openHarness({ workers: 1, timeoutMs: 2000 });
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
    pool = new ScriptPool({ workers: 1, timeoutMs: 2000, hardTimeoutMs: 10_000, memoryMb: 32 });
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
    for (const e of result.errors.slice(0, 20)) {
      expect(e.message).toBe(`${'z'.repeat(MESSAGE_CHARS_MAX)}… (${8e6 - MESSAGE_CHARS_MAX} more bytes)`);
    }
    // Short enough to be read whole: counted in characters, as the main thread counts.
    expect(result.errors[20].message).toBe(`${'é'.repeat(MESSAGE_CHARS_MAX)}… (${3000 - MESSAGE_CHARS_MAX} more characters)`);
    expect(capMessage(result.errors[0].message)).toBe(result.errors[0].message);
    expect(result.debug).toHaveLength(1);
    expect(result.debug[0].message).toBe(`${'z'.repeat(1000)}…`);
  });
});
