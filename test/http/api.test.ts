/**
 * The user's working order over the real server, store and registry: create a model (also from a
 * template), add attributes, publish, write records, read them through both query endpoints; every
 * rule of contract section 4; auth; state errors; export, clear, delete; malformed input.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRecord } from '../../src/models/record-check.js';
import { call, parseCsv, query } from '../support/client.js';
import { ADMIN, SECRET, SECRET_2, startService, type TestService } from '../support/service.js';

let server: TestService;
let base: string;
/** Published, 30 records. */
let main: string;
/** Published, no records. */
let empty: string;
/** Draft with one attribute. */
let draft: string;
/** Created from a template. */
let templated: string;
let t0: number;
let t1: number;

const ATTRS = [
  { name: 'temp', type: 'FLOAT', unit: '℃', label: '温度' },
  { name: 'status', type: 'STRING', label: 'Status' },
  { name: 'on', type: 'BOOL', label: 'On' },
  { name: 'count', type: 'INTEGER', label: 'Count', rule: { defaultValue: 7, min: 0, max: 0 } },
];

async function createModel(name: string): Promise<string> {
  const r = await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: 'd' } });
  expect(r.status).toBe(200);
  return r.body.data.uuid;
}

async function addAttribute(schemaId: string, attr: Record<string, unknown>): Promise<string> {
  const r = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId, ...attr } });
  expect(r.status, r.text).toBe(200);
  expect(r.body.data.uuid).toMatch(/^PROPER[2-9A-Z]{8}$/);
  return r.body.data.uuid;
}

async function publish(uuid: string): Promise<void> {
  const r = await call(base, `/api/v1/schema/publish?uuid=${uuid}`, { method: 'POST' });
  expect(r.status, r.text).toBe(200);
}

/** Writes through the real path: checkRecord then ModelLog.save. */
function save(uuid: string, input: Record<string, unknown>): number {
  const model = server.registry.get(uuid);
  const checked = checkRecord(model, input, 'save');
  if (!checked.ok) throw new Error(checked.error);
  return server.registry.log(uuid).save(checked.record);
}

beforeAll(async () => {
  server = await startService({ ini: { 'plugin.http_server': ['body_bytes_max = 4096'] }, logLevel: 'silent' });
  base = server.base;

  main = await createModel('Boiler room #1');
  for (const a of ATTRS) await addAttribute(main, a);
  await publish(main);

  empty = await createModel('empty');
  await addAttribute(empty, { name: 'x', type: 'INTEGER' });
  await publish(empty);

  draft = await createModel('draft');
  await addAttribute(draft, { name: 'x', type: 'INTEGER' });

  templated = await createModel('from template');
  const g = await call(base, `/api/v1/schema/genTemplate?schemaId=${templated}&templateId=TEMP_HUMIDITY`, { method: 'POST' });
  expect(g.status, g.text).toBe(200);
  await publish(templated);

  t0 = Date.now();
  for (let i = 1; i <= 30; i++) {
    const rec: Record<string, unknown> = { temp: i + 0.5, status: i === 3 ? 'a "quoted", multi\nline' : `s${i}`, on: i % 2 === 0 };
    if (i !== 5) rec.count = i;
    save(main, rec);
  }
  t1 = Date.now();
});

afterAll(async () => {
  await server?.close();
});

