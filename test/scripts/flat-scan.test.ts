/**
 * json:J2T scans a flat object in wasm (j2t.c, flat-json.ts), and rds:Save of the untouched table checks
 * the scan against the model (scanned-record.ts) instead of JSON.parse and checkRecord; rds:Save of any
 * other table scans it in wasm too, instead of walking it from JS. The real worker runs each set of
 * payloads twice, scans on and off, through rules that save, read, change and copy the table and save
 * tables of their own: the records, errors and debug lines must be the same, and the scans must take
 * what they should.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Attribute, AttributeType, DataModel } from '../../src/models/types.js';
import { ScriptWorker } from '../../src/scripts/lua/script-worker.js';
import { valuesOf } from '../../src/scripts/shared/op-values.js';
import { taskPayloads, unpackOps, type RunResult, type RunTask } from '../../src/scripts/shared/protocol.js';

function attribute(name: string, type: AttributeType, rule: Partial<Attribute['rule']> = {}): Attribute {
  const defaultValue = type === 'BOOL' ? false : type === 'STRING' ? '' : type === 'GEO' ? '0,0' : 0;
  return {
    uuid: `a-${name}`, schemaId: 'M', name, label: name, type, rw: 'RW', unit: '', description: '',
    rule: { defaultValue, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0, ...rule },
  };
}

const MODEL: DataModel = {
  uuid: 'M', name: 'm', description: '', published: true, createdAtMs: 0,
  attributes: [
    attribute('i', 'INTEGER', { min: -1000, max: 1000 }),
    attribute('n', 'INTEGER', { defaultValue: 7 }),
    attribute('f', 'FLOAT', { round: 2, min: -100, max: 100 }),
    attribute('g', 'FLOAT'),
    attribute('b', 'BOOL'),
    attribute('s', 'STRING', { max: 8, defaultValue: 'none' }),
    attribute('t', 'STRING'),
    attribute('p', 'GEO'),
  ],
};
const UNPUBLISHED: DataModel = { ...MODEL, uuid: 'U', published: false };

const RULES = {
  save: 'local t, err = json:J2T(args) if err then Throw(err) end local e = rds:Save("M", t) if e then Throw(e) end',
  unpublished: 'local e = rds:Save("U", json:J2T(args)) if e then Throw(e) end',
  // Tables print as their address, which differs between runs: their type is printed instead.
  readThenSave:
    'local t = json:J2T(args) if type(t) ~= "table" then return 0 end local function v(x) if type(x) == "table" then return "table" end return x end ' +
    'Debug(v(t.s), v(t.i), v(t.f), v(t.zz)) local e = rds:Save("M", t) if e then Throw(e) end',
  changeThenSave: 'local t = json:J2T(args) if type(t) ~= "table" then return 0 end t.n = 5 local e = rds:Save("M", t) if e then Throw(e) end',
  twoTables: 'local a = json:J2T(args) local b = json:J2T(args) local e = rds:Save("M", a) if e then Throw(e) end e = rds:Save("M", b) if e then Throw(e) end',
  update: 'local e = rds:UpdateLast("M", json:J2T(args)) if e then Throw(e) end',
  // A table of the rule's own: the J2T result copied (pairs fills it), then saved.
  copySave: 'local t = json:J2T(args) if type(t) ~= "table" then return 0 end local r = {} for k, v in pairs(t) do r[k] = v end local e = rds:Save("M", r) if e then Throw(e) end',
  // Values only Lua makes: integers past 2^53, NaN, infinities, -0.0, NUL in strings, non-string keys, nested tables.
  luaValues:
    'local cases = { { i = math.maxinteger }, { n = 2^60 }, { g = 0/0 }, { g = math.huge }, { g = -0.0 }, { f = -0.0 }, { i = -0.0 }, ' +
    '{ s = "a\0b" }, { t = "\xff\xfe" }, { t = "tab\t" }, { [1] = 5 }, { i = { 1 } }, { b = 1 }, { i = 3, I = 4 }, { p = "1,2" }, {} } ' +
    'for _, c in ipairs(cases) do local e = rds:Save("M", c) if e then Debug(e) end end',
};

type Scan = (...args: unknown[]) => number;
type Worker = { handle(task: RunTask): RunResult; sandbox: { wasmScans: boolean; bridge: { wasm?: { scanFlat: Scan; scanTable: Scan } } } };

async function runner(): Promise<{ run(payloads: string[], scan: boolean): unknown; scanned: { texts: number; tables: number } }> {
  const worker = (await ScriptWorker.create({ timeoutMs: 1000, memoryMb: 32 })) as unknown as Worker;
  const wasm = worker.sandbox.bridge.wasm;
  if (wasm === undefined) throw new Error('the sandbox has no wasm J2T');
  // Counts the texts and tables the scans took, so that a scan that never takes anything fails the test.
  const scanned = { texts: 0, tables: 0 };
  const counted = (scan: Scan, kind: keyof typeof scanned): Scan => (...args) => {
    const keys = scan(...args);
    if (keys >= 0) scanned[kind]++;
    return keys;
  };
  wasm.scanFlat = counted(wasm.scanFlat.bind(wasm), 'texts');
  wasm.scanTable = counted(wasm.scanTable.bind(wasm), 'tables');
  const rules = Object.entries(RULES).map(([uuid, body], version) => ({ uuid, version, actions: `Actions = { function(args) ${body} return 0 end }`, success: '', failed: '' }));
  return {
    run(payloads, scan) {
      worker.sandbox.wasmScans = scan;
      const result = worker.handle({ kind: 'run', modelsVersion: 1, models: [MODEL, UNPUBLISHED], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: Object.keys(RULES), rules, payloads: taskPayloads(payloads) });
      const records = unpackOps(result.ops).map((op) => [op.payload, op.rule, op.modelId, op.kind, op.keys, valuesOf(op), op.bytes.subarray(op.start, op.end).toString('hex')]);
      return { records, errors: result.errors, debug: result.debug, invocations: result.summaries.map((s) => [s.invocations, s.failures]) };
    },
    scanned,
  };
}

/** Each run twice, scans off then on: the same answer, and how many texts and tables the scans took. */
async function compare(): Promise<(payloads: string[]) => { texts: number; tables: number }> {
  const r = await runner();
  return (payloads) => {
    const parsed = r.run(payloads, false);
    const before = { ...r.scanned };
    const scanned = r.run(payloads, true);
    expect(scanned).toEqual(parsed);
    return { texts: r.scanned.texts - before.texts, tables: r.scanned.tables - before.tables };
  };
}

