/**
 * The Lua sandbox on its own (the same class each worker thread runs), for properties of one engine:
 * what is absent, and the wasmoon 1.16 repeated-call memory bug.
 */
import { describe, expect, it } from 'vitest';
import { INVOKE_ERROR, INVOKE_OK, type LibHost } from '../../src/scripts/lua/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua/lua-sandbox.js';

function recordingHost(): LibHost & { saved: unknown[][]; lines: string[] } {
  const saved: unknown[][] = [];
  const lines: string[] = [];
  return {
    saved,
    lines,
    store: (_kind, uuid, record) => {
      saved.push([uuid, ...Object.entries(record).flat()]);
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

  it('J2T builds the same Lua values as wasmoon did: nulls dropped, integers, NUL-terminated strings', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        local t, err = json:J2T(args)
        if err then Debug('err', err) return true, args end
        if t == nil then return true, args end
        Debug(select('#', json:J2T(args)), math.type(t.i), math.type(t.f), t.n, #t.a, t.a[2], t.a[3], t.s, t.e and #t.e, t.o and t.o.k)
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    sandbox.invoke(rule.envRef, '{"i":21,"f":21.5,"n":null,"a":[1,null,3],"s":"a\\u0000b","e":[],"o":{"k":"v"}}');
    sandbox.invoke(rule.envRef, 'null');
    sandbox.invoke(rule.envRef, '{"a":1,}');
    // A top-level null is no value at all (and no error); bad JSON gives JSON.parse's message.
    expect(host.lines).toEqual(['1 integer float nil 3 nil 3 a 0 v', 'err Expected double-quoted property name in JSON at position 7']);
  });

  it('J2T keeps a JSON number past the int64 range as a float: stored as the number it is, not wrapped (-2^63 is in it)', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        local t = json:J2T(args)
        Debug(math.type(t.big), math.type(t.edge), math.type(t.low), math.type(t.max), math.type(t.small))
        rds:Save("M", t)
        local a = json:J2T('[1e300, 9223372036854775808, -9223372036854775809, 12]')
        Debug(math.type(a[1]), math.type(a[2]), math.type(a[3]), math.type(a[4]), a[4])
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    const payload = '{"big":10000000000000000000,"edge":9223372036854775808,"low":-9223372036854775809,"max":9223372036854774784,"small":-12}';
    expect(sandbox.invoke(rule.envRef, payload)).toEqual({ status: INVOKE_OK });
    expect(host.lines).toEqual(['float float integer integer integer', 'float float integer integer 12']);
    const [uuid, ...fields] = host.saved[0];
    const stored = Object.fromEntries(fields.flatMap((_, i) => (i % 2 === 0 ? [[fields[i], fields[i + 1]]] : [])));
    expect([uuid, stored]).toEqual(['M', { big: 1e19, edge: 2 ** 63, low: -(2 ** 63), max: 9223372036854774784, small: -12 }]);
  });

  it('json:J2T takes a string or a number (as tostring writes it) and refuses anything else at the calling line', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const numbers = sandbox.compile(scripts(`Actions = { function(args)
        Debug(json:J2T(12), json:J2T(2.5), json:J2T(-0.0), json:J2T(2^53), json:J2T('"s"'))
        return true, args
      end }`));
    if (!numbers.ok) throw new Error(numbers.error);
    expect(sandbox.invoke(numbers.envRef, 'x')).toEqual({ status: INVOKE_OK });
    expect(host.lines).toEqual(['12 2.5 0 9007199254741000 s']);
    for (const [call, got] of [['json:J2T({})', 'table'], ['json:J2T()', 'nil'], ['json:J2T(nil)', 'nil'], ['json:J2T(true)', 'boolean'], ['json.J2T(args)', 'nil'], ['json:J2T(print or Debug)', 'function']]) {
      const bad = sandbox.compile(scripts(`Actions = { function(args)\n  local x = 1\n  return true, ${call}\nend }`));
      if (!bad.ok) throw new Error(bad.error);
      expect(sandbox.invoke(bad.envRef, 'x').message, call).toBe(`actions:3: bad argument #1 to 'J2T' (string expected, got ${got})`);
    }
  });

  it('json:base64J2T decodes base64 then JSON as RHILEX does: (value) or (nil, err) for bad base64 or bad JSON', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        local t, err = json:base64J2T(args)
        if err then Debug('err', err) return true, args end
        if t == nil then Debug('nil', select('#', json:base64J2T(args))) return true, args end
        Debug(t.i and math.type(t.i), t.n, t.a and #t.a, t.s, t.u)
        if t.o then rds:Save("M", t.o) end
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    const b64 = (text: string | Buffer): string => Buffer.from(text).toString('base64');
    sandbox.invoke(rule.envRef, b64('{"i":7,"n":null,"a":[1,null,3],"s":"x","u":"é","o":{"v":1.5}}'));
    sandbox.invoke(rule.envRef, b64('null'));
    sandbox.invoke(rule.envRef, 'e30');
    sandbox.invoke(rule.envRef, b64('{"a":1,}'));
    // Invalid UTF-8 in a string becomes U+FFFD, as Go's JSON decoder reads it.
    sandbox.invoke(rule.envRef, b64(Buffer.from([0x7b, 0x22, 0x75, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d])));
    expect(host.lines).toEqual([
      'integer nil 3 x é',
      'nil 0',
      'err illegal base64 data at input byte 0',
      'err Expected double-quoted property name in JSON at position 7',
      'nil nil nil nil \uFFFD',
    ]);
    expect(host.saved).toEqual([['M', 'v', 1.5]]);
    const bad = sandbox.compile(scripts(`Actions = { function(args) return true, json:base64J2T({}) end }`));
    if (!bad.ok) throw new Error(bad.error);
    expect(sandbox.invoke(bad.envRef, 'x').message).toMatch(/bad argument #1 to 'base64J2T' \(string expected, got table\)/);
  });

  it('rds takes records with string keys and scalar values on the fast path, numeric keys on the generic one, and refuses tables', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(`Actions = { function(args)
        Debug(select('#', rds:Save("M", { a = 1.5, b = "x", c = true })))
        Debug(select('#', rds:Save("M", { [1] = 2 })))
        Debug(rds:Save("M", { t = { 1 } }))
        Debug(rds:Save("M", 5))
        rds:UpdateLast(7, { z = false })
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    expect(sandbox.invoke(rule.envRef, 'x')).toEqual({ status: INVOKE_OK });
    expect(host.lines).toEqual(['0', '0', "attribute 't' expects a string, number or boolean, got table", 'missing table fields']);
    const sorted = host.saved.map(([uuid, ...kv]) => [uuid, Object.fromEntries(Array.from({ length: kv.length / 2 }, (_, i) => [kv[2 * i], kv[2 * i + 1]]))]);
    expect(sorted).toEqual([
      ['M', { a: 1.5, b: 'x', c: true }],
      ['M', { 1: 2 }],
      [7, { z: false }],
    ]);
  });

  it('a device payload nested 30 deep, stored or re-encoded, leaves the engine sound for every later call', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 2000, memoryMb: 16 }, host);
    const sample = sandbox.compile(
      scripts(`Actions = { function(args)
        local t = json:J2T(args)
        local row = {}
        for _, r in ipairs(t) do row[r.tag] = r.value end
        local err = rds:Save("M", { resistivity = row.resistivity })
        if err ~= nil then Debug(err) end
        local s, e = json:T2J(t)
        Debug(s and #s or e)
        return true, args
      end }`),
    );
    if (!sample.ok) throw new Error(sample.error);
    const deep = `[{"tag":"resistivity","value":${'['.repeat(30)}1${']'.repeat(30)}}]`;
    expect(sandbox.invoke(sample.envRef, deep).status).toBe(INVOKE_OK);
    expect(host.lines[0]).toBe("attribute 'resistivity' expects a string, number or boolean, got table");
    expect(Number(host.lines[1])).toBe(deep.length);
    const builder = sandbox.compile(
      scripts('Actions = { function(a) local t = 1; for i = 1, 50000 do t = { t } end; local s, e = json:T2J(t); Debug(tostring(s), e); return true, a end }'),
    );
    if (!builder.ok) throw new Error(builder.error);
    expect(sandbox.invoke(builder.envRef, 'x').status).toBe(INVOKE_OK);
    expect(host.lines[2]).toBe('nil tables nested deeper than 200 levels');
    for (let i = 0; i < 200; i++) {
      expect(sandbox.invoke(sample.envRef, `[{"tag":"resistivity","value":${i}}]`).status).toBe(INVOKE_OK);
    }
    expect(host.saved.slice(-1)).toEqual([['M', 'resistivity', 199]]);
    const other = sandbox.compile(scripts('Actions = { function(a) return true, rds:Save("N", { v = 1 }) end }'));
    if (!other.ok) throw new Error(other.error);
    expect(sandbox.invoke(other.envRef, 'x').status).toBe(INVOKE_OK);
  });

  it('json:T2J encodes like JSON.stringify: scalars, escapes, arrays, objects, empty tables as []', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, host);
    const rule = sandbox.compile(
      scripts(String.raw`Actions = { function(args)
        Debug(json:T2J({ 1, 2.5, 0.1, -3, 1e300, "a\"b\\c\n\1", true, false }))
        Debug(json:T2J({ k = { x = 1 } }))
        Debug(json:T2J({}))
        Debug(json:T2J(nil))
        Debug(json:T2J(0/0))
        local s, e = json:T2J({ f = print })
        Debug(tostring(s), e)
        return true, args
      end }`),
    );
    if (!rule.ok) throw new Error(rule.error);
    expect(sandbox.invoke(rule.envRef, 'x').status).toBe(INVOKE_OK);
    expect(JSON.parse(host.lines[0])).toEqual([1, 2.5, 0.1, -3, 1e300, 'a"b\\c\n\u0001', true, false]);
    expect(host.lines[0]).toBe(JSON.stringify([1, 2.5, 0.1, -3, 1e300, 'a"b\\c\n\u0001', true, false]));
    expect(host.lines.slice(1, 5)).toEqual(['{"k":{"x":1}}', '[]', 'null', 'null']);
    expect(host.lines[5]).toBe('nil cannot encode a function to JSON');
  });

  it('survives a JSON payload nested 300,000 deep (wasmoon overflowed the Lua stack and trapped)', async () => {
    const host = recordingHost();
    const sandbox = await LuaSandbox.create({ timeoutMs: 2000, memoryMb: 16 }, host);
    const rule = sandbox.compile(scripts(`Actions = { function(args) local ok = pcall(json.J2T, json, args) return true, args end }`));
    if (!rule.ok) throw new Error(rule.error);
    const deep = '['.repeat(300_000) + ']'.repeat(300_000);
    // pcall catches the refusal (memory cap or nesting); at worst the invocation fails, the engine lives.
    expect([INVOKE_OK, INVOKE_ERROR]).toContain(sandbox.invoke(rule.envRef, deep).status);
    const simple = sandbox.compile(scripts(`Actions = { function(args) Debug(#json:J2T(args)) return true, args end }`));
    if (!simple.ok) throw new Error(simple.error);
    expect(sandbox.invoke(simple.envRef, '[1,2]')).toEqual({ status: INVOKE_OK });
    expect(host.lines).toEqual(['2']);
  });

  it('formats a compile error with the script name and line', async () => {
    const sandbox = await LuaSandbox.create({ timeoutMs: 200, memoryMb: 16 }, recordingHost());
    const rule = sandbox.compile(scripts('Actions = {\n  function(args)\n    foo x = 1\n  end\n}'));
    expect(rule).toEqual({ ok: false, error: "actions:3: syntax error near 'x'" });
  });
});
