/**
 * Contract 16 over HTTP, against the real service (store, registry, a real script worker):
 * schemaDDLDefine, getTemplateFields without templateId, and a RHILEX applet script (`function
 * Main(arg)`, no `Actions`) accepted as a rule that stores what is pushed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
let base: string;
let model: string;

async function ok(path: string, init: Parameters<typeof call>[2] = {}): Promise<any> {
  const r = await call(base, path, init);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.body.data;
}

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  base = svc.base;
  model = (await ok('/api/v1/schema/create', { method: 'POST', body: { name: 'line 4' } })).uuid;
  const attributes = [
    { name: 'temp', type: 'FLOAT', rule: { defaultValue: '21.5' } },
    { name: 'count', type: 'INTEGER' },
    { name: 'running', type: 'BOOL', rule: { defaultValue: true } },
    { name: 'note', type: 'STRING', rule: { defaultValue: 'none' } },
    { name: 'pos', type: 'GEO' },
  ];
  for (const a of attributes) await ok('/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, ...a } });
}, 60_000);

afterAll(async () => svc?.close());

describe('schemaDDLDefine (contract 16)', () => {
  it('a draft has no table: []; published: id, create_at, then each attribute with its type and default', async () => {
    expect(await ok(`/api/v1/datacenter/schemaDDLDefine?uuid=${model}`)).toEqual([]);
    await ok(`/api/v1/schema/publish?uuid=${model}`, { method: 'POST' });
    expect(await ok(`/api/v1/datacenter/schemaDDLDefine?uuid=${model}`)).toEqual([
      { name: 'id', type: 'INTEGER', defaultValue: 0 },
      { name: 'create_at', type: 'STRING', defaultValue: '' },
      { name: 'temp', type: 'FLOAT', defaultValue: 21.5 },
      { name: 'count', type: 'INTEGER', defaultValue: 0 },
      { name: 'running', type: 'BOOL', defaultValue: true },
      { name: 'note', type: 'STRING', defaultValue: 'none' },
      { name: 'pos', type: 'GEO', defaultValue: '0,0' },
    ]);
  });

  it('needs the admin token and a known uuid', async () => {
    expect((await call(base, `/api/v1/datacenter/schemaDDLDefine?uuid=${model}`, { token: null })).status).toBe(401);
    const missing = await call(base, '/api/v1/datacenter/schemaDDLDefine');
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toContain("'uuid'");
    expect((await call(base, '/api/v1/datacenter/schemaDDLDefine?uuid=SCHEMA22222222')).status).toBe(404);
  });
});

describe('getTemplateFields without templateId (contract 16)', () => {
  it('lists every template as {name, type, comment}, exactly the fields genTemplate inserts', async () => {
    const templates: Array<{ value: string }> = await ok('/api/v1/schema/getTemplates');
    const all: Record<string, Array<{ name: string; type: string; comment: string }>> = await ok('/api/v1/schema/getTemplateFields');
    expect(Object.keys(all)).toEqual(templates.map((t) => t.value));
    for (const { value } of templates) {
      const target = (await ok('/api/v1/schema/create', { method: 'POST', body: { name: value } })).uuid;
      const inserted: Array<{ name: string; type: string }> = await ok(`/api/v1/schema/genTemplate?schemaId=${target}&templateId=${value}`, { method: 'POST' });
      expect(all[value].map(({ name, type }) => ({ name, type })), value).toEqual(inserted.map(({ name, type }) => ({ name, type })));
      for (const field of all[value]) expect(Object.keys(field)).toEqual(['name', 'type', 'comment']);
    }
    expect(all.TEMP_HUMIDITY).toEqual([
      { name: 'device_id', type: 'STRING', comment: 'Device ID, at most 64 bytes' },
      { name: 'temperature', type: 'FLOAT', comment: 'Temperature, ℃, -40..125' },
      { name: 'humidity', type: 'FLOAT', comment: 'Relative humidity, %, 0..100' },
    ]);
    expect(all.SMART_LOCK.map((f) => f.type)).toEqual(['STRING', 'BOOL', 'STRING', 'STRING', 'FLOAT']);
  });

  it('with templateId it still answers that template in full; an unknown one is 400', async () => {
    const one: Array<{ name: string; unit: string }> = await ok('/api/v1/schema/getTemplateFields?templateId=TEMP_HUMIDITY');
    expect(one.map((f) => f.name)).toEqual(['device_id', 'temperature', 'humidity']);
    expect(one[1].unit).toBe('℃');
    expect((await call(base, '/api/v1/schema/getTemplateFields?templateId=NOPE')).status).toBe(400);
  });
});

describe('RHILEX applet scripts as rules (contract 16)', () => {
  const applet = (uuid: string) => `
-- A RHILEX applet: no Actions table, one Main function.
function Main(arg)
  local t, err = json:J2T(arg);
  if err ~= nil then Throw(err); return 0; end;
  local e = rds:Save("${uuid}", { temp = t.temp, count = t.count, note = "applet" });
  if e ~= nil then Throw(e); return 0; end;
  return 0;
end;
`;

  it('validates, and a push through it stores the record', async () => {
    expect(await ok('/api/v1/rules/validate', { method: 'POST', body: { actions: applet(model), success: '', failed: '' } })).toMatchObject({ ok: true });
    const input = await ok('/api/v1/inends/create', { method: 'POST', body: { name: 'plc', type: 'HTTP', description: '' } });
    await ok('/api/v1/rules/create', {
      method: 'POST',
      body: { name: 'applet', description: '', fromSource: [input.uuid], actions: applet(model), success: '', failed: '' },
    });
    const pushed = await call(base, `/api/v1/inends/push?uuid=${input.uuid}`, {
      method: 'POST',
      body: JSON.stringify({ temp: 19.25, count: 7 }),
      token: input.token,
    });
    expect(pushed.status, pushed.text).toBe(200);
    expect(pushed.body.data).toMatchObject({ accepted: 1, failed: 0 });
    const last = await query(base, `/api/v1/datacenter/queryLastData?uuid=${model}`);
    expect(last.body.data).toMatchObject({ id: 1, temp: 19.25, count: 7, running: true, note: 'applet', pos: '0,0' });

    const bad = await call(base, `/api/v1/inends/push?uuid=${input.uuid}`, { method: 'POST', body: '{"temp":"hot"}', token: input.token });
    expect(bad.body.data).toMatchObject({ accepted: 0, failed: 1 });
    expect(bad.body.data.errors[0].message).toContain("attribute 'temp' expects FLOAT, got string");
  });

  it('a script with neither Actions nor Main is refused naming both', async () => {
    const r = await call(base, '/api/v1/rules/validate', { method: 'POST', body: { actions: 'local x = 1', success: '', failed: '' } });
    expect(r.body.data).toMatchObject({ ok: false });
    expect(r.body.data.error).toBe("actions: 'Actions' must be a functions table (or define function Main(arg), as a RHILEX applet does)");
  });

  it('Actions wins when a script defines both: Main is then a helper', async () => {
    const both = 'function Main(arg) error("Main must not run") end\nActions = { function(args) return true, args end }';
    expect(await ok('/api/v1/rules/validate', { method: 'POST', body: { actions: both, success: '', failed: '' } })).toMatchObject({ ok: true });
  });
});