const TAKEN = [
  '{}',
  ' { } ',
  '{"i":5,"n":-3,"f":12.345,"g":1e0}'.replace('1e0', '1'),
  '{"i":5,"f":1.005,"g":-0.5,"b":true,"s":"ok","t":"any text at all","p":"45.5, -120.25"}',
  '\t{\n "b" : false ,\r\n "i" : 1000 , "n" : 123456789012345 }\n',
  '{"f":99.999,"g":0.1,"s":"12345678"}',
  '{"i":1.0,"g":0.00000000000001,"t":"~!@#$%^&*()_+{}[]|:;<>?,./`\'"}',
  '{"zz":1}',
  '{"id":1}',
  '{"i":"5"}',
  '{"i":1001}',
  '{"s":"123456789"}',
  '{"p":"91,0"}',
  '{"b":1}',
  '{"i":2.5}',
  '{"f":-0.001,"g":-1000}',
  '{"g":1234567890123456,"n":12345678901234567,"f":22.009999999999998,"i":-100.00000000000001}',
];

const NOT_TAKEN = [
  '{"i":null}',
  '{"i":-0}',
  '{"g":-0.0}',
  '{"g":1e3}',
  '{"g":123456789012345678}',
  '{"g":-0.0000000000000000}',
  '{"s":"a\\"b"}',
  '{"s":"é"}',
  '{"s":"tab\there"}',
  '{"i":1,"i":2}',
  '{"__proto__":1}',
  '{"i":[1]}',
  '{"i":{}}',
  '[{"i":1}]',
  '{"i":01}',
  '{"i":1.}',
  '{"i":.5}',
  '{"i":+1}',
  '{"i":1,}',
  '{"i":1} x',
  '{"i" 1}',
  '"x"',
  '5',
  '',
  '{"i":1\u00a0}',
];

