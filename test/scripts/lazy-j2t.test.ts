/**
 * json:J2T leaves a flat object unbuilt until a script looks into it, and rds:Save takes an untouched one
 * straight from the parsed JSON (lua-bridge.ts). Every script below runs in one sandbox on each payload
 * twice: as it is, and padded with 16 KiB of spaces, which J2T builds at once as before (Lua's string hash
 * is seeded per state, so only one state gives comparable `pairs` orders). Both must give the same debug
 * lines, records, refusals and outcome.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { LibHost } from '../../src/scripts/lua/lua-libs.js';
import { LuaSandbox } from '../../src/scripts/lua/lua-sandbox.js';

interface Seen {
  lines: string[];
  saved: unknown[][];
  outcomes: unknown[];
  unordered: number;
}

/** A host whose refusals for model ORDER name the keys in the order given: order-dependent, like checkRecord's. */
function host(seen: Seen): LibHost {
  const refusal = (record: Record<string, unknown>) => `refused ${Object.keys(record).join(',')}`;
  return {
    store: (kind, uuid, record) => {
      if (uuid === 'ORDER') return refusal(record);
      seen.saved.push([kind, uuid, ...Object.entries(record).sort(([a], [b]) => (a < b ? -1 : 1)).flat()]);
      return undefined;
    },
    storeUnordered(kind, uuid, record) {
      seen.unordered++;
      return uuid === 'ORDER' ? null : this.store(kind, uuid, record);
    },
    debug: (m) => seen.lines.push(m),
  };
}

const PAYLOADS = [
  '{"a":1,"b":2.5,"c":"x","d":true,"e":false}',
  '{"device_id":"dev-1","temperature":21.5,"humidity":40,"pressure":1013.2,"battery":97,"status":"ok"}',
  '{"n":null,"k":1}',
  '{"z":1,"y":2,"10":3,"2":4,"x":5}',
  '{"k":1,"k":2,"j":3}',
  '{"neg":-0,"big":1e300,"i":9007199254740993,"f":1e400}',
  '{"s":"a\\u0000b","u":"é\\ud83d\\ude00"}',
  '{"a\\u0000b":1,"a\\u0000c":2}',
  '{"lone":"\\ud800"}',
  '{"nested":{"a":1},"v":2}',
  '{"arr":[1,2],"v":2}',
  '[1,2,3]',
  '{}',
  '"text"',
  '42',
  'null',
  '{"bad":',
  // A built-in broker's event (its payload JSON-escaped) and a long plain text value: read one field or two.
  '{"action":"publish","clientid":"c1","ts":1718000000000,"topic":"t/x","payload":"[{\\"tag\\":\\"t1\\",\\"value\\":21.5},{\\"tag\\":\\"t2\\",\\"value\\":22}]"}',
  '{"payload":"a long plain value, over thirty-two characters","k":1}',
  '{"__proto__":5,"constructor":"c","\u00e9":2,"10":3,"a":"x"}',
];