describe('models and attributes', () => {
  it('create returns data.uuid and the object', async () => {
    const r = await call(base, '/api/v1/schema/detail?uuid=' + main);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, msg: 'Success', data: { uuid: main, published: true, name: 'Boiler room #1' } });
    expect(main).toMatch(/^SCHEMA[2-9A-Z]{8}$/);
  });

  it('lists models and paged attributes', async () => {
    const list = await call(base, '/api/v1/schema/list');
    expect(list.body.data.map((m: { uuid: string }) => m.uuid)).toEqual([main, empty, draft, templated]);
    const ddl = await call(base, '/api/v1/datacenter/listSchemaDDL');
    expect(ddl.body.data).toEqual(list.body.data);
    const p = await call(base, `/api/v1/schema/properties/list?schema_uuid=${main}&current=2&size=3`);
    expect(p.status).toBe(200);
    expect(p.body.data).toMatchObject({ current: 2, size: 3, total: 4 });
    expect(p.body.data.records.map((a: { name: string }) => a.name)).toEqual(['count']);
    const detail = await call(base, `/api/v1/schema/properties/detail?uuid=${p.body.data.records[0].uuid}`);
    expect(detail.body.data).toMatchObject({ name: 'count', type: 'INTEGER', schemaId: main });
  });

  it('templates: list, fields, and the model built from one', async () => {
    const t = await call(base, '/api/v1/schema/getTemplates');
    expect(t.body.data.map((x: { value: string }) => x.value)).toContain('TEMP_HUMIDITY');
    const f = await call(base, '/api/v1/schema/getTemplateFields?templateId=TEMP_HUMIDITY');
    expect(f.status).toBe(200);
    const names = f.body.data.map((x: { name: string }) => x.name);
    const model = server.registry.get(templated);
    expect(model.attributes.map((a) => a.name)).toEqual(names);
    const bad = await call(base, '/api/v1/schema/getTemplateFields?templateId=NOPE');
    expect(bad.status).toBe(400);
  });

  it('schemaDDLDetail: synthetic id/create_at heads, then attributes in model order', async () => {
    const r = await call(base, `/api/v1/datacenter/schemaDDLDetail?uuid=${main}`);
    expect(r.status).toBe(200);
    expect(r.body.data.slice(0, 2)).toMatchObject([
      { id: 101, name: 'id', type: 'INTEGER', uuid: '101' },
      { id: 100, name: 'create_at', type: 'STRING', uuid: '100' },
    ]);
    expect(r.body.data.slice(2).map((a: { name: string }) => a.name)).toEqual(['temp', 'status', 'on', 'count']);
  });

  it('update renames; the model keeps its uuid', async () => {
    const r = await call(base, '/api/v1/schema/update', { method: 'PUT', body: { uuid: empty, name: 'empty model' } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ uuid: empty, name: 'empty model' });
  });

  it('state errors: 409 after publish, 400 for fix without confirm, 404 for unknown', async () => {
    const first = server.registry.listAttributes(main)[0];
    const attr = await call(base, '/api/v1/schema/properties/update', {
      method: 'PUT',
      body: { uuid: first.uuid, type: first.type === 'STRING' ? 'INTEGER' : 'STRING' },
    });
    expect(attr.status).toBe(409);
    expect(attr.body).toMatchObject({ code: 409, data: null });
    const again = await call(base, `/api/v1/schema/publish?uuid=${main}`, { method: 'POST' });
    expect(again.status).toBe(409);
    const tpl = await call(base, `/api/v1/schema/genTemplate?schemaId=${main}&templateId=GPS_TRACKER`, { method: 'POST' });
    expect(tpl.status).toBe(409);
    const fix = await call(base, `/api/v1/schema/fix?uuid=${main}`, { method: 'POST' });
    expect(fix.status).toBe(400);
    expect(fix.body.msg).toContain('confirm=true');
    const fixNo = await call(base, `/api/v1/schema/fix?uuid=${main}&confirm=false`, { method: 'POST' });
    expect(fixNo.status).toBe(400);
    expect(server.registry.get(main).published).toBe(true);
    const unknown = await call(base, '/api/v1/schema/detail?uuid=SCHEMAAAAAAAAA');
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ code: 404, msg: expect.any(String), data: null });
    const noUuid = await call(base, '/api/v1/schema/detail');
    expect(noUuid.status).toBe(400);
    expect(noUuid.body.msg).toBe("missing parameter 'uuid'");
    const publishEmpty = await createModel('nothing');
    const p = await call(base, `/api/v1/schema/publish?uuid=${publishEmpty}`, { method: 'POST' });
    expect(p.status).toBe(400);
  });

  it('bad bodies: invalid JSON, not an object, wrong field types give 400', async () => {
    const bad = await call(base, '/api/v1/schema/create', { method: 'POST', body: '{"name":' });
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toMatch(/not valid JSON/);
    const arr = await call(base, '/api/v1/schema/create', { method: 'POST', body: '[1,2]' });
    expect(arr.status).toBe(400);
    const none = await call(base, '/api/v1/schema/create', { method: 'POST' });
    expect(none.status).toBe(400);
    const type = await call(base, '/api/v1/schema/properties/create', {
      method: 'POST',
      body: { schemaId: draft, name: 'y', type: 'DOUBLE' },
    });
    expect(type.status).toBe(400);
    expect(type.body.msg).toMatch(/type/);
    const utf = await call(base, '/api/v1/schema/create', { method: 'POST', body: { name: '温湿度 ✓', description: '🙂' } });
    expect(utf.status).toBe(200);
    expect(utf.body.data.name).toBe('温湿度 ✓');
  });
});

