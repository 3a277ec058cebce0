/**
 * Contract 13 over HTTP: a published model gains, changes and loses attributes without losing data.
 * Records stored before an attribute existed read its default; name and type of a published attribute
 * cannot change (409); a removed attribute leaves answers, its values stay on disk and come back when an
 * attribute of the same name and type is added again; one of another type starts empty.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
let model: string;
const attr: Record<string, string> = {};

async function addAttribute(name: string, type: string, rule?: Record<string, unknown>): Promise<{ status: number; text: string; body: any }> {
  const r = await admin(svc.port, 'POST', '/api/v1/schema/properties/create', { schemaId: model, name, type, ...(rule ? { rule } : {}) });
  if (r.status === 200) attr[`${name}:${type}`] = r.body.data.uuid;
  return r;
}

async function records(): Promise<Array<Record<string, unknown>>> {
  const r = await query(svc.base, `/api/v1/datacenter/queryDataList?uuid=${model}&size=100&order=asc`);
  expect(r.status, r.text).toBe(200);
  return r.body.data.records;
}

const save = (record: Record<string, unknown>) => svc.registry.log(model).save(record);

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  model = (await admin(svc.port, 'POST', '/api/v1/schema/create', { name: 'line', description: '' })).body.data.uuid;
  expect((await addAttribute('temp', 'FLOAT')).status).toBe(200);
  expect((await addAttribute('note', 'STRING')).status).toBe(200);
  expect((await admin(svc.port, 'POST', `/api/v1/schema/publish?uuid=${model}`)).status).toBe(200);
  save({ temp: 1.5, note: 'a' });
  save({ temp: 2.5, note: 'b' });
}, 60_000);

afterAll(async () => svc?.close());

describe('changing a published model (contract 13)', () => {
  it('a new attribute: older records read its default, new ones its value', async () => {
    const r = await addAttribute('level', 'INTEGER', { defaultValue: 5 });
    expect(r.status, r.text).toBe(200);
    save({ temp: 3.5, note: 'c', level: 9 });
    expect((await records()).map((x) => x.level)).toEqual([5, 5, 9]);
    expect(Object.keys((await records())[0])).toEqual(['id', 'create_at', 'temp', 'note', 'level']);
  });

  it('label, unit and bounds may change; name and type of a published attribute may not (409)', async () => {
    const uuid = attr['temp:FLOAT'];
    const ok = await admin(svc.port, 'PUT', '/api/v1/schema/properties/update', { uuid, unit: '°C', label: 'Temperature' });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.data).toMatchObject({ unit: '°C', label: 'Temperature', name: 'temp', type: 'FLOAT' });
    for (const change of [{ name: 'temperature' }, { type: 'INTEGER' }]) {
      const refused = await admin(svc.port, 'PUT', '/api/v1/schema/properties/update', { uuid, ...change });
      expect(refused.status).toBe(409);
      expect(refused.body.msg).toContain('its name and type cannot change');
    }
  });

  it('a removed attribute leaves the answers; re-added with the same name and type its values come back', async () => {
    const del = await admin(svc.port, 'DELETE', `/api/v1/schema/properties/del?uuid=${attr['note:STRING']}`);
    expect(del.status, del.text).toBe(200);
    expect((await records())[0]).not.toHaveProperty('note');
    save({ temp: 4.5, level: 1 });
    expect((await addAttribute('note', 'STRING')).status).toBe(200);
    expect((await records()).map((x) => x.note)).toEqual(['a', 'b', 'c', '']);
  });

  it('re-added with another type it starts empty: old values never come back under another type', async () => {
    await admin(svc.port, 'DELETE', `/api/v1/schema/properties/del?uuid=${attr['note:STRING']}`);
    expect((await addAttribute('note', 'INTEGER', { defaultValue: 0 })).status).toBe(200);
    expect((await records()).map((x) => x.note)).toEqual([0, 0, 0, 0]);
    const latest = await query(svc.base, `/api/v1/datacenter/queryLastData?uuid=${model}`);
    expect(latest.body.data).toMatchObject({ id: 4, temp: 4.5, level: 1, note: 0 });
  });

  it('the last attribute of a published model cannot be removed (409)', async () => {
    const other = (await admin(svc.port, 'POST', '/api/v1/schema/create', { name: 'single', description: '' })).body.data.uuid;
    const a = await admin(svc.port, 'POST', '/api/v1/schema/properties/create', { schemaId: other, name: 'v', type: 'FLOAT' });
    await admin(svc.port, 'POST', `/api/v1/schema/publish?uuid=${other}`);
    const r = await call(svc.base, `/api/v1/schema/properties/del?uuid=${a.body.data.uuid}`, { method: 'DELETE' });
    expect(r.status).toBe(409);
    expect(r.body.msg).toContain('keeps at least one');
  });
});