const SCRIPTS: Record<string, string> = {
  passThrough: `local t, err = json:J2T(args) if err then Debug('err', err) return 0 end Debug(type(t), rds:Save("M", t))`,
  update: `local t = json:J2T(args) Debug(rds:UpdateLast("M", t))`,
  orderedRefusal: `local t = json:J2T(args) Debug(rds:Save("ORDER", t))`,
  badUuid: `local t = json:J2T(args) Debug(rds:Save(7, t))`,
  readThenSave: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t.a), tostring(t.k)) Debug(rds:Save("M", t))`,
  modify: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end t.extra = 1 t.a = nil Debug(rds:Save("M", t))`,
  pairsOrder: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local ks = {} for k, v in pairs(t) do ks[#ks + 1] = tostring(k) .. '=' .. tostring(v) .. ':' .. (math.type(v) or type(v)) end Debug(table.concat(ks, ' '))`,
  nextOrder: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local ks, k = {}, next(t) while k ~= nil do ks[#ks + 1] = tostring(k) k = next(t, k) end Debug(table.concat(ks, ' '), select('#', next(t)))`,
  ipairsLen: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local n = 0 for _ in ipairs(t) do n = n + 1 end Debug(n, #t, rawlen(t))`,
  lenFirst: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(#t) Debug(rds:Save("M", t))`,
  t2j: `local t = json:J2T(args) Debug(json:T2J(t))`,
  typeMeta: `local t = json:J2T(args) Debug(type(t), tostring(getmetatable(t)), rawequal(t, t))`,
  rawOps: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(rawget(t, 'a'))) rawset(t, 'r', 1) Debug(tostring(rawget(t, 'r')), rds:Save("M", t))`,
  ownMeta: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end setmetatable(t, { __index = function(_, k) return 'dflt:' .. k end }) Debug(tostring(t.a), t.zz) Debug(rds:Save("M", t))`,
  asMeta: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local x = setmetatable({}, { __index = t }) local y = setmetatable({}, t) Debug(tostring(x.a), tostring(getmetatable(y) == t))`,
  nilKey: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(pcall(function() t[nil] = 1 end)) Debug(pcall(function() t[0/0] = 1 end)) t[nil] = 2`,
  nanKey: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(pcall(function() t[0/0] = 1 end)) t[0/0] = 2`,
  tableLib: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end table.insert(t, 'v') Debug(#t, t[#t], pcall(table.concat, t, ','))`,
  unpack: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(select('#', table.unpack(t)), table.unpack(t, 1, 2))`,
  asEnv: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local f = load('return a, k', 'x', 't', t) Debug(f())`,
  twoDecodes: `local a, b = json:J2T(args), json:J2T(args) Debug(rawequal(a, b)) if type(a) == 'table' then a.q = 1 Debug(tostring(b.q)) end Debug(rds:Save("M", b))`,
  // Texts that are not args carry args' padding, so that the eager run builds them at once too.
  twoTexts: `local pad = args:match('%s*$') local a = json:J2T(args) local b = json:J2T('{"other":1,"k":2}' .. pad) Debug(rds:Save("M", a)) Debug(rds:Save("M", b)) Debug(rds:Save("M", a))`,
  olderAfterCollected: `local pad = args:match('%s*$') local keep = json:J2T(args) for i = 1, 40 do local x = json:J2T('{"i":' .. i .. '}' .. pad) x = nil collectgarbage() end local last = json:J2T('{"last":7}' .. pad) collectgarbage() Debug(rds:Save("M", keep)) Debug(rds:Save("M", last))`,
  kept: `if Kept then Debug(rds:Save("M", Kept)) end Kept = json:J2T(args)`,
  keptRead: `if Kept then Debug(json:T2J(Kept)) end Kept = json:J2T(args)`,
  errorWith: `local t = json:J2T(args) error(t)`,
  // The first two reads of the newest lazy table are answered without filling it; a third fills it.
  readKinds: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local function d(v) return tostring(v) .. ':' .. (math.type(v) or type(v)) end Debug(d(t.a), d(t.ts)) Debug(rds:Save("M", t))`,
  readProto: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t.__proto__), tostring(t.constructor)) Debug(tostring(t.toString), tostring(t.zz))`,
  readOddKeys: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t['\u{e9}']), tostring(t['a\0b'])) Debug(tostring(t[10]), tostring(t['10']))`,
  readNonString: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t[true]), tostring(t[1.5])) Debug(tostring(t[1]), tostring(t.k))`,
  readThenPairs: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t.k), tostring(t.a), tostring(t.payload)) local ks = {} for k in pairs(t) do ks[#ks + 1] = tostring(k) end Debug(table.concat(ks, ' '))`,
  readThenModify: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end Debug(tostring(t.a)) t.a = 'changed' Debug(tostring(t.a), rds:Save("M", t))`,
  envelope: `local ev = json:J2T(args) if type(ev) ~= 'table' or type(ev.payload) ~= 'string' then return 0 end local data, err = json:J2T(ev.payload) Debug(ev.action, type(data), err and 'err' or json:T2J(data))`,
  // A payload string read, dropped and collected: J2T of another text of its length parses that text.
  envelopeCollected: `local ev = json:J2T(args) if type(ev) ~= 'table' then return 0 end local p = ev.payload if type(p) ~= 'string' then return 0 end local n = #p p = nil collectgarbage() local other = string.rep(' ', n - 1) .. '1' Debug(json:J2T(other))`,
  closeVar: `local t = json:J2T(args) if type(t) ~= 'table' then return 0 end local ok, e = pcall(function() local c <close> = t end) Debug(ok, (tostring(e):gsub('0x%x+', 'ADDR')))`,
};