describe('queryDataList', () => {
  it('defaults: current 1, size 25, newest first, total of all records', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}`);
    expect(r.status).toBe(200);
    expect(r.body.code).toBe(200);
    expect(r.body.msg).toBe('Success');
    const d = r.body.data;
    expect(d).toMatchObject({ current: 1, size: 25, total: 30 });
    expect(d.records.map((x: { id: number }) => x.id)).toEqual(Array.from({ length: 25 }, (_, i) => 30 - i));
  });

  it('record keys: id, create_at, then the attributes in model order, typed', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&order=asc&size=5`);
    const rec = r.body.data.records[0];
    expect(Object.keys(rec)).toEqual(['id', 'create_at', 'temp', 'status', 'on', 'count']);
    expect(rec).toMatchObject({ id: 1, temp: 1.5, status: 's1', on: false, count: 1 });
    // never received: the attribute's default
    expect(r.body.data.records[4]).toMatchObject({ id: 5, count: 7 });
  });

  it('history create_at is YYYY-MM-DDTHH:MM:SSZ (UTC) of the write time', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1`);
    const stamp: string = r.body.data.records[0].create_at;
    expect(stamp).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    const ms = Date.parse(stamp);
    expect(ms).toBeGreaterThanOrEqual(Math.floor(t0 / 1000) * 1000);
    expect(ms).toBeLessThanOrEqual(t1);
  });

  it('paging: page 2 continues downwards; a page past the end is empty; order asc', async () => {
    const p2 = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=2&size=10`);
    expect(p2.body.data.records.map((x: { id: number }) => x.id)).toEqual([20, 19, 18, 17, 16, 15, 14, 13, 12, 11]);
    const p4 = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=4&size=10`);
    expect(p4.body.data).toEqual({ current: 4, size: 10, total: 30, records: [] });
    const p3 = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=3&size=12`);
    expect(p3.body.data.records.map((x: { id: number }) => x.id)).toEqual([6, 5, 4, 3, 2, 1]);
    const asc = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=2&size=10&order=ASC`);
    expect(asc.body.data.records.map((x: { id: number }) => x.id)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    const desc = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=2&order=Desc`);
    expect(desc.body.data.records.map((x: { id: number }) => x.id)).toEqual([30, 29]);
    const max = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1000`);
    expect(max.status).toBe(200);
    expect(max.body.data.records).toHaveLength(30);
    const far = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=9007199254740`);
    expect(far.body.data.records).toEqual([]);
    const blank = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&current=&size=&order=`);
    expect(blank.body.data).toMatchObject({ current: 1, size: 25 });
  });

  it.each([
    ['current=0', "parameter 'current' must be an integer in 1..9007199254740, got \"0\""],
    ['current=-1', "parameter 'current'"],
    ['current=abc', "parameter 'current'"],
    ['current=1.5', "parameter 'current'"],
    ['current=1e3', "parameter 'current'"],
    ['current=99999999999999999999', "parameter 'current'"],
    ['current=9007199254741', "parameter 'current'"],
    ['size=0', "parameter 'size' must be an integer in 1..1000, got \"0\""],
    ['size=1001', "parameter 'size'"],
    ['size=-5', "parameter 'size'"],
    ['size=%EF%BC%91', "parameter 'size'"],
    ['size=1&size=2', "parameter 'size' is given more than once"],
    ['order=up', "parameter 'order' must be asc or desc, got \"up\""],
    ['order=desc;drop', "parameter 'order'"],
  ])('rejects %s with 400', async (params, message) => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&${params}`);
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ code: 400, msg: expect.stringContaining(message), data: null });
  });

  it('select: comma lists, repeats, spaces, duplicates, case; canonical order', async () => {
    const a = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1&select=temp,id`);
    expect(Object.keys(a.body.data.records[0])).toEqual(['id', 'temp']);
    const b = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1&select=count&select=%20create_at%20,,temp&select=count`);
    expect(Object.keys(b.body.data.records[0])).toEqual(['create_at', 'temp', 'count']);
    const c = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1&select=TEMP,Id`);
    expect(Object.keys(c.body.data.records[0])).toEqual(['id', 'temp']);
    const d = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1&select=`);
    expect(Object.keys(d.body.data.records[0])).toHaveLength(6);
    expect(a.body.data.total).toBe(30);
  });

  it.each([['id;drop'], ['id%3Bdrop'], ['nope'], ['id,temp,*'], ['(select 1)'], ['温度']])(
    'select=%s is a 400 naming the field',
    async (select) => {
      const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&select=${select}`);
      expect(r.status).toBe(400);
      expect(r.body.msg).toMatch(/^parameter 'select' names an unknown field "/);
    },
  );

  it('select=id;drop names exactly that field', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&select=id;drop`);
    expect(r.body.msg).toContain('"id;drop"');
  });

  it('uuid: missing 400, unknown 404, draft 409', async () => {
    const missing = await query(base, '/api/v1/datacenter/queryDataList');
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toBe("missing parameter 'uuid'");
    const unknown = await query(base, '/api/v1/datacenter/queryDataList?uuid=SCHEMAAAAAAAAA');
    expect(unknown.status).toBe(404);
    const unpublished = await query(base, `/api/v1/datacenter/queryDataList?uuid=${draft}`);
    expect(unpublished.status).toBe(409);
    expect(unpublished.body).toEqual({ code: 409, msg: expect.stringContaining('not published'), data: null });
    const last = await query(base, `/api/v1/datacenter/queryLastData?uuid=${draft}`);
    expect(last.status).toBe(409);
  });

  it('empty model: total 0, no records', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${empty}`);
    expect(r.body.data).toEqual({ current: 1, size: 25, total: 0, records: [] });
  });
});

describe('queryLastData', () => {
  it('returns the highest id with create_at as YYYY-MM-DD HH:MM:SS (UTC)', async () => {
    const r = await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}`);
    expect(r.status).toBe(200);
    expect(r.body.code).toBe(200);
    const rec = r.body.data;
    expect(Object.keys(rec)).toEqual(['id', 'create_at', 'temp', 'status', 'on', 'count']);
    expect(rec).toMatchObject({ id: 30, temp: 30.5, status: 's30', on: true, count: 30 });
    expect(rec.create_at).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/);
    const hist = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&size=1`);
    expect(hist.body.data.records[0].create_at).toBe(`${rec.create_at.replace(' ', 'T')}Z`);
  });

  it('select applies; no record gives data {}', async () => {
    const r = await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}&select=status,id`);
    expect(r.body.data).toEqual({ id: 30, status: 's30' });
    const e = await query(base, `/api/v1/datacenter/queryLastData?uuid=${empty}`);
    expect(e.text).toBe('{"code":200,"msg":"Success","data":{}}');
    const bad = await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}&select=id;drop`);
    expect(bad.status).toBe(400);
  });

  it('answers cross-origin reads and preflights', async () => {
    const r = await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}`);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    const pre = await fetch(`${base}/api/v1/datacenter/queryLastData`, { method: 'OPTIONS' });
    expect(pre.status).toBe(204);
    expect(pre.headers.get('access-control-allow-headers')).toContain('X-Api-Secret');
  });
});

