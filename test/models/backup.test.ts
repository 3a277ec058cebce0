/**
 * Contract section 15 over HTTP against the real service: backup, restore (new and replace), import,
 * all or nothing on bad input with the line number, snapshots taken while writes continue.
 */
import { readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { admin, raw } from '../support/client.js';
import { ADMIN, startService, type TestService } from '../support/service.js';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

async function service(ini?: Record<string, string[]>): Promise<TestService> {
  const s = await startService({ logLevel: 'info', ...(ini ? { ini } : {}) });
  services.push(s);
  return s;
}

/** A published model with one attribute of each type. */
async function sensorModel(s: TestService, name = 'sensor'): Promise<string> {
  const created = await admin(s.port, 'POST', '/api/v1/schema/create', { name, description: 'backed up' });
  const uuid = created.body.data.uuid as string;
  const attrs = [
    { name: 'temp', type: 'FLOAT', rule: { defaultValue: 1.5, min: 0, max: 0, round: 0 } },
    { name: 'count', type: 'INTEGER' },
    { name: 'on', type: 'BOOL' },
    { name: 'label', type: 'STRING' },
    { name: 'pos', type: 'GEO' },
  ];
  for (const a of attrs) expect((await admin(s.port, 'POST', '/api/v1/schema/properties/create', { schemaId: uuid, label: a.name, ...a })).status).toBe(200);
  expect((await admin(s.port, 'POST', `/api/v1/schema/publish?uuid=${uuid}`)).status).toBe(200);
  return uuid;
}

function writeRecords(s: TestService, uuid: string, n: number, from = 0): void {
  const log = s.registry.log(uuid);
  for (let i = from; i < from + n; i++) {
    log.save(i % 7 === 0 ? { temp: i / 4 } : { temp: i / 4, count: i, on: i % 2 === 0, label: `r,"${i}"\n`, pos: '1.5,-2' });
  }
}

async function backup(s: TestService, uuid: string): Promise<string> {
  const r = await raw(s.port, { path: `/api/v1/datacenter/backup?uuid=${uuid}`, headers: { Authorization: `Bearer ${ADMIN}` } });
  expect(r.status, r.text).toBe(200);
  expect(r.headers['content-type']).toContain('application/x-ndjson');
  expect(r.headers['content-disposition']).toMatch(/attachment; filename="sensor-\d{8}-\d{6}\.backup\.jsonl"/);
  return r.text;
}

function post(s: TestService, path: string, body: string | Buffer) {
  return raw(s.port, { method: 'POST', path, headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/x-ndjson' }, body });
}

async function allRecords(s: TestService, uuid: string): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const r of s.registry.log(uuid).iterate()) out.push(r);
  return out;
}

function storeLeftovers(s: TestService): string[] {
  return readdirSync(join(s.config.main.dataDir, 'store')).filter((n) => /^\.(staging|ready|trash)-/.test(n));
}

describe('backup', () => {
  it('is a header with the model definition and the record count, then one line per record', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    writeRecords(s, uuid, 30);
    const lines = (await backup(s, uuid)).trimEnd().split('\n');
    const header = JSON.parse(lines[0]);
    expect(header.format).toBe('edge-datacenter-backup/1');
    expect(header.records).toBe(30);
    expect(header.model).toMatchObject({ uuid, name: 'sensor', description: 'backed up', published: true });
    expect(header.model.attributes.map((a: { name: string; type: string }) => `${a.name}:${a.type}`)).toEqual([
      'temp:FLOAT',
      'count:INTEGER',
      'on:BOOL',
      'label:STRING',
      'pos:GEO',
    ]);
    expect(lines).toHaveLength(31);
    const first = JSON.parse(lines[1]);
    expect(Object.keys(first)).toEqual(['id', 'create_at_ms', 'temp', 'count', 'on', 'label', 'pos']);
    expect(first).toMatchObject({ id: 1, temp: 0, count: null, on: null });
    expect(JSON.parse(lines[2])).toMatchObject({ id: 2, temp: 0.25, count: 1, on: false, label: 'r,"1"\n', pos: '1.5,-2' });
  });

  it('is a snapshot while writes continue (500 records a millisecond): the records up to the newest id at its start, and it restores', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    writeRecords(s, uuid, 50_000);
    let writing = true;
    let written = 50_000;
    const writer = (async () => {
      while (writing) {
        writeRecords(s, uuid, 500, written);
        written += 500;
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    const text = await backup(s, uuid);
    writing = false;
    await writer;
    const lines = text.trimEnd().split('\n');
    const header = JSON.parse(lines[0]);
    expect(written).toBeGreaterThan(header.records);
    expect(lines.length - 1).toBe(header.records);
    lines.slice(1).forEach((line, i) => expect(JSON.parse(line).id).toBe(i + 1));
    // That backup restores on another gateway: every record of the snapshot, the same values.
    const b = await service();
    const r = await post(b, '/api/v1/datacenter/restore', text);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ uuid, records: header.records });
    expect(await allRecords(b, uuid)).toEqual((await allRecords(s, uuid)).slice(0, header.records));
  });

  it('needs the admin token and names a missing or unknown model', async () => {
    const s = await service();
    expect((await raw(s.port, { path: '/api/v1/datacenter/backup?uuid=SCHEMA22222222' })).status).toBe(401);
    const missing = await admin(s.port, 'GET', '/api/v1/datacenter/backup');
    expect(missing.status).toBe(400);
    expect(missing.body.msg).toContain('uuid');
    expect((await admin(s.port, 'GET', '/api/v1/datacenter/backup?uuid=SCHEMA22222222')).status).toBe(404);
  });
});