const PADDING = ' '.repeat(16 * 1024);

async function runBoth(script: string, payloads: readonly string[] = PAYLOADS): Promise<{ lazy: Seen; eager: Seen }> {
  const seen: Seen = { lines: [], saved: [], outcomes: [], unordered: 0 };
  const sandbox = await LuaSandbox.create({ timeoutMs: 1000, memoryMb: 16 }, host(seen));
  const run = (padding: string): Seen => {
    Object.assign(seen, { lines: [], saved: [], outcomes: [], unordered: 0 });
    // A rule of its own per series: globals the script keeps (Kept) start over.
    const rule = sandbox.compile({ actions: `Actions = { function(args) ${script} return 0 end }`, success: '', failed: '' });
    if (!rule.ok) throw new Error(rule.error);
    for (const payload of payloads) {
      const outcome = sandbox.invoke(rule.envRef, payload + padding);
      seen.outcomes.push(outcome.message === undefined ? outcome : { ...outcome, message: outcome.message.replace(/0x[0-9a-f]+/g, 'ADDR') });
    }
    return { ...seen, lines: seen.lines.map((l) => l.replace(/0x[0-9a-f]+/g, 'ADDR')) };
  };
  const lazy = run('');
  const eager = run(PADDING);
  return { lazy, eager };
}

describe('lazy J2T tables', () => {
  for (const [name, script] of Object.entries(SCRIPTS)) {
    it(`${name}: the same result as tables built at once`, async () => {
      const { lazy, eager } = await runBoth(script);
      expect({ ...lazy, unordered: 0 }).toEqual({ ...eager, unordered: 0 });
      expect(eager.unordered).toBe(0);
    });
  }

  // Generated flat objects: keys and strings of any UTF-16 (NUL, lone surrogates and escapes included,
  // which JSON.stringify writes as escapes), numbers of every kind, nulls; the same result either way.
  it('generated flat objects: the same records, debug lines and pairs order as tables built at once', async () => {
    const text = fc.string({ unit: 'binary', maxLength: 12 });
    const flat = fc.dictionary(text, fc.oneof(text, fc.double(), fc.integer(), fc.maxSafeInteger(), fc.boolean(), fc.constant(null)), { maxKeys: 8 });
    const raw = fc.oneof(fc.constantFrom('\u0000', '\\ud800', 'a\\"b', '\\u00e9', '\u00e9', '\ud83d\ude00'), text);
    // Some texts written by hand: an escape or a raw character where JSON.stringify would not put one.
    const handWritten = fc.tuple(raw, raw).map(([k, v]) => `{"${k.replace(/"/g, '')}":"${v.replace(/"/g, '')}","n":1}`);
    const payloads = fc.array(fc.oneof(flat.map((o) => JSON.stringify(o)), handWritten), { minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(payloads, async (list) => {
        for (const script of [SCRIPTS.passThrough, SCRIPTS.pairsOrder, SCRIPTS.readThenSave, SCRIPTS.readThenPairs]) {
          const { lazy, eager } = await runBoth(script, list);
          expect({ ...lazy, unordered: 0 }).toEqual({ ...eager, unordered: 0 });
        }
      }),
      { numRuns: 40 },
    );
  });

  it('a pass-through save of a flat object takes the parsed object, for every flat payload', async () => {
    const { lazy } = await runBoth(SCRIPTS.passThrough);
    // Flat objects whose values survive the trip unchanged: the first five payloads, {} and the last three.
    expect(lazy.unordered).toBe(9);
  });
});