describe('authentication', () => {
  const path = () => `/api/v1/datacenter/queryLastData?uuid=${main}`;

  it('missing or wrong secret: 401 envelope', async () => {
    const none = await call(base, path(), { token: null });
    expect(none.status).toBe(401);
    expect(none.body).toEqual({ code: 401, msg: expect.stringContaining('secrets'), data: null });
    const wrong = await call(base, `${path()}&secrets=nope`, { token: null });
    expect(wrong.status).toBe(401);
    expect(wrong.body.msg).toBe('wrong secret');
    const empty = await call(base, `${path()}&secrets=`, { token: null });
    expect(empty.status).toBe(401);
    const prefix = await call(base, `${path()}&secrets=${SECRET.slice(0, -1)}`, { token: null });
    expect(prefix.status).toBe(401);
    const admin = await call(base, path());
    expect(admin.status).toBe(401);
  });

  it('accepts secrets=, secret= and X-Api-Secret, and every configured secret', async () => {
    expect((await call(base, `${path()}&secrets=${SECRET}`, { token: null })).status).toBe(200);
    expect((await call(base, `${path()}&secret=${SECRET}`, { token: null })).status).toBe(200);
    expect((await call(base, path(), { token: null, headers: { 'X-Api-Secret': SECRET } })).status).toBe(200);
    const second = await call(base, `${path()}&secrets=${encodeURIComponent(SECRET_2)}`, { token: null });
    expect(second.status).toBe(200);
    const q = await call(base, `/api/v1/datacenter/queryDataList?uuid=${main}&secret=${encodeURIComponent(SECRET_2)}`, { token: null });
    expect(q.status).toBe(200);
  });

  it('management needs the admin token', async () => {
    const none = await call(base, '/api/v1/schema/list', { token: null });
    expect(none.status).toBe(401);
    expect(none.body.data).toBeNull();
    const wrong = await call(base, '/api/v1/schema/list', { token: 'x' });
    expect(wrong.status).toBe(401);
    const secret = await call(base, '/api/v1/schema/list', { token: SECRET });
    expect(secret.status).toBe(401);
    const lower = await call(base, '/api/v1/schema/list', { token: null, headers: { authorization: `bearer ${ADMIN}` } });
    expect(lower.status).toBe(200);
    for (const [method, p] of [
      ['GET', '/api/v1/datacenter/secret'],
      ['GET', `/api/v1/datacenter/exportData?uuid=${main}`],
      ['DELETE', `/api/v1/datacenter/clearSchemaData?uuid=${main}`],
      ['DELETE', `/api/v1/schema/del?uuid=${main}`],
      ['POST', `/api/v1/schema/fix?uuid=${main}&confirm=true`],
      ['GET', '/api/v1/rules/list'],
      ['GET', '/api/v1/inends/list'],
    ]) {
      const r = await call(base, p, { method, token: null });
      expect(r.status, `${method} ${p}`).toBe(401);
    }
    expect(server.registry.get(main).published).toBe(true);
  });

  it('datacenter/secret returns the first secret to the admin', async () => {
    const r = await call(base, '/api/v1/datacenter/secret');
    expect(r.body.data).toEqual({ secret: SECRET });
  });
});