describe('restore', () => {
  it('recreates the model with the same uuid, attributes, ids and create_at, published', async () => {
    const a = await service();
    const uuid = await sensorModel(a);
    writeRecords(a, uuid, 2_000);
    const file = await backup(a, uuid);
    const b = await service();
    const r = await post(b, '/api/v1/datacenter/restore', file);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({ uuid, name: 'sensor', records: 2_000, nextId: 2_001 });
    expect(b.registry.get(uuid)).toEqual(a.registry.get(uuid));
    expect(await allRecords(b, uuid)).toEqual(await allRecords(a, uuid));
    expect(b.registry.log(uuid).save({ temp: 1 })).toBe(2_001);
    expect(storeLeftovers(b)).toEqual([]);
    expect(b.logs.some((l) => l.audit === 'data.restore' && l.uuid === uuid)).toBe(true);
  });

  it('keeps ids that do not start at 1 and gaps between them', async () => {
    const a = await service();
    const uuid = await sensorModel(a);
    writeRecords(a, uuid, 1);
    const header = (await backup(a, uuid)).split('\n')[0].replace('"records":1', '"records":5');
    const t = 1_700_000_000_000;
    const ids = [1001, 1002, 1003, 1010, 1011];
    const body = [header, ...ids.map((id, i) => JSON.stringify({ id, create_at_ms: t + i, temp: id }))].join('\n');
    const b = await service();
    expect((await post(b, '/api/v1/datacenter/restore', body)).status).toBe(200);
    const got = (await allRecords(b, uuid)) as Array<{ id: number; create_at: number; temp: number }>;
    expect(got.map((r) => [r.id, r.create_at, r.temp])).toEqual(ids.map((id, i) => [id, t + i, id]));
    expect(b.registry.log(uuid).save({ temp: 1 })).toBe(1012);
  });

  it('refuses an existing uuid with 409 unless replace=true, which replaces the records', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    writeRecords(s, uuid, 100);
    const file = await backup(s, uuid);
    const before = await allRecords(s, uuid);
    writeRecords(s, uuid, 50, 100);
    const refused = await post(s, '/api/v1/datacenter/restore', file);
    expect(refused.status).toBe(409);
    expect(refused.body.msg).toContain('replace=true');
    expect(s.registry.log(uuid).stats().total).toBe(150);
    const replaced = await post(s, '/api/v1/datacenter/restore?replace=true', file);
    expect(replaced.status, replaced.text).toBe(200);
    expect(await allRecords(s, uuid)).toEqual(before);
    expect(storeLeftovers(s)).toEqual([]);
  });

  it('changes nothing on a bad line and names its number', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    writeRecords(s, uuid, 20);
    const lines = (await backup(s, uuid)).trimEnd().split('\n');
    const cases: Array<[string, string[], RegExp]> = [
      ['wrong type', lines.map((l, i) => (i === 12 ? l.replace(/"count":\d+/, '"count":"x"') : l)), /^line 13: attribute 'count' expects INTEGER/],
      ['unknown key', lines.map((l, i) => (i === 5 ? l.replace('{"id"', '{"bogus":1,"id"') : l)), /^line 6: unknown attribute 'bogus'/],
      ['ids out of order', lines.map((l, i) => (i === 7 ? lines[3] : l)), /^line 8: id must be above the previous line's 6, got 3$/],
      ['not JSON', lines.map((l, i) => (i === 9 ? '{"id":' : l)), /^line 10: not valid JSON/],
      ['cut short', lines.slice(0, 15), /ends at line 15 after 14 records, but its header announces 20/],
      ['not a backup', ['{"format":"csv"}'], /^line 1: format must be "edge-datacenter-backup\/1"/],
    ];
    for (const [what, body, message] of cases) {
      const r = await post(s, '/api/v1/datacenter/restore?replace=true', body.join('\n'));
      expect(r.status, what).toBe(400);
      expect(r.body.msg, what).toMatch(message);
      expect(s.registry.log(uuid).stats().total, what).toBe(20);
    }
    const fresh = await service();
    const r = await post(fresh, '/api/v1/datacenter/restore', cases[0][1].join('\n'));
    expect(r.status).toBe(400);
    expect(fresh.registry.list()).toEqual([]);
    expect(storeLeftovers(fresh)).toEqual([]);
  });

  it('reads a large upload in constant memory and restores at scale', async () => {
    const a = await service();
    const uuid = await sensorModel(a);
    writeRecords(a, uuid, 200_000);
    const file = await backup(a, uuid);
    const b = await service();
    const r = await post(b, '/api/v1/datacenter/restore', file);
    expect(r.status, r.text).toBe(200);
    expect(b.registry.log(uuid).stats()).toMatchObject({ total: 200_000, firstId: 1, lastId: 200_000 });
    expect(b.registry.log(uuid).latest()).toEqual(a.registry.log(uuid).latest());
  });
});

