/**
 * Contract 18 over the real service: dry runs of rule scripts in the real worker pool (records come
 * back, nothing is stored), push token rotation, and the health of inputs and rules.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let service: TestService;
let base: string;
let model: string;
let inend: string;
let token: string;
let sample: string;

const ATTRS = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];
const QUEUE_MAX = 20;
const FULL = { t1: 20, t2: 21, t3: 22, resistivity: 1.5, conductivity: 2, dissolved_oxygen: 3, ph_value: 7 };

function payload(values: Record<string, number>): string {
  return JSON.stringify(Object.entries(values).map(([tag, value]) => ({ tag, value })));
}

const dryRun = (body: unknown) => call(base, '/api/v1/rules/dryRun', { method: 'POST', body });
const push = (body: string, pushToken = token) =>
  call(base, `/api/v1/inends/push?uuid=${inend}`, { method: 'POST', body, token: pushToken });

beforeAll(async () => {
  // A soft limit the 1,001 saves of the flood rule stay well under on a slow or loaded machine (50 ms did not).
  service = await startService({ logLevel: 'info', ini: { scripts: ['timeout_ms = 400', 'hard_timeout_ms = 2000', `queue_max = ${QUEUE_MAX}`] } });
  base = service.base;
  model = (await call(base, '/api/v1/schema/create', { method: 'POST', body: { name: 'water' } })).body.data.uuid;
  for (const name of ATTRS) {
    const rule = name === 'ph_value' ? { min: 0, max: 14 } : undefined;
    const r = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, name, type: 'FLOAT', rule } });
    expect(r.status, r.text).toBe(200);
  }
  expect((await call(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' })).status).toBe(200);
  const created = await call(base, '/api/v1/inends/create', { method: 'POST', body: { name: 'plc line 1', type: 'HTTP' } });
  inend = created.body.data.uuid;
  token = created.body.data.token;
  sample = (await readFile(new URL('../../fixtures/lua/rhilex-sample.lua', import.meta.url), 'utf8')).replaceAll('SCHEMAZ848ZRDG', model);
}, 60_000);

afterAll(async () => {
  await service?.close();
});

describe('POST /api/v1/rules/dryRun', () => {
  it('answers the records the rule would store, and stores nothing', async () => {
    const r = await dryRun({ actions: sample, payload: payload(FULL) });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({
      payloads: 1,
      accepted: 1,
      failed: 0,
      records: [{ index: 0, model, modelName: 'water', op: 'save', record: { temp: 21, resistivity: 1.5, conductivity: 2, dissolved_oxygen: 3, ph_value: 7 } }],
      recordsTotal: 1,
      errors: [],
      errorsTotal: 0,
      debug: [],
    });
    const list = await query(base, `/api/v1/datacenter/queryDataList?uuid=${model}`);
    expect(list.body.data.total).toBe(0);
  });

  it('runs NDJSON line by line: the failing line is named with the script line, the others pass', async () => {
    const lines = [payload(FULL), payload({ t1: 1 }), payload({ ...FULL, ph_value: 21.5 }), payload(FULL)].join('\n');
    const r = await dryRun({ actions: sample, payload: `${lines}\n\n`, contentType: 'application/x-ndjson' });
    expect(r.status, r.text).toBe(200);
    const d = r.body.data;
    expect(d).toMatchObject({ payloads: 4, accepted: 2, failed: 2, recordsTotal: 2, errorsTotal: 2 });
    expect(d.records.map((x: { index: number }) => x.index)).toEqual([0, 3]);
    expect(d.errors).toEqual([
      { index: 1, line: 15, message: expect.stringMatching(/arithmetic on a nil value \(field 't2'\)/) },
      { index: 2, line: 22, message: expect.stringContaining("attribute 'ph_value' must be in 0..14, got 21.5") },
    ]);
  });

  it('takes a JSON value as the payload text; updateLast and Debug come back too', async () => {
    const actions = `Actions = { function(args)
  local t = json:J2T(args)
  Debug("got " .. #t .. " rows")
  local err = rds:UpdateLast("${model}", { ph_value = t[1].value })
  if err ~= nil then Throw(err) end
  return true, args
end }`;
    const r = await dryRun({ actions, payload: [{ tag: 'ph_value', value: 6.5 }] });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.records).toEqual([{ index: 0, model, modelName: 'water', op: 'updateLast', record: { ph_value: 6.5 } }]);
    expect(r.body.data.debug).toEqual(['got 1 rows']);
  });

  it('a script that does not compile: the error at its line, every payload failed', async () => {
    const r = await dryRun({ actions: 'Actions = {\n function(args)\n x x\n end\n}', payload: 'a\nb', contentType: 'application/x-ndjson' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ payloads: 2, accepted: 0, failed: 2, records: [] });
    expect(r.body.data.errors).toEqual([{ script: 'actions', line: 3, message: expect.stringContaining("syntax error near 'x'") }]);
  });

  it('runs under the limits of a real run: the time limit and the records per invocation', async () => {
    const endless = await dryRun({ actions: 'Actions = { function(args) while true do end end }', payload: '{}' });
    expect(endless.status, endless.text).toBe(200);
    expect(endless.body.data).toMatchObject({ accepted: 0, failed: 1 });
    expect(endless.body.data.errors[0].message).toMatch(/time limit/);

    const flood = `Actions = { function(args)
  for i = 1, 1001 do
    local err = rds:Save("${model}", { temp = i })
    if err ~= nil then Throw(err) end
  end
  return true, args
end }`;
    const r = await dryRun({ actions: flood, payload: '{}' });
    expect(r.body.data.errors).toEqual([{ index: 0, line: 4, message: expect.stringContaining('too many records in one invocation (at most 1000)') }]);
    expect(r.body.data.recordsTotal).toBe(1000);
  });

  it('bad bodies are 400 naming the field; the admin token is needed', async () => {
    const noPayload = await dryRun({ actions: sample });
    expect(noPayload.status).toBe(400);
    expect(noPayload.body.msg).toMatch(/^payload must be/);
    expect((await dryRun({ actions: '', payload: '{}' })).body.msg).toMatch(/^actions must be a non-empty Lua script/);
    const tooMany = await dryRun({ actions: sample, payload: Array(QUEUE_MAX + 1).fill('{}').join('\n'), contentType: 'application/x-ndjson' });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.msg).toBe(`payload: at most ${QUEUE_MAX} NDJSON lines, as for a push ([scripts] queue_max), got ${QUEUE_MAX + 1}`);
    expect((await dryRun({ actions: sample, payload: ' \n', contentType: 'application/x-ndjson' })).body.msg).toMatch(/^payload is empty/);
    const pushToken = await call(base, '/api/v1/rules/dryRun', { method: 'POST', body: { actions: sample, payload: '{}' }, token });
    expect(pushToken.status).toBe(401);
  });
});

describe('health of inputs and rules', () => {
  let rule: string;

  it('inends/stats: last payload, accepted and failed payloads, queue depth, last error', async () => {
    const before = await call(base, `/api/v1/inends/stats?uuid=${inend}`);
    expect(before.body.data).toEqual({ uuid: inend, lastPayloadAtMs: null, accepted: 0, failed: 0, queued: 0, lastError: null });
    const created = await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: 'sample', fromSource: [inend], actions: sample } });
    rule = created.body.data.uuid;
    const startMs = Date.now();
    expect((await push(payload(FULL))).body.data).toMatchObject({ accepted: 1 });
    expect((await push(payload({ t1: 1 }))).body.data).toMatchObject({ failed: 1 });
    const after = (await call(base, `/api/v1/inends/stats?uuid=${inend}`)).body.data;
    expect(after).toMatchObject({ uuid: inend, accepted: 1, failed: 1, queued: 0 });
    expect(after.lastPayloadAtMs).toBeGreaterThanOrEqual(startMs);
    expect(after.lastError.message).toMatch(new RegExp(`^rule sample \\(${rule}\\): line 15: `));
    expect((await call(base, '/api/v1/inends/stats?uuid=INEND22222222')).status).toBe(404);
  });

  it('deleting an input a rule reads is refused with both named, saying nothing was deleted', async () => {
    const r = await call(base, `/api/v1/inends/del?uuid=${inend}`, { method: 'DELETE' });
    expect(r.status).toBe(409);
    expect(r.body.msg).toBe(
      `input plc line 1 (${inend}) is read by rule sample (${rule}): the input is not deleted; ` +
        'remove it from the fromSource of each rule (or delete the rules) first',
    );
  });

  it('rules/stats says when the rule last ran', async () => {
    const stats = (await call(base, `/api/v1/rules/stats?uuid=${rule}`)).body.data;
    expect(stats).toMatchObject({ invocations: 2, failures: 1 });
    expect(stats.lastRunAtMs).toBeGreaterThan(Date.now() - 60_000);
  });
});

describe('POST /api/v1/inends/rotateToken', () => {
  it('gives a new token; the old one is refused at once; the rotation is audited', async () => {
    expect((await push(payload(FULL))).status).toBe(200);
    const r = await call(base, `/api/v1/inends/rotateToken?uuid=${inend}`, { method: 'POST' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ uuid: inend, name: 'plc line 1', type: 'HTTP', token: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/) });
    const fresh = r.body.data.token as string;
    expect(fresh).not.toBe(token);
    expect((await push(payload(FULL))).status).toBe(401);
    expect((await push(payload(FULL), fresh)).status).toBe(200);
    const lines = service.logs.filter((l) => l.audit === 'inend.rotate-token');
    expect(lines).toEqual([expect.objectContaining({ level: 30, object: 'inend', name: 'plc line 1', uuid: inend, client: '127.0.0.1' })]);
    expect(JSON.stringify(lines)).not.toContain(fresh);
    token = fresh;
  });

  it('inends.json holds the new token as a hash only', async () => {
    const file = JSON.parse(await readFile(`${service.config.main.dataDir}/inends.json`, 'utf8'));
    const stored = file.inends.find((i: { uuid: string }) => i.uuid === inend);
    expect(stored.tokenSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(file)).not.toContain(token);
  });

  it('a simulator has no token; an unknown input is 404; the push token cannot rotate', async () => {
    const sim = await call(base, '/api/v1/inends/create', {
      method: 'POST',
      body: { name: 'sim', type: 'SIMULATOR', config: { intervalMs: 3_600_000, tags: [{ tag: 'x', min: 0, max: 1 }] } },
    });
    const refused = await call(base, `/api/v1/inends/rotateToken?uuid=${sim.body.data.uuid}`, { method: 'POST' });
    expect(refused.status).toBe(400);
    expect(refused.body.msg).toBe(`input sim (${sim.body.data.uuid}) is a SIMULATOR input: only HTTP and GENERIC_MQTT_SERVER inputs have a push token`);
    expect((await call(base, '/api/v1/inends/rotateToken?uuid=INEND22222222', { method: 'POST' })).status).toBe(404);
    expect((await call(base, `/api/v1/inends/rotateToken?uuid=${inend}`, { method: 'POST', token })).status).toBe(401);
  });
});

describe('simulator tags', () => {
  it('decimals: 0 gives whole numbers an INTEGER attribute takes, within min..max', async () => {
    const counter = (await call(base, '/api/v1/schema/create', { method: 'POST', body: { name: 'counter' } })).body.data.uuid;
    await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: counter, name: 'n', type: 'INTEGER', rule: { min: 0, max: 3 } } });
    await call(base, `/api/v1/schema/publish?uuid=${counter}`, { method: 'POST' });
    const sim = await call(base, '/api/v1/inends/create', {
      method: 'POST',
      body: { name: 'counting sim', type: 'SIMULATOR', config: { intervalMs: 10, tags: [{ tag: 'n', min: 0, max: 3, decimals: 0 }] } },
    });
    expect(sim.status, sim.text).toBe(200);
    const actions = `Actions = { function(args)
  local row = json:J2T(args)[1]
  local err = rds:Save("${counter}", { n = row.value })
  if err ~= nil then Throw(err) end
  return true, args
end }`;
    await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: 'count', fromSource: [sim.body.data.uuid], actions } });
    await expect.poll(async () => (await call(base, `/api/v1/inends/stats?uuid=${sim.body.data.uuid}`)).body.data.accepted, { timeout: 60_000 }).toBeGreaterThanOrEqual(10);
    expect((await call(base, `/api/v1/inends/stats?uuid=${sim.body.data.uuid}`)).body.data.failed).toBe(0);
    const bad = await call(base, '/api/v1/inends/create', {
      method: 'POST',
      body: { name: 'bad', type: 'SIMULATOR', config: { intervalMs: 10, tags: [{ tag: 'n', min: 0, max: 3, decimals: 1.5 }] } },
    });
    expect(bad.body.msg).toBe('config.tags[0].decimals must be an integer in 0..6, got 1.5');
  });
});
