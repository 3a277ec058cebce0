/**
 * json:J2T decodes arrays in wasm (src/scripts/lua/j2t.c, j2t-wasm.ts) when it can, and leaves the rest
 * to the JS path. In one Lua state (string hashes, and so `pairs` order, are per state), every text is decoded both
 * ways and must give the same value: types (integer or float), key order, lengths, nesting, errors.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { J2T_WASM_BASE64, LUA_ALLOC_WASM_BASE64 } from '../../src/scripts/lua/wasm-bytes.js';
import type { LibHost } from '../../src/scripts/lua/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua/lua-sandbox.js';

const DUMP = `
local function dump(v)
  local tv = type(v)
  if tv == 'table' then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = dump(k) .. '=' .. dump(x) end
    return '{' .. table.concat(parts, ',') .. '}#' .. #v
  elseif tv == 'number' then return math.type(v) .. ':' .. string.format('%.17g', v)
  elseif tv == 'string' then return string.format('%q', v)
  end
  return tostring(v)
end
local t, err = json:J2T(args)
Debug(dump(t), tostring(err))
`;

interface Decoded {
  lines: string[];
  taken: number;
}

async function decoder(): Promise<(texts: readonly string[], wasm: boolean) => Decoded> {
  const lines: string[] = [];
  const host: LibHost = { store: () => undefined, debug: (m) => lines.push(m) };
  const sandbox = await LuaSandbox.create({ timeoutMs: 1000, memoryMb: 32 }, host);
  const rule = sandbox.compile({ actions: `Actions = { function(args) ${DUMP} return 0 end }`, success: '', failed: '' });
  if (!rule.ok) throw new Error(rule.error);
  // Counts the texts the wasm decoder took, so that a decoder that never takes anything fails the test.
  const bridge = (sandbox as unknown as { bridge: { wasm?: { decode(L: number, t: number, n: number): boolean } } }).bridge;
  const arrays = bridge.wasm;
  if (arrays === undefined) throw new Error('the sandbox has no wasm J2T');
  let taken = 0;
  const decode = arrays.decode.bind(arrays);
  arrays.decode = (L, t, n) => {
    const took = decode(L, t, n);
    if (took) taken++;
    return took;
  };
  return (texts, wasm) => {
    sandbox.wasmArrays = wasm;
    lines.length = 0;
    taken = 0;
    for (const text of texts) {
      const outcome = sandbox.invoke(rule.envRef, text);
      if (outcome.status !== 0) lines.push(`status ${outcome.status}: ${outcome.message}`);
    }
    return { lines: [...lines], taken };
  };
}

const TAKEN = [
  '[]',
  ' [ ] ',
  '[1,2,3]',
  '[{"tag":"t1","value":21.5},{"tag":"t2","value":22},{"tag":"ph_value","value":7.01}]',
  '[1.0, -0, -0.0, 0.5, -12.25, 123456789012345, 12345678901234.5, 0.00000000000001, 20.05, 1.10]',
  '[true,false,"",[],{},[[[]]],{"a":{"b":{"c":[1,{"d":"e"}]}}}]',
  '[{"__proto__":1,"constructor":2,"toString":"x","1a":3,"01":4,"-1":5,"1.5":6}]',
  '\t\r\n[\n{ "a" : 1 , "b" : [ 2 , 3 ] }\n]\n',
  `[${Array.from({ length: 70 }, (_, i) => `{"k${i}":${i}}`).join(',')}]`,
];

const NOT_TAKEN = [
  '{"a":1}',
  '"[1]"',
  '[null]',
  '[1,null,3]',
  '["a\\"b"]',
  '["\u00e9"]',
  '["a\u0000b"]',
  '[1e5]',
  '[1E-3]',
  '[1234567890123456]',
  '[0.1234567890123456]',
  '[01]',
  '[1.]',
  '[.5]',
  '[-]',
  '[+1]',
  '[1,]',
  '[,1]',
  '[1 2]',
  '[{"a":1,"a":2}]',
  '[{"10":1,"a":2}]',
  '[{"0":1}]',
  '[{"4294967295":1}]',
  '[tru]',
  '[true false]',
  '[1]x',
  '[1]]',
  '[',
  '[{"a" 1}]',
  '[{a:1}]',
  `[{${Array.from({ length: 65 }, (_, i) => `"k${i}":${i}`).join(',')}}]`,
  `${'['.repeat(33)}${']'.repeat(33)}`,
  `[${'[],'.repeat(1100)}[]]`,
];

describe('json:J2T of arrays in wasm', () => {
  it('takes the arrays it can decode exactly, and they decode as on the JS path', async () => {
    const decode = await decoder();
    for (const text of TAKEN) {
      const wasm = decode([text], true);
      const js = decode([text], false);
      expect(wasm.taken, text).toBe(1);
      // Switched off, the JS path decodes it: the comparison is of the two paths.
      expect(js.taken, text).toBe(0);
      expect(wasm.lines, text).toEqual(js.lines);
    }
  });

  it('leaves everything else to the JS path, whose answer (value or error) is unchanged', async () => {
    const decode = await decoder();
    for (const text of NOT_TAKEN) {
      const wasm = decode([text], true);
      expect(wasm.taken, text).toBe(0);
      expect(wasm.lines, text).toEqual(decode([text], false).lines);
    }
  });

  it('generated JSON arrays, near-JSON and any text: the same value and the same error either way', async () => {
    const decode = await decoder();
    const ascii = fc.string({ unit: fc.constantFrom(...'abz01 _-.:,"\\[]{}e'.split('')), maxLength: 8 });
    const key = fc.oneof(ascii, fc.string({ maxLength: 6 }), fc.constantFrom('0', '1', '10', '01', '__proto__', 'a', 'a'));
    const number = fc.oneof(
      fc.integer(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer({ min: -1e6, max: 1e6 }).map((n) => n / 100),
      fc.constantFrom(-0, 0.1, 1e21, 2 ** 53, 2 ** 53 + 2, 123456789012345, 999999999999999),
    );
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(number, fc.boolean(), ascii, fc.string({ maxLength: 6 }), fc.constant(null)),
      node: fc.oneof({ depthSize: 'small' }, tie('leaf'), fc.array(tie('node'), { maxLength: 5 }), fc.dictionary(key, tie('node'), { maxKeys: 5 })),
    })).node;
    const arrayText = fc.array(value, { maxLength: 8 }).map((a) => JSON.stringify(a));
    // Hand-written numbers and spacing JSON.stringify never writes.
    const numberText = fc.tuple(fc.constantFrom('', '-'), fc.stringMatching(/^[0-9]{1,17}$/), fc.constantFrom('', '.'), fc.stringMatching(/^[0-9]{0,17}$/), fc.constantFrom('', 'e1', 'E-2'));
    const spaced = fc.array(numberText.map((parts) => parts.join('')), { minLength: 1, maxLength: 4 }).map((nums) => ` [ ${nums.join(' , ')} ] `);
    // A valid array cut or with one character changed: near-JSON must still give the JS path's error.
    const mangled = fc.tuple(arrayText, fc.nat(), fc.constantFrom('', ',', ']', '[', '"', '\\', '{', ':', ' ', 'x', '\u0000')).map(([t, at, c]) => {
      const i = at % (t.length + 1);
      return t.slice(0, i) + c + t.slice(i + (c === '' ? 0 : 1));
    });
    // Any text that starts like an array: JSON's characters in any order, and any bytes at all.
    const jsonChars = fc.string({ unit: fc.constantFrom(...'[]{}",:0123456789.-eEtruefalsn \t\n\r\\x'.split('')), maxLength: 40 });
    const anyText = fc.oneof(jsonChars, fc.string({ unit: 'binary', maxLength: 40 })).map((t) => `[${t}`);
    let takenTotal = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(arrayText, spaced, mangled, anyText), { minLength: 1, maxLength: 10 }), async (texts) => {
        const wasm = decode(texts, true);
        takenTotal += wasm.taken;
        expect(wasm.lines).toEqual(decode(texts, false).lines);
      }),
      { numRuns: 300 },
    );
    // 100 to 170 in ten runs of random seeds (99 once): the bound only has to fail a decoder that takes nothing.
    expect(takenTotal).toBeGreaterThan(40);
  });

  it('a Lua error while building (the memory limit) ends the invocation as on the JS path', async () => {
    const lines: string[] = [];
    const sandbox = await LuaSandbox.create({ timeoutMs: 1000, memoryMb: 1 }, { store: () => undefined, debug: (m) => lines.push(m) });
    const rule = sandbox.compile({ actions: `Actions = { function(args) local t = json:J2T(args) Debug(#t) return 0 end }`, success: '', failed: '' });
    if (!rule.ok) throw new Error(rule.error);
    const big = `[${Array.from({ length: 40_000 }, (_, i) => `{"tag":"t${i}","value":${i}.5}`).join(',')}]`;
    const outcomes = [true, false].map((wasm) => {
      sandbox.wasmArrays = wasm;
      return sandbox.invoke(rule.envRef, big);
    });
    expect(outcomes[0]).toEqual(outcomes[1]);
    expect(outcomes[0].message).toMatch(/memory limit exceeded/);
    // The state is sound afterwards: a small array still decodes.
    sandbox.wasmArrays = true;
    expect(sandbox.invoke(rule.envRef, '[1,2]')).toEqual({ status: 0 });
    expect(lines).toEqual(['2']);
  });

  it('the committed modules have no memory or data of their own (the build script reads their sections right)', async () => {
    const script = '../../scripts/build-wasm.mjs';
    const { sectionIds } = (await import(script)) as { sectionIds(bytes: Buffer): number[] };
    // type, import, function, global, export, code: no memory (5), data (11) or data count (12) section.
    for (const base64 of [J2T_WASM_BASE64, LUA_ALLOC_WASM_BASE64]) expect(sectionIds(Buffer.from(base64, 'base64'))).toEqual([1, 2, 3, 6, 7, 10]);
  });

  // What scripts/build-wasm.mjs needs, as .ci/run installs it: clang-14, and lld-14's wasm-ld.
  const toolchain = ['clang-14', 'wasm-ld-14'].every((tool) => spawnSync(tool, ['--version']).status === 0);
  it.skipIf(!toolchain)('the committed modules are the builds of src/scripts/lua/j2t.c and lua-alloc.c', () => {
    execFileSync(process.execPath, ['scripts/build-wasm.mjs', '--check'], { stdio: 'pipe' });
  });
});
