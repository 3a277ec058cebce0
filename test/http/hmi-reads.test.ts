/**
 * Contract sections 10 and 12 over the real server: time ranges on queryDataList, queryAggregate, and
 * queryLastDataBatch, every rule and its 400/401/404/409.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { checkRecord } from '../../src/models/record-check.js';
import { BATCH_ANSWERS_BYTES_MAX, keptBatchStats } from '../../src/http/routes/batch-answers.js';
import { call, query } from '../support/client.js';
import { SECRET, startService, type TestService } from '../support/service.js';

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

const value = (i: number): Record<string, unknown> => ({ temp: i + 0.5, n: i, status: `s${i}`, on: i % 2 === 0 });

beforeAll(async () => {
  server = await startService({ logLevel: 'silent' });
  base = server.base;
  const attrs = [
    { name: 'temp', type: 'FLOAT' },
    { name: 'n', type: 'INTEGER' },
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

describe('queryAggregate (contract 10)', () => {
  const agg = (q: string, uuid = main) => query(base, `/api/v1/datacenter/queryAggregate?uuid=${uuid}&${q}`);

  it('buckets of the interval aligned to the epoch, every function, in time order', async () => {
    const r = await agg(`from=2026-11-22T10:00:00Z&to=2026-11-22T11:00:00Z&interval=10m&fn=min,max,avg,sum,count,first,last&select=temp,n`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.interval_ms).toBe(600_000);
    expect(r.body.data.buckets).toHaveLength(6);
    expect(r.body.data.buckets[0]).toEqual({
      start: '2026-11-22T10:00:00Z',
      count: 20,
      temp: { min: 0.5, max: 19.5, avg: 10, sum: 200, count: 20, first: 0.5, last: 19.5 },
      n: { min: 0, max: 19, avg: 9.5, sum: 190, count: 20, first: 0, last: 19 },
    });
    expect(r.body.data.buckets[5]).toMatchObject({ start: '2026-11-22T10:50:00Z', n: { min: 100, max: 119, sum: 2190, first: 100, last: 119 } });
  });

  it('defaults: fn avg, every INTEGER and FLOAT attribute, to = now', async () => {
    const r = await agg(`from=${T0}&interval=1d`);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.buckets).toEqual([{ start: '2026-11-22T00:00:00Z', count: 120, temp: { avg: 60 }, n: { avg: 59.5 } }]);
  });

  it('interval forms; empty buckets left out; a partial first bucket counts only records from `from`', async () => {
    for (const [interval, ms] of [
      ['500ms', 500],
      ['10s', 10_000],
      ['1m', 60_000],
      ['1h', 3_600_000],
      ['1d', 86_400_000],
      ['600000', 600_000],
    ] as const) {
      const r = await agg(`from=${T0}&to=${T0 + 3_600_000}&interval=${interval}&fn=count&select=n`);
      expect(r.status, `${interval} ${r.text}`).toBe(200);
      expect(r.body.data.interval_ms, interval).toBe(ms);
      expect(r.body.data.buckets.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(120);
    }
    const sparse = await agg(`from=${T0}&to=${T0 + 3_600_000}&interval=10s&fn=count&select=n`);
    expect(sparse.body.data.buckets).toHaveLength(120);
    const partial = await agg(`from=${T0 + 45_000}&to=${T0 + 3_600_000}&interval=1h&fn=first,count&select=n`);
    expect(partial.body.data.buckets).toEqual([{ start: '2026-11-22T10:00:00Z', count: 118, n: { first: 2, count: 118 } }]);
    const odd = await agg(`from=${T0}&to=${T0 + 60_000}&interval=7&fn=count&select=n`);
    expect(odd.body.data.buckets[1].start).toMatch(/^2026-11-22T10:00:29\.\d{3}Z$/);
  });

  it('count/first/last on every type', async () => {
    const r = await agg(`from=${T0}&to=${T0 + 600_000}&interval=1h&fn=count,first,last&select=status,on`);
    expect(r.body.data.buckets).toEqual([{ start: '2026-11-22T10:00:00Z', count: 20, status: { count: 20, first: 's0', last: 's19' }, on: { count: 20, first: true, last: false } }]);
  });

  it('an empty model or window answers no buckets', async () => {
    expect((await agg(`from=${T0}&interval=1h`, empty)).body.data).toEqual({ interval_ms: 3_600_000, buckets: [] });
    expect((await agg(`from=2020-01-01T00:00:00Z&to=2020-01-02T00:00:00Z&interval=1h`)).body.data.buckets).toEqual([]);
  });

  it('every bad parameter is a 400 naming it', async () => {
    for (const [q, name] of [
      ['interval=1h', 'from'],
      [`from=${T0}&interval=1w`, 'interval'],
      [`from=${T0}&interval=0`, 'interval'],
      [`from=${T0}`, 'interval'],
      [`from=${T0}&to=${T0 + 3_600_000}&interval=1`, 'interval'],
      [`from=${T0}&to=${T0}&interval=1h`, 'from'],
      [`from=soon&interval=1h`, 'from'],
      [`from=${T0}&interval=1h&fn=median`, 'fn'],
      [`from=${T0}&interval=1h&fn=min&select=status`, 'fn'],
      [`from=${T0}&interval=1h&fn=avg&select=on`, 'fn'],
      [`from=${T0}&interval=1h&select=nope`, 'select'],
      [`from=${T0}&interval=1h&select=id`, 'select'],
    ]) {
      const r = await agg(q);
      expect(r.status, q).toBe(400);
      expect(r.body.msg, q).toContain(`'${name}'`);
    }
    expect((await agg(`from=${T0}&to=${T0 + 10_000_000}&interval=1000`)).status).toBe(200); // 10,000 buckets is allowed
  });

  it('at most AGGREGATE_CELLS_MAX buckets x attributes: a 400 naming interval and select', async () => {
    const wide = await createModel(
      'wide',
      Array.from({ length: 30 }, (_, i) => ({ name: `a${i}`, type: 'FLOAT' })),
    );
    saveAt(wide, T0, Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`a${i}`, i])));
    const tooMany = await agg(`from=${T0}&to=${T0 + 10_000_000}&interval=1000`, wide);
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.msg).toContain(`'interval'`);
    expect(tooMany.body.msg).toContain(`'select'`);
    expect(tooMany.body.msg).toContain('300000 cells');
    const fewer = await agg(`from=${T0}&to=${T0 + 10_000_000}&interval=1000&select=${Array.from({ length: 20 }, (_, i) => `a${i}`).join(',')}`, wide);
    expect(fewer.status, fewer.text).toBe(200);
    expect(fewer.body.data.buckets).toHaveLength(1);
    expect((await agg(`from=${T0}&to=${T0 + 10_000_000}&interval=2000`, wide)).status).toBe(200);
  });

  it('auth and model state as the query endpoints', async () => {
    expect((await call(base, `/api/v1/datacenter/queryAggregate?uuid=${main}&from=${T0}&interval=1h`, { token: null })).status).toBe(401);
    expect((await agg(`from=${T0}&interval=1h`, 'SCHEMA22222222')).status).toBe(404);
    expect((await agg(`from=${T0}&interval=1h`, draft)).status).toBe(409);
  });
});

describe('queryLastDataBatch (contract 12)', () => {
  const batch = (q: string) => query(base, `/api/v1/datacenter/queryLastDataBatch?${q}`);

  it('the latest record of each model in the latest-record format, {} for none; comma list or repeated', async () => {
    for (const q of [`uuid=${main},${empty}`, `uuid=${main}&uuid=${empty}`, `uuid=${main}, ${empty},${main}`]) {
      const r = await batch(`${q}&select=id,create_at,temp`);
      expect(r.status, r.text).toBe(200);
      expect(r.body.data).toEqual({ [main]: { id: 120, create_at: '2026-11-22 10:59:30', temp: 119.5 }, [empty]: {} });
    }
  });

  it('a new record shows in the next call (the kept answer is dropped)', async () => {
    const q = `uuid=${empty},${main}&select=id,n`;
    expect((await batch(q)).body.data[empty]).toEqual({});
    saveAt(empty, T0, value(7));
    expect((await batch(q)).body.data).toEqual({ [empty]: { id: 1, n: 7 }, [main]: { id: 120, n: 119 } });
    await server.registry.log(empty).clear();
    expect((await batch(q)).body.data[empty]).toEqual({});
  });

  it('the answer kept for a query follows its models: an attribute added, a model deleted', async () => {
    const tile = await createModel('tile', [{ name: 'temp', type: 'FLOAT' }]);
    saveAt(tile, T0, { temp: 1.5 });
    const q = `uuid=${tile},${main}&select=id,create_at,temp`;
    expect((await batch(q)).body.data[tile]).toEqual({ id: 1, create_at: '2026-11-22 10:00:00', temp: 1.5 });
    expect((await batch(q)).body.data[tile]).toEqual({ id: 1, create_at: '2026-11-22 10:00:00', temp: 1.5 });
    const all = `uuid=${tile}`;
    expect((await batch(all)).body.data[tile]).toEqual({ id: 1, create_at: '2026-11-22 10:00:00', temp: 1.5 });
    const added = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: tile, name: 'on', type: 'BOOL' } });
    expect(added.status, added.text).toBe(200);
    expect((await batch(all)).body.data[tile]).toEqual({ id: 1, create_at: '2026-11-22 10:00:00', temp: 1.5, on: false });
    const deleted = await call(base, `/api/v1/schema/del?uuid=${tile}`, { method: 'DELETE' });
    expect(deleted.status, deleted.text).toBe(200);
    const r = await batch(q);
    expect(r.status).toBe(404);
    expect(r.body.msg).toContain(tile);
  });

  it('keeps answers within a bound of bytes however many different queries ask for large records', async () => {
    const big = await createModel('big', [{ name: 'note', type: 'STRING' }]);
    saveAt(big, T0, { note: 'x'.repeat(200_000) });
    for (let i = 1; i <= 40; i++) {
      // 40 different query strings, the same models: each answer is a body of about 200 KB.
      const r = await batch(`uuid=${big}${`&uuid=${main}`.repeat(i)}`);
      expect(r.status).toBe(200);
      expect((r.body.data[big] as { note: string }).note).toHaveLength(200_000);
    }
    const { bytes, answers } = keptBatchStats();
    expect(bytes).toBeLessThanOrEqual(BATCH_ANSWERS_BYTES_MAX);
    expect(answers).toBeGreaterThan(5);
    // An answer over a quarter of the bound is answered every time and never kept.
    const big2 = await createModel('big2', [{ name: 'note', type: 'STRING' }]);
    saveAt(big2, T0, { note: 'z'.repeat(BATCH_ANSWERS_BYTES_MAX / 4 - 200_000) });
    const before = keptBatchStats();
    for (let i = 0; i < 2; i++) {
      const r = await batch(`uuid=${big},${big2}`);
      expect((r.body.data[big2] as { note: string }).note).toHaveLength(BATCH_ANSWERS_BYTES_MAX / 4 - 200_000);
      expect(keptBatchStats()).toEqual(before);
    }
  });

  it('an unknown or unpublished model fails the whole call naming it; at most 100 models', async () => {
    let r = await batch(`uuid=${main},SCHEMA22222222`);
    expect(r.status).toBe(404);
    expect(r.body.msg).toContain('SCHEMA22222222');
    r = await batch(`uuid=${main},${draft}`);
    expect(r.status).toBe(409);
    expect(r.body.msg).toContain(draft);
    r = await batch(`uuid=${Array.from({ length: 101 }, (_, i) => `SCHEMAX${String(i).padStart(7, '0')}`).join(',')}`);
    expect(r.status, r.text).toBe(400);
    expect(r.body.msg).toContain(`'uuid'`);
    expect((await batch('uuid=')).status).toBe(400);
    expect((await batch(`uuid=${main}&select=nope`)).status).toBe(400);
    expect((await call(base, `/api/v1/datacenter/queryLastDataBatch?uuid=${main}`, { token: null })).status).toBe(401);
  });
});

describe('queryLastData answers kept between writes', () => {
  const last = (uuid: string, select = '') => query(base, `/api/v1/datacenter/queryLastData?uuid=${uuid}${select}`);

  it('follow every save, update-last, select, attribute change and clear, with the headers of any JSON answer', async () => {
    const uuid = await createModel('kept', [{ name: 'temp', type: 'FLOAT' }, { name: 'n', type: 'INTEGER' }]);
    expect((await last(uuid)).body).toEqual({ code: 200, msg: 'Success', data: {} });
    saveAt(uuid, T0, { temp: 1.5, n: 1 });
    expect((await last(uuid)).body.data).toEqual({ id: 1, create_at: '2026-11-22 10:00:00', temp: 1.5, n: 1 });
    expect((await last(uuid, '&select=n')).body.data).toEqual({ n: 1 });
    server.registry.log(uuid).updateLast({ n: 2 });
    expect((await last(uuid)).body.data).toMatchObject({ id: 1, n: 2 });
    expect((await last(uuid, '&select=n')).body.data).toEqual({ n: 2 });
    saveAt(uuid, T0 + 1000, { temp: 2.5, n: 3 });
    expect((await last(uuid)).body.data).toEqual({ id: 2, create_at: '2026-11-22 10:00:01', temp: 2.5, n: 3 });
    const added = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: uuid, name: 'on', type: 'BOOL' } });
    expect(added.status, added.text).toBe(200);
    expect((await last(uuid)).body.data).toEqual({ id: 2, create_at: '2026-11-22 10:00:01', temp: 2.5, n: 3, on: false });
    const r = await fetch(`${base}/api/v1/datacenter/queryLastData?uuid=${uuid}`, { headers: { 'X-Api-Secret': SECRET } });
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(JSON.parse(await r.text())).toMatchObject({ code: 200, data: { id: 2 } });
    await server.registry.log(uuid).clear();
    expect((await last(uuid)).body.data).toEqual({});
  });
});
