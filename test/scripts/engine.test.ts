/**
 * The rule runtime end to end: real worker threads, real wasmoon, the real model registry and store.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AuthError, InvalidArgumentError, NotFoundError, StateError, UnavailableError } from '../../src/errors.js';
import { ScriptEngine } from '../../src/scripts/engine.js';
import { inputWithRule, modbusPayload, openHarness, SAMPLE_MODEL_ATTRIBUTES, sampleScript, type Harness } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h?.close();
});

const eventModel = [{ name: 'event', type: 'STRING' }];

describe('RHILEX sample script', () => {
  it('runs unchanged and stores the averaged record of each Modbus payload', async () => {
    h = await openHarness();
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const { inend } = await inputWithRule(h, await sampleScript(model));
    const payloads = Array.from({ length: 300 }, (_, i) =>
      modbusPayload({ t1: 20 + i, t2: 21 + i, t3: 22 + i, resistivity: 1.5, conductivity: 2.5, dissolved_oxygen: 7.25, ph_value: 7 }),
    );
    expect(await h.engine.push(inend, payloads)).toEqual({ accepted: 300, failed: 0, errors: [], durable: expect.any(Boolean) });
    const records = await h.records(model);
    expect(records).toHaveLength(300);
    expect(records[0]).toMatchObject({ id: 1, temp: 21, resistivity: 1.5, conductivity: 2.5, dissolved_oxygen: 7.25, ph_value: 7 });
    expect(records[299]).toMatchObject({ id: 300, temp: 320 });
    expect(h.engine.ruleStats(h.engine.listRules()[0].uuid)).toMatchObject({ invocations: 300, successes: 300, failures: 0 });
  });

  it('takes the lines of a push body as they are, and refuses anything but strings or such lines with a 400', async () => {
    h = await openHarness();
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const { inend } = await inputWithRule(h, await sampleScript(model));
    const line = modbusPayload({ t1: 1, t2: 2, t3: 3, resistivity: 1, conductivity: 2, dissolved_oxygen: 3, ph_value: 4 });
    const body = Buffer.from(`xx${line}\n${line}yy`);
    const starts = [2, 3 + Buffer.byteLength(line)];
    const ends = [2 + Buffer.byteLength(line), starts[1] + Buffer.byteLength(line)];
    expect(await h.engine.push(inend, { body, starts, ends })).toMatchObject({ accepted: 2, failed: 0 });
    expect(await h.records(model)).toHaveLength(2);
    for (const bad of [null, undefined, 'text', 7, [1], { body: 'x', starts: [], ends: [] }, { body, starts: [0], ends: [] }, { body }]) {
      expect(() => h.engine.push(inend, bad as never), JSON.stringify(bad)).toThrow(InvalidArgumentError);
    }
  });

  it('reports a payload that is not JSON with the line of Throw', async () => {
    h = await openHarness();
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const { inend, rule } = await inputWithRule(h, await sampleScript(model));
    const result = await h.engine.push(inend, ['not json']);
    expect(result.failed).toBe(1);
    expect(result.errors[0].message).toMatch(new RegExp(`^rule r \\(${rule}\\): line 7: .*JSON`));
    expect(h.engine.ruleStats(rule).lastErrors[0]).toMatchObject({ line: 7 });
  });
});

describe('rds', () => {
  it('answers an error string for every kind of bad record and stores none of them', async () => {
    h = await openHarness();
    const model = await h.model([
      { name: 'temp', type: 'FLOAT', rule: { min: 0, max: 100 } },
      { name: 'label', type: 'STRING', rule: { max: 4 } },
      { name: 'pos', type: 'GEO' },
      { name: 'n', type: 'INTEGER' },
    ]);
    const draft = await h.registry.create({ name: 'draft' });
    const { inend } = await inputWithRule(
      h,
      `local M = "${model}"
      local cases = {
        unknown_model = function() return rds:Save("SCHEMA22222222", { temp = 1 }) end,
        unpublished = function() return rds:Save("${draft.uuid}", { temp = 1 }) end,
        unknown_attribute = function() return rds:Save(M, { nope = 1 }) end,
        wrong_type = function() return rds:Save(M, { temp = "hot" }) end,
        out_of_range = function() return rds:Save(M, { temp = 101 }) end,
        too_long = function() return rds:Save(M, { label = "abcdef" }) end,
        bad_geo = function() return rds:Save(M, { pos = "91,0" }) end,
        fraction = function() return rds:Save(M, { n = 1.5 }) end,
        id_key = function() return rds:Save(M, { id = 3 }) end,
        create_at_key = function() return rds:UpdateLast(M, { create_at = 3 }) end,
        not_a_table = function() return rds:Save(M, 5) end,
        mixed = function() return rds:Save(M, { temp = 5, nope = 1 }) end,
      }
      Actions = { function(args)
        local err = cases[args]()
        if err ~= nil then Throw(err); return 0; end;
        return true, args
      end }`,
    );
    const names = ['unknown_model', 'unpublished', 'unknown_attribute', 'wrong_type', 'out_of_range', 'too_long', 'bad_geo', 'fraction', 'id_key', 'create_at_key', 'not_a_table', 'mixed'];
    const result = await h.engine.push(inend, names);
    expect(result.failed).toBe(names.length);
    const messages = (await Promise.all(names.map((n) => h.engine.push(inend, [n])))).map((r) => r.errors[0].message);
    const expected = [
      /unknown model SCHEMA22222222/,
      /not published/,
      /unknown attribute 'nope'/,
      /attribute 'temp' expects FLOAT, got string/,
      /must be in 0\.\.100, got 101/,
      /label/,
      /pos/,
      /expects INTEGER/,
      /key 'id'/,
      /key 'create_at'/,
      /missing table fields/,
      /unknown attribute 'nope'/,
    ];
    messages.forEach((m, i) => expect(m).toMatch(expected[i]));
    expect(await h.records(model)).toEqual([]);
  });

  it('UpdateLast creates a record when there is none, then merges into the last one', async () => {
    h = await openHarness();
    const model = await h.model([
      { name: 'a', type: 'INTEGER' },
      { name: 'b', type: 'STRING' },
    ]);
    const { inend } = await inputWithRule(
      h,
      `Actions = { function(args)
        local t = json:J2T(args)
        local err
        if t.save then err = rds:Save("${model}", t.fields) else err = rds:UpdateLast("${model}", t.fields) end
        if err ~= nil then Throw(err) end
        return true, args
      end }`,
    );
    expect(await h.engine.push(inend, [JSON.stringify({ fields: { a: 1 } })])).toEqual({ accepted: 1, failed: 0, errors: [], durable: expect.any(Boolean) });
    expect(await h.records(model)).toMatchObject([{ id: 1, a: 1 }]);
    await h.engine.push(inend, [JSON.stringify({ save: true, fields: { a: 2, b: 'x' } }), JSON.stringify({ fields: { b: 'y' } })]);
    expect(await h.records(model)).toMatchObject([
      { id: 1, a: 1 },
      { id: 2, a: 2, b: 'y' },
    ]);
  });
});

describe('action chain', () => {
  it('passes data on true, stops on false, stops on Throw with its line; calls Success and Failed', async () => {
    h = await openHarness();
    const events = await h.model(eventModel);
    const { inend, rule } = await inputWithRule(
      h,
      `local function note(s) rds:Save("${events}", { event = s }) end
Actions = {
  function(args) note("a1:" .. args); return true, args .. "+1" end,
  function(args)
    if args == "stop+1" then return false, args end
    if args == "throw+1" then Throw("bad " .. args); return 0 end
    note("a2:" .. args); return true, args
  end,
  function(args) note("a3:" .. args); return 0 end,
}`,
      {
        success: `function Success() rds:Save("${events}", { event = "success" }) end`,
        failed: `function Failed(err) rds:Save("${events}", { event = "failed:" .. err }) end`,
      },
    );
    const result = await h.engine.push(inend, ['go', 'stop', 'throw']);
    expect(result).toEqual({ accepted: 2, failed: 1, errors: [{ index: 2, message: `rule r (${rule}): line 6: bad throw+1` }], durable: expect.any(Boolean) });
    const stored = (await h.records(events)).map((r) => r.event);
    expect(stored).toEqual(['a1:go', 'a2:go+1', 'a3:go+1', 'success', 'a1:stop', 'success', 'a1:throw', 'failed:actions:6: bad throw+1']);
  });

  it('refuses a broken script on create and update with the line, and validates without saving', async () => {
    h = await openHarness();
    const { inend, rule } = await inputWithRule(h, 'Actions = { function(a) return true, a end }');
    const broken = 'Actions = {\n  function(args)\n    foo x = 1\n  end\n}';
    await expect(h.engine.createRule({ name: 'x', fromSource: [inend], actions: broken })).rejects.toThrow(
      new InvalidArgumentError("actions: line 3: syntax error near 'x'"),
    );
    await expect(h.engine.updateRule({ uuid: rule, actions: broken })).rejects.toBeInstanceOf(InvalidArgumentError);
    expect(await h.engine.validate({ actions: broken })).toEqual({ ok: false, error: "actions: line 3: syntax error near 'x'", line: 3 });
    expect(await h.engine.validate({ actions: 'Actions = 1' })).toEqual({ ok: false, error: "actions: 'Actions' must be a functions table (or define function Main(arg), as a RHILEX applet does)" });
    expect(await h.engine.validate({ actions: 'Actions = { function() end }', success: 'x = 1' })).toMatchObject({ ok: false, error: "success: 'Success' callback function missed" });
    expect(await h.engine.validate('Actions = { function() end }')).toEqual({ ok: true });
    await expect(h.engine.createRule({ name: '', actions: 'x' })).rejects.toThrow('name must be a non-empty string, got ""');
    await expect(h.engine.createRule({ name: 'r', fromSource: [inend, 'INEND22222222'], actions: 'x' })).rejects.toThrow(
      'fromSource[1] refers to unknown input INEND22222222',
    );
    expect(h.engine.listRules()).toHaveLength(1);
  });
});

describe('limits', () => {
  it('stops an infinite loop, a memory bomb, a huge string.rep and a pathological pattern; other rules keep storing', async () => {
    // Limits with headroom: a descheduled worker cannot make a good payload reach the soft limit, nor the
    // batch of the loop and the bomb (both ended by the soft or memory limit) reach the hard one; only the
    // pattern, which runs in C where the soft limit cannot look, is ended by the hard limit.
    h = await openHarness({ timeoutMs: 500, hardTimeoutMs: 4000, memoryMb: 16 });
    const model = await h.model([{ name: 'v', type: 'STRING' }]);
    const { inend, token } = await inputWithRule(
      h,
      `Actions = { function(args)
        if args == "loop" then while true do pcall(function() while true do end end) end end
        if args == "bomb" then local s = "x" local t = {} while true do s = s .. s; t[#t + 1] = s end end
        if args == "rep" then local s = string.rep("x", 1e9) end
        if args == "pattern" then string.find(string.rep("a", 60), ".-.-.-.-.-.-.-.-.-.-.-.-b") end
        return true, args
      end }`,
    );
    await h.engine.createRule({ name: 'good', fromSource: [inend], actions: `Actions = { function(a) return true, rds:Save("${model}", { v = a }) end }` });
    h.engine.authenticatePush(inend, token);
    // Which limit ended each payload is in its message: the push answers once each was ended.
    const result = await h.engine.push(inend, ['ok1', 'loop', 'bomb', 'rep', 'pattern', 'ok2']);
    expect(result.accepted).toBe(2);
    expect(result.failed).toBe(4);
    const messages = result.errors.map((e) => e.message);
    expect(messages[0]).toMatch(/time limit exceeded \(500 ms\)/);
    expect(messages[1]).toMatch(/memory limit exceeded \(16 MB\)|time limit exceeded/);
    expect(messages[2]).toMatch(/memory limit exceeded \(16 MB\)/);
    expect(messages[3]).toMatch(/hard time limit exceeded \(4000 ms\), worker restarted/);
    // The good rule stored every payload, the culprit's included.
    expect((await h.records(model)).map((r) => r.v)).toEqual(['ok1', 'loop', 'bomb', 'rep', 'pattern', 'ok2']);
    // The replaced worker serves again.
    expect(await h.engine.push(inend, ['ok3'])).toMatchObject({ accepted: 1 });
  });
});

describe('queue', () => {
  it('answers UnavailableError when full and stores everything it accepted', async () => {
    h = await openHarness({ queueMax: 40, workers: 1 });
    const model = await h.model([{ name: 'n', type: 'INTEGER' }]);
    const { inend } = await inputWithRule(
      h,
      `Actions = { function(args) local t = os_clock_free_spin or 0 for i = 1, 20000 do t = t + i end return true, rds:Save("${model}", { n = tonumber(args) }) end }`,
    );
    const accepted: Array<Promise<unknown>> = [];
    let refused = 0;
    let next = 0;
    for (let round = 0; round < 30; round++) {
      const payloads = Array.from({ length: 10 }, () => String(next++));
      try {
        accepted.push(h.engine.push(inend, payloads));
      } catch (err) {
        expect(err).toBeInstanceOf(UnavailableError);
        expect((err as UnavailableError).retryAfterS).toBeGreaterThan(0);
        expect((err as Error).message).toMatch(new RegExp(`input in \\(${inend}\\) queue is full`));
        next -= 10;
        refused++;
      }
    }
    expect(refused).toBeGreaterThan(0);
    const results = (await Promise.all(accepted)) as Array<{ accepted: number }>;
    const total = results.reduce((a, r) => a + r.accepted, 0);
    expect(total).toBe(next);
    expect((await h.records(model)).map((r) => r.n)).toEqual(Array.from({ length: next }, (_, i) => i));
  });
});

describe('live replacement', () => {
  it('replaces a running rule without losing payloads and keeps arrival order', async () => {
    h = await openHarness();
    const model = await h.model([{ name: 'n', type: 'INTEGER' }, { name: 'v', type: 'INTEGER' }]);
    const script = (v: number) => `Actions = { function(args) return true, rds:Save("${model}", { n = tonumber(args), v = ${v} }) end }`;
    const { inend, rule } = await inputWithRule(h, script(1));
    const pushes: Array<Promise<{ accepted: number }>> = [];
    for (let i = 0; i < 20; i++) {
      pushes.push(h.engine.push(inend, Array.from({ length: 50 }, (_, j) => String(i * 50 + j))));
      if (i === 10) await h.engine.updateRule({ uuid: rule, actions: script(2) });
      await new Promise((r) => setImmediate(r));
    }
    const results = await Promise.all(pushes);
    expect(results.reduce((a, r) => a + r.accepted, 0)).toBe(1000);
    const records = await h.records(model);
    expect(records.map((r) => r.n)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
    expect(records[999].v).toBe(2);
    // Once v = 2 appears it stays: no payload ran under the old version after the new one.
    const firstNew = records.findIndex((r) => r.v === 2);
    expect(records.slice(firstNew).every((r) => r.v === 2)).toBe(true);
  });
});

describe('inputs', () => {
  it('creates HTTP inputs with a push token, checks it, persists, and refuses deleting an input a rule reads', async () => {
    h = await openHarness();
    const { inend, token } = await h.engine.createInend({ name: 'plc', type: 'HTTP', description: 'line 1' });
    expect(inend.uuid).toMatch(/^INEND[2-9A-Z]{8}$/);
    expect(token).toBeTruthy();
    h.engine.authenticatePush(inend.uuid, token!);
    expect(() => h.engine.authenticatePush(inend.uuid, 'wrong')).toThrow(AuthError);
    expect(() => h.engine.authenticatePush('INEND22222222', token!)).toThrow(NotFoundError);
    await expect(h.engine.createInend({ name: 'x', type: 'MQTT' })).rejects.toThrow('type must be one of HTTP, SIMULATOR, UDP_SERVER, GENERIC_MQTT_SERVER or GENERIC_MQTT, got "MQTT"');
    const rule = await h.engine.createRule({ name: 'r', fromSource: [inend.uuid], actions: 'Actions = { function(a) return true, a end }' });
    await expect(h.engine.deleteInend(inend.uuid)).rejects.toBeInstanceOf(StateError);

    // Reopen from the same data directory.
    await h.engine.close();
    const reopened = await ScriptEngine.open({ dataDir: h.dir, config: { workers: 1, workerIdleS: 60, timeoutMs: 200, hardTimeoutMs: 2000, memoryMb: 16, queueMax: 100 }, registry: h.registry });
    try {
      expect(reopened.getRule(rule.uuid)).toMatchObject({ name: 'r', fromSource: [inend.uuid] });
      expect(reopened.getInend(inend.uuid)).toMatchObject({ name: 'plc', description: 'line 1' });
      expect(JSON.stringify(reopened.getInend(inend.uuid))).not.toContain('token');
      reopened.authenticatePush(inend.uuid, token!);
      await reopened.deleteRule(rule.uuid);
      await reopened.deleteInend(inend.uuid);
      expect(reopened.listInends()).toEqual([]);
    } finally {
      await reopened.close();
    }
  });

  it('runs a SIMULATOR input through its rules until it is deleted', async () => {
    h = await openHarness();
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const tags = ['t1', 't2', 't3', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'].map((tag) => ({ tag, min: 1, max: 2 }));
    const { inend } = await h.engine.createInend({ name: 'sim', type: 'SIMULATOR', config: { intervalMs: 5, tags } });
    const rule = await h.engine.createRule({ name: 'r', fromSource: [inend.uuid], actions: await sampleScript(model) });
    // Until it stored a few records, however long a busy machine takes (the ceiling only ends a hang).
    for (const until = Date.now() + 60_000; (await h.records(model)).length <= 5 && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
    await h.engine.deleteRule(rule.uuid);
    await h.engine.deleteInend(inend.uuid);
    const records = await h.records(model);
    expect(records.length).toBeGreaterThan(5);
    for (const r of records) expect(r.temp as number).toBeGreaterThanOrEqual(1);
  });
});