describe('importData', () => {
  async function exported(s: TestService, uuid: string, format: string): Promise<string> {
    const r = await raw(s.port, { path: `/api/v1/datacenter/exportData?uuid=${uuid}&format=${format}&formulas=raw`, headers: { Authorization: `Bearer ${ADMIN}` } });
    expect(r.status).toBe(200);
    return r.text;
  }

  it.each(['csv', 'jsonl'])('appends the rows of a %s export with new ids, keeping create_at', async (format) => {
    const s = await service();
    const source = await sensorModel(s);
    writeRecords(s, source, 40);
    const file = await exported(s, source, format);
    const target = await sensorModel(s, 'target');
    const r = await post(s, `/api/v1/datacenter/importData?uuid=${target}&format=${format}`, file);
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({ uuid: target, name: 'target', imported: 40, firstId: 1, lastId: 40 });
    // Exports carry create_at to the second; CSV cannot tell an empty STRING from one never received.
    const expected = (await allRecords(s, source)).map((rec) => {
      const { create_at, ...rest } = rec as Record<string, unknown>;
      const label = format === 'csv' ? (rest.label ?? '') : rest.label;
      return { ...rest, label, create_at: Math.floor((create_at as number) / 1000) * 1000 };
    });
    expect(await allRecords(s, target)).toEqual(expected);
    const again = await post(s, `/api/v1/datacenter/importData?uuid=${target}&format=${format}`, file);
    expect(again.body.data).toMatchObject({ imported: 40, firstId: 41, lastId: 80 });
    expect(s.logs.some((l) => l.audit === 'data.import' && l.uuid === target)).toBe(true);
  });

  it('refuses rows that go back in time or break a rule, naming the line; nothing is added', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    writeRecords(s, uuid, 5);
    const old = 'id,create_at,temp\r\n1,2001-01-01T00:00:00Z,1\r\n';
    const back = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=csv`, old);
    expect(back.status).toBe(400);
    expect(back.body.msg).toMatch(/^line 2: create_at 2001-01-01T00:00:00.000Z is before .*must not go back in time/);
    const future = Date.now() + 60_000;
    const rows = [0, 1, 2].map((i) => JSON.stringify({ create_at: new Date(future + i * 1000).toISOString().slice(0, 19) + 'Z', temp: i, on: i === 2 ? 'yes' : true }));
    const bad = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, rows.join('\n'));
    expect(bad.status).toBe(400);
    expect(bad.body.msg).toBe("line 3: attribute 'on' expects BOOL, got string");
    const unknown = await post(s, `/api/v1/datacenter/importData?uuid=${uuid}&format=csv`, 'id,create_at,nope\r\n');
    expect(unknown.status).toBe(400);
    expect(unknown.body.msg).toContain("column 3 'nope'");
    expect(s.registry.log(uuid).stats().total).toBe(5);
    expect(storeLeftovers(s)).toEqual([]);
  });

  it('refuses writes to the model with 503 while it runs, and takes them again after', async () => {
    const s = await service();
    const uuid = await sensorModel(s);
    const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request(
        { host: '127.0.0.1', port: s.port, method: 'POST', path: `/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, headers: { Authorization: `Bearer ${ADMIN}` } },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on('error', reject);
      req.write(`${JSON.stringify({ create_at: '2030-01-01T00:00:00Z', temp: 1 })}\n`);
      setTimeout(() => {
        try {
          s.registry.log(uuid).save({ temp: 2 });
          req.end('"wrote while importing"');
        } catch (err) {
          expect((err as Error).message).toContain('an import is running');
          expect((err as { status: number }).status).toBe(503);
          req.end(`${JSON.stringify({ create_at: '2030-01-01T00:00:01Z', temp: 3 })}\n`);
        }
      }, 300);
    });
    const r = await answer;
    expect(r.status, r.text).toBe(200);
    expect(s.registry.log(uuid).save({ temp: 4 })).toBe(3);
  });
});
