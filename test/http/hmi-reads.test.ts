/**
 * Contract sections 10 and 12 over the real server: time ranges on queryDataList, queryAggregate, and
 * queryLastDataBatch, every rule and its 400/401/404/409.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkRecord } from '../../src/models/record-check.js';
import { call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let server: TestService;
let base: string;
/** Published; 120 records, one every 30 s from T0 (T0 .. T0 + 59.5 min). */
let main: string;
/** Published, no records. */
let empty: string;
/** Draft. */
let draft: string;

const T0 = Date.parse('2026-11-22T10:00:00Z');
const STEP_MS = 30_000;

async function createModel(name: string, attrs: Array<Record<string, unknown>>, publish = true): Promise<string> {
  const r = await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: 'd' } });
  const uuid = r.body.data.uuid as string;
  for (const a of attrs) {
    const p = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: uuid, ...a } });
    expect(p.status, p.text).toBe(200);
  }
  if (publish) expect((await call(base, `/api/v1/schema/publish?uuid=${uuid}`, { method: 'POST' })).status).toBe(200);
  return uuid;
}

/** Saves through checkRecord with the wall clock set to `atMs`. */
function saveAt(uuid: string, atMs: number, input: Record<string, unknown>): void {
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(atMs);
  try {
    const checked = checkRecord(server.registry.get(uuid), input, 'save');
    if (!checked.ok) throw new Error(checked.error);
    server.registry.log(uuid).save(checked.record);
  } finally {
    vi.useRealTimers();
  }
}

const value = (i: number): Record<string, unknown> => ({ temp: i + 0.5, count: i, status: `s${i}`, on: i % 2 === 0 });

beforeAll(async () => {
  server = await startService({ logLevel: 'silent' });
  base = server.base;
  const attrs = [
    { name: 'temp', type: 'FLOAT' },
    { name: 'count', type: 'INTEGER' },
    { name: 'status', type: 'STRING' },
    { name: 'on', type: 'BOOL' },
  ];
  main = await createModel('main', attrs);
  empty = await createModel('empty', attrs);
  draft = await createModel('draft', attrs, false);
  for (let i = 0; i < 120; i++) saveAt(main, T0 + i * STEP_MS, value(i));
});

afterAll(() => server.close());

describe('queryDataList from/to (contract 10)', () => {
  const list = (q: string) => query(base, `/api/v1/datacenter/queryDataList?uuid=${main}&${q}`);

  it('takes ISO 8601 (Z, ms, offset) and epoch ms; from inclusive, to exclusive; total counts the range', async () => {
    for (const [from, to] of [
      ['2026-11-22T10:05:00Z', '2026-11-22T10:10:00Z'],
      ['2026-11-22T10:05:00.000Z', '2026-11-22T10:10:00.000Z'],
      ['2026-11-22T18:05:00%2B08:00', '2026-11-22T18:10:00%2B08:00'],
      [String(T0 + 300_000), String(T0 + 600_000)],
    ]) {
      const r = await list(`from=${from}&to=${to}&order=asc&select=id,create_at`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data.total).toBe(10);
      expect(r.body.data.records[0]).toEqual({ id: 11, create_at: '2026-11-22T10:05:00Z' });
      expect(r.body.data.records[9]).toEqual({ id: 20, create_at: '2026-11-22T10:09:30Z' });
    }
  });

  it('either bound alone; paging inside the range; a range with no record', async () => {
    let r = await list(`from=${T0 + 3_540_000}&select=id`);
    expect(r.body.data.total).toBe(2);
    expect(r.body.data.records).toEqual([{ id: 120 }, { id: 119 }]);
    r = await list(`to=${T0 + 60_001}&select=id&order=asc`);
    expect(r.body.data.records).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);
    r = await list(`from=${T0 + 300_000}&to=${T0 + 900_000}&select=id&size=7&current=3`);
    expect(r.body.data.total).toBe(20);
    expect(r.body.data.records.map((x: { id: number }) => x.id)).toEqual([16, 15, 14, 13, 12, 11]);
    r = await list(`from=2027-01-01T00:00:00Z`);
    expect(r.body.data).toMatchObject({ total: 0, records: [] });
    r = await query(base, `/api/v1/datacenter/queryDataList?uuid=${empty}&from=${T0}`);
    expect(r.body.data).toMatchObject({ total: 0, records: [] });
  });

  it('a bad value or from >= to is a 400 naming the parameter', async () => {
    for (const [q, name] of [
      ['from=yesterday', 'from'],
      ['to=2026-11-22', 'to'],
      ['from=2026-02-30T00:00:00Z', 'from'],
      ['from=2026-11-22T10:00:00', 'from'],
      ['to=-5', 'to'],
      ['to=1.5', 'to'],
      [`from=${T0}&to=${T0}`, 'from'],
      [`from=${T0 + 1}&to=${T0}`, 'from'],
    ]) {
      const r = await list(q);
      expect(r.status, q).toBe(400);
      expect(r.body).toMatchObject({ code: 400, data: null });
      expect(r.body.msg, q).toContain(`'${name}'`);
    }
  });

  it('auth and model state as without a range', async () => {
    expect((await call(base, `/api/v1/datacenter/queryDataList?uuid=${main}&from=${T0}`, { token: null })).status).toBe(401);
    expect((await query(base, `/api/v1/datacenter/queryDataList?uuid=SCHEMA22222222&from=${T0}`)).status).toBe(404);
    expect((await query(base, `/api/v1/datacenter/queryDataList?uuid=${draft}&from=${T0}`)).status).toBe(409);
  });
});
