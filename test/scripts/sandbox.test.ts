/**
 * The Lua sandbox on its own (the same class each worker thread runs), for properties of one engine:
 * what is absent, and the wasmoon 1.16 repeated-call memory bug.
 */
import { describe, expect, it } from 'vitest';
import { INVOKE_OK, type LibHost } from '../../src/scripts/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua-sandbox.js';

function recordingHost(): LibHost & { saved: unknown[][]; lines: string[] } {
  const saved: unknown[][] = [];
  const lines: string[] = [];
  return {
    saved,
    lines,
    store: (_kind, uuid, kv) => {
      saved.push([uuid, ...kv]);
      return undefined;
    },
    debug: (m) => lines.push(m),
  };
}

const scripts = (actions: string) => ({ actions, success: '', failed: '' });

describe('LuaSandbox', () => {
  it('has no io, os, debug, package, require, dofile, loadfile, string.dump, and loads text only', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        Debug(type(io), type(os), type(debug), type(package), type(require), type(dofile), type(loadfile), type(string.dump))
        local f, err = load("\\27LuaT\\0\\25\\147\\r\\n\\26\\n")
        Debug(tostring(f), err)
        Debug(load("return 1 + 1")())
        Debug(("abc"):upper(), tostring(getmetatable("")))
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    expect(sandbox.invoke(rule.envRef, 'x')).toEqual({ status: INVOKE_OK });
    expect(host.lines[0]).toBe('nil nil nil nil nil nil nil nil');
    expect(host.lines[1]).toMatch(/^nil attempt to load a binary chunk \(mode is 't'\)/);
    expect(host.lines[2]).toBe('2');
    expect(host.lines[3]).toBe('ABC false');
  });

  it('keeps rules apart: one rule cannot replace another rule’s rds.Save', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const evil = sandbox.compile(scripts('rds.Save = function() return nil end; Actions = { function(a) Leak = 1; return true, a end }'));
    const good = sandbox.compile(scripts('Actions = { function(a) Debug(tostring(Leak)); return true, rds:Save("M", { v = 1 }) end }'));
    if (!evil.ok || !good.ok) throw new Error('compile');
    sandbox.invoke(evil.envRef, 'x');
    sandbox.invoke(good.envRef, 'x');
    expect(host.saved).toEqual([['M', 'v', 1]]);
    expect(host.lines).toEqual(['nil']);
  });

  it('runs a rule 5000 times on one engine without the 1.16 memory corruption', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        local t = json:J2T(args)
        return true, rds:Save("M", { v = t[1].value, s = json:T2J(t) })
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    for (let i = 0; i < 5000; i++) {
      expect(sandbox.invoke(rule.envRef, `[{"tag":"a","value":${i}}]`).status).toBe(INVOKE_OK);
    }
    expect(host.saved).toHaveLength(5000);
    const last = host.saved[4999];
    expect(last[last.indexOf('v') + 1]).toBe(4999);
    expect(JSON.parse(last[last.indexOf('s') + 1] as string)).toEqual([{ tag: 'a', value: 4999 }]);
    // Memory stays bounded: garbage of earlier invocations is collected.
    expect(sandbox.memoryUsed()).toBeLessThan(8 * 1024 * 1024);
  });

  it('formats a compile error with the script name and line', async () => {
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, recordingHost());
    const rule = sandbox.compile(scripts('Actions = {\n  function(args)\n    foo x = 1\n  end\n}'));
    expect(rule).toEqual({ ok: false, error: "actions:3: syntax error near 'x'" });
  });
});
