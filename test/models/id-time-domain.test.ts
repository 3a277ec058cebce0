/**
 * Contract 20 against the real service: one domain for ids and create_at at restore, import and the
 * store's own writes; work over a model proportional to its records, never its id span; a backup
 * written across a clock step back restores; import and restore serialise with management changes.
 */
import http from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { admin, publishedModel, raw } from '../support/client.js';
import { ADMIN, SECRET, startService, type TestService } from '../support/service.js';
import { ID_MAX } from '../../src/store/index.js';
import { isoSeconds, spacedSeconds } from '../../src/http/core/format.js';

// Each test starts a service and restores several files: a busy machine may take far longer than the default.
vi.setConfig({ testTimeout: 120_000 });

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

async function service(): Promise<TestService> {
  const s = await startService({ logLevel: 'info' });
  services.push(s);
  return s;
}

function post(s: TestService, path: string, body: string) {
  return raw(s.port, { method: 'POST', path, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/x-ndjson' }, body });
}

function get(s: TestService, path: string) {
  return raw(s.port, { path, headers: { Authorization: `Bearer ${ADMIN}` }, timeoutMs: 60_000 });
}

/** A model with one FLOAT `t`, and its backup header announcing `records`. */
async function modelAndHeader(s: TestService, records: number): Promise<{ uuid: string; header: string }> {
  const uuid = await publishedModel(s.port, 'dom', ['t']);
  const b = await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`);
  expect(b.status, b.text).toBe(200);
  const header = JSON.parse(b.text.split('\n')[0]);
  header.records = records;
  return { uuid, header: JSON.stringify(header) };
}

function lines(records: Array<[number, number]>): string {
  return records.map(([id, ts], i) => JSON.stringify({ id, create_at_ms: ts, t: i })).join('\n');
}

async function restore(s: TestService, header: string, records: Array<[number, number]>) {
  return post(s, '/api/v1/datacenter/restore?replace=true', `${header}\n${lines(records)}\n`);
}

const T0 = Date.UTC(2026, 10, 1);

describe('ids stay inside 1 .. 2^53 - 2^32', () => {
  it('restore refuses an id past the domain, naming the line', async () => {
    const s = await service();
    const { header } = await modelAndHeader(s, 1);
    for (const id of [ID_MAX + 1, 9007199254740990, 0, -1, 1.5]) {
      const r = await restore(s, header, [[id, T0]]);
      expect(r.status, `id ${id}`).toBe(400);
      expect(r.body.msg).toMatch(/^line 2: id must be an integer from 1 to 9007194959773696/);
    }
  });

  it('a model at the end of the id space refuses new records with 503 instead of handing out an id it cannot store', async () => {
    const s = await service();
    const { uuid, header } = await modelAndHeader(s, 1);
    expect((await restore(s, header, [[ID_MAX - 2, T0]])).status).toBe(200);
    const log = s.registry.log(uuid);
    expect(log.save({ t: 1 })).toBe(ID_MAX - 1);
    expect(log.save({ t: 2 })).toBe(ID_MAX);
    expect(() => log.save({ t: 3 })).toThrow(expect.objectContaining({ status: 503, code: 'ERR_ID_SPACE_EXHAUSTED' }));
    expect(log.updateLast({ t: 4 })).toBe(ID_MAX);
    const page = await raw(s.port, { path: `/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${SECRET}&current=1&size=10&order=asc` });
    expect(page.status).toBe(200);
    expect(page.body.data.total).toBe(3);
    expect(page.body.data.records.map((r: { id: number; t: number }) => [r.id, r.t])).toEqual([
      [ID_MAX - 2, 0],
      [ID_MAX - 1, 1],
      [ID_MAX, 4],
    ]);
  });
});

describe('work follows the records, not the id span', () => {
  it('a restored gap of 2^53 ids: total, pages, export, backup and restore of its backup answer at once, /healthz meanwhile', async () => {
    const s = await service();
    const { uuid, header } = await modelAndHeader(s, 4);
    const records: Array<[number, number]> = [
      [1, T0],
      [2, T0 + 1],
      [ID_MAX - 1, T0 + 2],
      [ID_MAX, T0 + 3],
    ];
    expect((await restore(s, header, records)).status).toBe(200);
    expect(s.registry.log(uuid).stats().total).toBe(4);
    const [exp, health] = await Promise.all([get(s, `/api/v1/datacenter/exportData?uuid=${uuid}&format=jsonl`), raw(s.port, { path: '/healthz' })]);
    expect(health.status).toBe(200);
    expect(exp.status).toBe(200);
    expect(exp.text.trimEnd().split('\n').map((l) => JSON.parse(l).id)).toEqual([1, 2, ID_MAX - 1, ID_MAX]);
    for (const [order, current, ids] of [
      ['asc', 1, [1, 2, ID_MAX - 1]],
      ['asc', 2, [ID_MAX]],
      ['desc', 1, [ID_MAX, ID_MAX - 1, 2]],
      ['desc', 2, [1]],
    ] as const) {
      const page = await raw(s.port, { path: `/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${SECRET}&current=${current}&size=3&order=${order}` });
      expect(page.status).toBe(200);
      expect(page.body.data.total).toBe(4);
      expect(page.body.data.records.map((r: { id: number }) => r.id)).toEqual(ids);
    }
    const b = await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`);
    expect(b.status).toBe(200);
    expect(JSON.parse(b.text.split('\n')[0]).records).toBe(4);
    const again = await post(s, '/api/v1/datacenter/restore?replace=true', b.text);
    expect(again.status, again.text).toBe(200);
    expect((await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`)).text).toBe(b.text);
  });

  it('restore takes at most 128 gaps between ids (each starts a segment file), and says so at the line of the 129th', async () => {
    const s = await service();
    const { header } = await modelAndHeader(s, 129);
    const alternate = (n: number): Array<[number, number]> => Array.from({ length: n }, (_, k) => [1 + 2 * k, T0 + k]);
    const ok = await restore(s, JSON.stringify({ ...JSON.parse(header), records: 129 }), alternate(129));
    expect(ok.status, ok.text).toBe(200);
    const refused = await restore(s, JSON.stringify({ ...JSON.parse(header), records: 130 }), alternate(130));
    expect(refused.status).toBe(400);
    expect(refused.body.msg).toMatch(/^line 131: id 259 leaves gap number 129 after id 257; a backup may leave at most 128 gaps/);
  });

  it('a new record after the gap takes the next id, and live replay and retention count records, not ids', async () => {
    const s = await service();
    const { uuid, header } = await modelAndHeader(s, 2);
    expect((await restore(s, header, [[1, T0], [3e15, T0 + 1]])).status).toBe(200);
    const log = s.registry.log(uuid);
    expect(log.save({ t: 9 })).toBe(3e15 + 1);
    const seen: number[] = [];
    for await (const r of log.iterate({ fromId: 2 })) seen.push(r.id as number);
    expect(seen).toEqual([3e15, 3e15 + 1]);
    const put = await admin(s.port, 'PUT', `/api/v1/schema/retention?uuid=${uuid}`, { maxRecords: 10 });
    expect(put.status, put.text).toBe(200);
    await log.enforceRetention();
    expect(log.stats().total).toBe(3);
  });
});

describe('create_at stays inside 1970 .. 9999, and reads never fail on it', () => {
  it('restore refuses a create_at outside the domain, naming the line', async () => {
    const s = await service();
    const { header } = await modelAndHeader(s, 1);
    for (const ts of [1e300, 9e15, 0.5, -1, 253402300800000]) {
      const r = await restore(s, header, [[1, ts]]);
      expect(r.status, `create_at_ms ${ts}`).toBe(400);
      expect(r.body.msg).toMatch(/^line 2: create_at_ms must be whole milliseconds from 1970-01-01T00:00:00.000Z/);
    }
    for (const ts of [0, 253402300799999]) expect((await restore(s, header, [[1, ts]])).status, `create_at_ms ${ts}`).toBe(200);
  });

  it('import refuses a create_at outside the domain, naming the line', async () => {
    const s = await service();
    const uuid = await publishedModel(s.port, 'imp', ['t']);
    for (const ts of ['1e300', '9e15', '0.5', '-1']) {
      const r = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, `{"create_at":${ts},"t":1}\n`);
      expect(r.status, ts).toBe(400);
      expect(r.body.msg).toMatch(/^line 1: create_at/);
    }
  });

  it('a stored create_at past what Date prints is shown as its number, not a 500', () => {
    expect(isoSeconds(9e15)).toBe('9000000000000000');
    expect(spacedSeconds(1e300)).toBe('1e+300');
    expect(isoSeconds(0)).toBe('1970-01-01T00:00:00Z');
  });
});

describe('a clock step back', () => {
  it("the model's own backup restores, and import after the newest record works", async () => {
    const s = await service();
    const { uuid, header } = await modelAndHeader(s, 5);
    const ahead = Date.UTC(2027, 5, 1);
    const stepped: Array<[number, number]> = [
      [1, ahead],
      [2, ahead + 1000],
      [3, ahead + 2000],
      [4, T0],
      [5, T0 + 1000],
    ];
    expect((await restore(s, header, stepped)).status).toBe(200);
    const b = await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`);
    const again = await post(s, '/api/v1/datacenter/restore?replace=true', b.text);
    expect(again.status, again.text).toBe(200);
    expect((await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`)).text).toBe(b.text);
    const ok = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, `{"create_at":${T0 + 2000},"t":7}\n`);
    expect(ok.status, ok.text).toBe(200);
    const before = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, `{"create_at":${T0},"t":7}\n`);
    expect(before.status).toBe(400);
    expect(before.body.msg).toMatch(/^line 1: create_at .* is before .*the model's newest record.*Import only the rows from .* on; older rows go only into a model whose records are all older/);
  });
});

describe('restore and import carry and keep the model as it is', () => {
  it("restore with replace=true keeps the backup's own retention", async () => {
    const s = await service();
    const uuid = await publishedModel(s.port, 'ret', ['t']);
    expect((await admin(s.port, 'PUT', `/api/v1/schema/retention?uuid=${uuid}`, { maxRecords: 77, maxBytes: null, maxAgeHours: 5 })).status).toBe(200);
    const b = await get(s, `/api/v1/datacenter/backup?uuid=${uuid}`);
    expect((await admin(s.port, 'PUT', `/api/v1/schema/retention?uuid=${uuid}`, {})).status).toBe(200);
    expect((await post(s, '/api/v1/datacenter/restore?replace=true', b.text)).status).toBe(200);
    expect(s.registry.get(uuid).retention).toEqual({ maxRecords: 77, maxBytes: null, maxAgeHours: 5 });
  });

  /** An import whose body is held open until `finish` is called. */
  function slowImport(s: TestService, uuid: string): { finish: () => void; answer: Promise<{ status: number; body: any }> } {
    const req = http.request({
      host: '127.0.0.1',
      port: s.port,
      method: 'POST',
      path: `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`,
      headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/x-ndjson', 'Transfer-Encoding': 'chunked' },
    });
    const answer = new Promise<{ status: number; body: any }>((resolve, reject) => {
      req.on('response', (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('error', reject);
    });
    // A day ahead: the records importRunning saves before the import holds writes must not be newer.
    const later = Date.now() + 86_400_000;
    req.write(`{"create_at":${later},"t":1}\n`);
    return { finish: () => req.end(`{"create_at":${later + 1},"t":2}\n`), answer };
  }

  async function importRunning(s: TestService, uuid: string): Promise<void> {
    for (let tries = 0; tries < 2000; tries++) {
      try {
        s.registry.log(uuid).save({ t: 0 });
      } catch (err) {
        if (String((err as Error).message).includes('import is running')) return;
        throw err;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    throw new Error('the import never held the model\'s writes');
  }

  it('a model deleted during an import stays deleted: the import answers 409', async () => {
    const s = await service();
    const uuid = await publishedModel(s.port, 'gone', ['t']);
    const imp = slowImport(s, uuid);
    await importRunning(s, uuid);
    expect((await admin(s.port, 'DELETE', `/api/v1/schema/del?uuid=${uuid}`)).status).toBe(200);
    imp.finish();
    const a = await imp.answer;
    expect(a.status).toBe(409);
    expect(a.body.msg).toMatch(/was deleted while this restore or import ran/);
    expect(s.registry.list().some((m) => m.uuid === uuid)).toBe(false);
  });

  it('a rename and a retention change during an import are kept: the import answers 409', async () => {
    const s = await service();
    const uuid = await publishedModel(s.port, 'kept', ['t']);
    const imp = slowImport(s, uuid);
    await importRunning(s, uuid);
    expect((await admin(s.port, 'PUT', '/api/v1/schema/update', { uuid, name: 'renamed' })).status).toBe(200);
    expect((await admin(s.port, 'PUT', `/api/v1/schema/retention?uuid=${uuid}`, { maxRecords: 5 })).status).toBe(200);
    imp.finish();
    expect((await imp.answer).status).toBe(409);
    const model = s.registry.get(uuid);
    expect(model.name).toBe('renamed');
    expect(model.retention?.maxRecords).toBe(5);
  });
});