describe('export', () => {
  it('CSV: BOM, header, RFC 4180 quoting, id order, ISO UTC create_at, file name', async () => {
    const res = await fetch(`${base}/api/v1/datacenter/exportData?uuid=${main}&format=csv`, {
      headers: { Authorization: `Bearer ${ADMIN}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="Boiler_room_1-\d{8}-\d{6}\.csv"/);
    const bytes = new Uint8Array(await res.arrayBuffer());
    expect([...bytes.slice(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    const text = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes).slice(1);
    const rows = parseCsv(text);
    expect(rows[0]).toEqual(['id', 'create_at', 'temp', 'status', 'on', 'count']);
    expect(rows).toHaveLength(31);
    expect(rows.slice(1).map((r) => Number(r[0]))).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(rows[3]).toEqual(['3', expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/), '3.5', 'a "quoted", multi\nline', 'false', '3']);
    expect(rows[5][5]).toBe('7');
  });

  it('JSONL with an id range', async () => {
    const r = await call(base, `/api/v1/datacenter/exportData?uuid=${main}&format=jsonl&from=10&to=12`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-disposition')).toMatch(/^attachment; filename="Boiler_room_1-\d{8}-\d{6}\.jsonl"; filename\*=UTF-8''Boiler%20room%20%231-\d{8}-\d{6}\.jsonl$/);
    const lines = r.text.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id)).toEqual([10, 11, 12]);
    expect(Object.keys(lines[0])).toEqual(['id', 'create_at', 'temp', 'status', 'on', 'count']);
  });

  it('rejects unknown formats, bad ranges, unknown and draft models', async () => {
    expect((await call(base, `/api/v1/datacenter/exportData?uuid=${main}&format=pdf`)).body.msg).toBe(`parameter 'format' must be csv, jsonl or xlsx, got "pdf"`);
    expect((await call(base, `/api/v1/datacenter/exportData?uuid=${main}&format=pdf`)).status).toBe(400);
    expect((await call(base, `/api/v1/datacenter/exportData?uuid=${main}&from=5&to=2`)).body.msg).toBe(`parameter 'from' must be at most 'to' (2), got "5"`);
    expect((await call(base, `/api/v1/datacenter/exportData?uuid=${main}&from=-1`)).status).toBe(400);
    expect((await call(base, '/api/v1/datacenter/exportData?uuid=SCHEMAAAAAAAAA')).status).toBe(404);
    expect((await call(base, `/api/v1/datacenter/exportData?uuid=${draft}`)).status).toBe(409);
  });

  it('an empty model exports just the header', async () => {
    const res = await fetch(`${base}/api/v1/datacenter/exportData?uuid=${empty}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    expect(Buffer.from(await res.arrayBuffer()).toString('utf8')).toBe('\ufeffid,create_at,x\r\n');
  });
});

describe('malformed input never gives 500', () => {
  const long = 'x'.repeat(9000);
  const cases = [
    '/api/v1/datacenter/queryDataList?uuid=%ZZ',
    '/api/v1/datacenter/queryDataList?uuid=%E0%A4%A',
    '/api/v1/datacenter/queryDataList?uuid=%C3%28',
    '/api/v1/datacenter/queryDataList?%ZZ=1',
    '/api/v1/datacenter/queryDataList?uuid=%00',
    '/api/v1/datacenter/queryDataList?uuid=温度&size=十',
    '/api/v1/datacenter/queryDataList?uuid=' + encodeURIComponent('😀'.repeat(200)),
    `/api/v1/datacenter/queryDataList?uuid=${long}`,
    `/api/v1/datacenter/queryLastData?select=${long}`,
    '/api/v1/datacenter/queryDataList?uuid[]=a&current[]=1',
    '/api/v1/datacenter/queryDataList?uuid=SCHEMA&current=1&current=2',
    '/api/v1/datacenter/queryDataList?&&&=&==&uuid',
    '/api/v1/schema/properties/list?schema_uuid=x&current=-3',
    '/api/v1/schema/properties/list?schema_uuid=' + '9'.repeat(400),
    '/%2e%2e/%2e%2e/etc/passwd',
    '/%ZZ',
  ];
  it.each(cases.map((c) => [c.slice(0, 90), c]))('%s', async (_label, path) => {
    const withSecret = await query(base, path);
    expect(withSecret.status, withSecret.text).toBeLessThan(500);
    const withAdmin = await call(base, path);
    expect(withAdmin.status, withAdmin.text).toBeLessThan(500);
    if (path.startsWith('/api/')) expect(withAdmin.body).toMatchObject({ code: withAdmin.status, data: null });
  });

  it('a URL over url_bytes_max is a 414 envelope', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&select=${long}`);
    expect(r.status).toBe(414);
    expect(r.body).toEqual({ code: 414, msg: expect.stringContaining('limit'), data: null });
  });

  it('bad percent-encoding is a 400 envelope', async () => {
    const r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&select=%E2%82`);
    expect(r.status).toBe(400);
    expect(r.body.msg).toBe('malformed percent-encoding in the query string');
  });
});

describe('routing and limits', () => {
  it('unknown /api/ route: 404 envelope; wrong method: 405 with Allow', async () => {
    const r = await call(base, '/api/v1/nope');
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ code: 404, msg: 'no such route: /api/v1/nope', data: null });
    const m = await call(base, '/api/v1/schema/create');
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toBe('POST');
    expect(m.body.code).toBe(405);
    const q = await call(base, `/api/v1/datacenter/queryDataList?uuid=${main}`, { method: 'POST', token: null });
    expect(q.status).toBe(405);
    const d = await call(base, '/api/v1/schema/del?uuid=x', { method: 'GET' });
    expect(d.status).toBe(405);
  });

  it('body over body_bytes_max: 413, and the server keeps serving', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(5000) });
    const r = await call(base, '/api/v1/schema/create', { method: 'POST', body: big });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ code: 413, data: null });
    const chunked = await fetch(`${base}/api/v1/schema/create`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN}` },
      body: new ReadableStream({
        start(controller) {
          for (let i = 0; i < 10; i++) controller.enqueue(new TextEncoder().encode('x'.repeat(1000)));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
    expect((await call(base, '/healthz', { token: null })).status).toBe(200);
  });

  it('/healthz answers without auth', async () => {
    const r = await call(base, '/healthz', { token: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ code: 200, msg: 'Success', data: { status: 'ok' } });
  });

  it('static files: index, content types, nosniff, no traversal', async () => {
    const root = await fetch(`${base}/`);
    expect(root.headers.get('x-content-type-options')).toBe('nosniff');
    if (root.status === 200) {
      expect(root.headers.get('content-type')).toBe('text/html; charset=utf-8');
      await root.text();
      const svg = await fetch(`${base}/favicon.svg`);
      expect(svg.headers.get('content-type')).toBe('image/svg+xml');
      await svg.arrayBuffer();
    } else {
      expect(root.status).toBe(404);
      await root.text();
    }
    for (const p of ['/../package.json', '/%2e%2e/package.json', '/..%2fpackage.json', '/.env', '/%2e%2e%2f%2e%2e%2fpackage.json']) {
      const r = await fetch(base + p);
      const body = await r.text();
      expect(body).not.toContain('"name": "edge-datacenter"');
    }
    const post = await call(base, '/index.html', { method: 'POST', token: null });
    expect(post.status).toBe(405);
  });
});

describe('clear and delete', () => {
  it('clear deletes every record; ids restart at 1', async () => {
    const r = await call(base, `/api/v1/datacenter/clearSchemaData?uuid=${main}`, { method: 'DELETE' });
    expect(r.status).toBe(200);
    const after = await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}`);
    expect(after.body.data).toMatchObject({ total: 0, records: [] });
    expect((await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}`)).body.data).toEqual({});
    expect(save(main, { temp: 1 })).toBe(1);
    const last = await query(base, `/api/v1/datacenter/queryLastData?uuid=${main}`);
    expect(last.body.data).toMatchObject({ id: 1, temp: 1 });
  });

  it('fix with confirm returns to draft and drops data; delete removes the model', async () => {
    const fix = await call(base, `/api/v1/schema/fix?uuid=${templated}&confirm=true`, { method: 'POST' });
    expect(fix.status, fix.text).toBe(200);
    expect((await query(base, `/api/v1/datacenter/queryLastData?uuid=${templated}`)).status).toBe(409);
    const del = await call(base, `/api/v1/schema/del?uuid=${main}`, { method: 'DELETE' });
    expect(del.status).toBe(200);
    expect((await query(base, `/api/v1/datacenter/queryDataList?uuid=${main}`)).status).toBe(404);
    expect((await call(base, `/api/v1/schema/del?uuid=${main}`, { method: 'DELETE' })).status).toBe(404);
  });
});