describe('json:J2T flat objects scanned in wasm, and rds:Save of their scan', () => {
  it('takes the flat objects it reads exactly; the records and refusals are those of JSON.parse and checkRecord', async () => {
    const check = await compare();
    // Each payload goes through every rule. J2T runs once in each but twoTables (twice) and luaValues (never).
    const j2tCalls = Object.keys(RULES).length;
    // The plain tables saved, at least: copySave's; readThenSave's and changeThenSave's, which their reads
    // and assignment filled; unpublished's, filled to ask its refusal again in key order (as is every
    // refused record's); and luaValues' 16 but the two with a non-string key or a table value.
    const tables = 4 + 14;
    for (const text of TAKEN) {
      const scanned = check([text]);
      expect(scanned.texts, text).toBe(j2tCalls);
      expect(scanned.tables, text).toBeGreaterThanOrEqual(tables);
    }
    for (const text of NOT_TAKEN) expect(check([text]).texts, text).toBe(0);
    expect(check(TAKEN).texts).toBe(TAKEN.length * j2tCalls);
  });

  it('generated flat objects, near-JSON and any text: the same records, errors and debug lines either way', async () => {
    const check = await compare();
    // Mostly the model's attributes: a record with any other key is refused whatever its values.
    const key = fc.oneof(
      { weight: 12, arbitrary: fc.constantFrom('i', 'n', 'f', 'g', 'b', 's', 't', 'p') },
      { weight: 1, arbitrary: fc.constantFrom('I', 'zz', 'id', 'create_at', '__proto__', '1', '', 'constructor') },
    );
    const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`));
    const number = fc.oneof(
      fc.integer().map(String),
      fc.double({ noNaN: true, noDefaultInfinity: true }).map((d) => JSON.stringify(d)),
      fc.tuple(fc.constantFrom('', '-', '+'), digits(1, 17), fc.option(digits(0, 17)), fc.option(fc.constantFrom('e1', 'E-2', 'e+0'))).map(
        ([sign, whole, fraction, exponent]) => `${sign}${whole}${fraction === null ? '' : `.${fraction}`}${exponent ?? ''}`,
      ),
      fc.constantFrom('-0', '0', '-0.0', '0.0', '1.005', '-1000', '1000.0', '100.004', '99.995', '2.675', '-0.001', '-0.004', '-100.004'),
      fc.integer({ min: -1100, max: 1100 }).map(String),
    );
    const string = fc.oneof(
      fc.string({ unit: fc.constantFrom('a', 'Z', '0', ' ', ',', '.', '-', '~', '\x7f') }).map((s) => `"${s}"`),
      fc.string({ unit: 'binary', maxLength: 12 }).map((s) => JSON.stringify(s)),
      fc.constantFrom('"45.5,-120.25"', '" 1 , 2 "', '"90,180"', '"90.0001,0"', '"12345678"', '"123456789"'),
    );
    const value = fc.oneof(number, string, fc.constantFrom('true', 'false', 'null', '[]', '{}', '[1,"a"]', '{"a":1}'));
    const space = fc.constantFrom('', '', ' ', '\n', '\t', '\r\n', '\u00a0');
    const member = fc.tuple(space, key, space, value, space).map(([a, k, b, v, c]) => `${a}"${k}"${b}:${v}${c}`);
    const object = fc.tuple(fc.array(member, { maxLength: 6 }), space).map(([members, s]) => `${s}{${members.join(',')}}${s}`);
    const mangled = fc.tuple(object, fc.nat(), fc.constantFrom('', ',', '}', '"', ':', 'x', '\u00e9')).map(([text, at, insert]) => {
      const cut = at % (text.length + 1);
      return text.slice(0, cut) + insert + text.slice(cut + (insert === '' ? 1 : 0));
    });
    let texts = 0;
    fc.assert(
      fc.property(fc.array(fc.oneof({ weight: 3, arbitrary: object }, { weight: 1, arbitrary: mangled }), { minLength: 1, maxLength: 8 }), (payloads) => {
        texts += check(payloads).texts;
      }),
      { numRuns: 300 },
    );
    // The generators reach the scan: most objects are flat ones it takes.
    expect(texts).toBeGreaterThan(300);
  });

  it('reads the scans and writes payloads right after the Lua memory grew and was moved', async () => {
    // A generous time limit: under emulation (test:arm) building the string alone took over 5 s.
    const worker = (await ScriptWorker.create({ timeoutMs: 60_000, memoryMb: 96 })) as unknown as Worker & { sandbox: { lua: { module: { HEAPU8: Uint8Array } } } };
    const grow = 'if args:sub(1, 1) == "G" then local big = string.rep("x", 24 * 1024 * 1024) return 0 end ';
    const rules = [
      { uuid: 'text', version: 1, actions: `Actions = { function(args) ${grow}local e = rds:Save("M", json:J2T(args)) if e then Throw(e) end return 0 end }`, success: '', failed: '' },
      { uuid: 'table', version: 1, actions: `Actions = { function(args) ${grow}local e = rds:Save("M", { i = #args, t = args }) if e then Throw(e) end return 0 end }`, success: '', failed: '' },
    ];
    // Counts the saves the scans stored: with views of the old memory a scan would read nothing and its
    // save would take the JS path, with the same records.
    const context = (worker as unknown as { context: { storeScanned(...args: unknown[]): unknown } }).context;
    const storeScanned = context.storeScanned.bind(context);
    let scannedSaves = 0;
    context.storeScanned = (...args) => {
      const answer = storeScanned(...args);
      if (answer === undefined) scannedSaves++;
      return answer;
    };
    const heap = worker.sandbox.lua.module.HEAPU8;
    const payloads = ['{"i":1,"t":"before"}', 'G', '{"i":2,"t":"after, and longer than sixty-four characters to take the Buffer write"}'];
    const result = worker.handle({ kind: 'run', modelsVersion: 1, models: [MODEL], readOnlyModels: [], rulesEpoch: 1, liveRuleIds: ['text', 'table'], rules, payloads: taskPayloads(payloads) });
    expect(worker.sandbox.lua.module.HEAPU8 === heap).toBe(false);
    expect(result.errors).toEqual([]);
    const saved = unpackOps(result.ops).map((op) => [op.payload, op.rule, Object.fromEntries(op.keys.map((k, i) => [k, valuesOf(op)[i]]).filter(([k]) => k === 'i' || k === 't'))]);
    expect(saved).toEqual([
      [0, 0, { i: 1, t: 'before' }],
      [0, 1, { i: payloads[0].length, t: payloads[0] }],
      [2, 0, { i: 2, t: 'after, and longer than sixty-four characters to take the Buffer write' }],
      [2, 1, { i: payloads[2].length, t: payloads[2] }],
    ]);
    expect(scannedSaves).toBe(4);
  });
});
