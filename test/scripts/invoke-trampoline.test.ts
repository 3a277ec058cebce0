/**
 * Every protected call in Lua (lua_pcallk, pcall, xpcall, coroutine.resume) runs through emscripten's
 * `invoke_vii`, which lua-raw.ts replaces with its own (InvokeTrampoline). A longjmp (a Lua error) must
 * restore the wasm stack and be caught where Lua caught it before; anything else must pass. Thousands
 * of caught errors in a row would exhaust the wasm stack if one restore were missing.
 */
import { describe, expect, it } from 'vitest';
import { INVOKE_ERROR, INVOKE_OK, type LibHost } from '../../src/scripts/lua/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua/lua-sandbox.js';

function host(lines: string[]): LibHost {
  return {
    store: (_kind, uuid) => (uuid === 'THROW' ? (null as unknown as string).length.toString() : undefined),
    debug: (m) => lines.push(m),
  };
}

const scripts = (actions: string) => ({ actions, success: '', failed: '' });

describe('the protected-call trampoline', () => {
  it('catches errors of every kind, nested and from host functions, and leaves the stack as it was', async () => {
    const lines: string[] = [];
    const sandbox = await LuaSandbox.create({ timeoutMs: 5000, memoryMb: 32 }, host(lines));
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        local caught = 0
        for i = 1, 20000 do
          local ok = pcall(error, i % 2 == 0 and 'text' or { code = i })
          if not ok then caught = caught + 1 end
        end
        local ok1, e1 = pcall(function() local ok2, e2 = pcall(error, 'inner') error('outer:' .. e2, 0) end)
        local co = coroutine.create(function() error('in coroutine', 0) end)
        local ok3, e3 = coroutine.resume(co)
        -- Ends in the memory cap or in Lua's stack limit, whichever comes first: caught either way.
        local function deep(n) return deep(n + 1) + 1 end
        local ok4, e4 = pcall(deep, 1)
        local ok5, e5 = xpcall(function() return nil .. 'x' end, function(m) return 'handled' end)
        local ok6, e6 = pcall(rds.Save, rds, 'THROW', { a = 1 })
        Debug(caught, ok1, e1, ok3, e3, ok4, type(e4), ok5, e5, ok6, type(e6))
        return 0
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    for (let round = 0; round < 3; round++) {
      expect(sandbox.invoke(rule.envRef, 'x')).toEqual({ status: INVOKE_OK });
    }
    expect(lines).toEqual(Array(3).fill('20000 false outer:inner false in coroutine false string false handled false string'));
  });

  it('ends an invocation with its error and runs the next one as usual', async () => {
    const lines: string[] = [];
    const sandbox = await LuaSandbox.create({ timeoutMs: 5000, memoryMb: 32 }, host(lines));
    const failing = sandbox.compile(scripts(`Actions = { function(args) error('boom ' .. args) end }`));
    const fine = sandbox.compile(scripts(`Actions = { function(args) Debug('ok ' .. args) return 0 end }`));
    if (!failing.ok || !fine.ok) throw new Error('compile');
    for (let i = 0; i < 5000; i++) {
      expect(sandbox.invoke(failing.envRef, String(i))).toMatchObject({ status: INVOKE_ERROR, message: expect.stringContaining(`boom ${i}`) });
      expect(sandbox.invoke(fine.envRef, String(i))).toEqual({ status: INVOKE_OK });
    }
    expect(lines).toHaveLength(5000);
    expect(lines[4999]).toBe('ok 4999');
  });
});
