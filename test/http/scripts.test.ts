/**
 * Inputs, push and rules over HTTP, with the full service wiring (store, registry, script engine with
 * real worker threads, HTTP): RHILEX's sample script stores what is pushed.
 */
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, query } from '../support/client.js';
import { ADMIN, startService, type TestService } from '../support/service.js';

let service: TestService;
let base: string;
let model: string;
let inend: string;
let token: string;
let rule: string;

const ATTRS = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];

function payload(values: Record<string, number>): string {
  return JSON.stringify(Object.entries(values).map(([tag, value]) => ({ tag, value })));
}

async function push(body: string, init: { token?: string; type?: string } = {}) {
  return call(base, `/api/v1/inends/push?uuid=${inend}`, {
    method: 'POST',
    body,
    token: init.token ?? token,
    headers: { 'Content-Type': init.type ?? 'application/json' },
  });
}

beforeAll(async () => {
  service = await startService({ logLevel: 'silent' });
  base = service.base;

  model = (await call(base, '/api/v1/schema/create', { method: 'POST', body: { name: 'water' } })).body.data.uuid;
  for (const name of ATTRS) {
    const r = await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, name, type: 'FLOAT' } });
    expect(r.status, r.text).toBe(200);
  }
  expect((await call(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' })).status).toBe(200);

  const created = await call(base, '/api/v1/inends/create', { method: 'POST', body: { name: 'plc', type: 'HTTP', description: '' } });
  expect(created.status, created.text).toBe(200);
  inend = created.body.data.uuid;
  token = created.body.data.token;
  expect(inend).toMatch(/^INEND[2-9A-Z]{8}$/);
  expect(typeof token).toBe('string');

  const actions = (await readFile(new URL('../../fixtures/lua/rhilex-sample.lua', import.meta.url), 'utf8')).replaceAll('SCHEMAZ848ZRDG', model);
  const r = await call(base, '/api/v1/rules/create', {
    method: 'POST',
    body: { name: 'sample', description: '', fromSource: [inend], actions, success: '', failed: '' },
  });
  expect(r.status, r.text).toBe(200);
  rule = r.body.data.uuid;
  expect(rule).toMatch(/^RULE[2-9A-Z]{8}$/);
}, 60_000);

afterAll(async () => {
  await service?.close();
});

describe('inputs and rules over HTTP', () => {
  it('lists and details', async () => {
    const inends = await call(base, '/api/v1/inends/list');
    expect(inends.body.data.map((i: { uuid: string }) => i.uuid)).toEqual([inend]);
    expect(JSON.stringify(inends.body.data)).not.toContain(token);
    expect((await call(base, `/api/v1/inends/detail?uuid=${inend}`)).body.data).toMatchObject({ uuid: inend, type: 'HTTP' });
    expect((await call(base, '/api/v1/rules/list')).body.data).toHaveLength(1);
    expect((await call(base, `/api/v1/rules/detail?uuid=${rule}`)).body.data).toMatchObject({ uuid: rule, fromSource: [inend] });
    expect((await call(base, '/api/v1/rules/detail?uuid=RULE22222222')).status).toBe(404);
  });

  it('push stores a record before answering; the query endpoints see it', async () => {
    const r = await push(payload({ t1: 20, t2: 21, t3: 22, resistivity: 1.5, conductivity: 2, dissolved_oxygen: 3, ph_value: 7 }));
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ accepted: 1, failed: 0, errors: [] });
    const last = await query(base, `/api/v1/datacenter/queryLastData?uuid=${model}`);
    expect(last.body.data).toMatchObject({ id: 1, temp: 21, resistivity: 1.5, ph_value: 7 });
  });

  it('NDJSON: one payload per non-blank line', async () => {
    const body = [1, 2, 3].map((i) => payload({ t1: i, t2: i, t3: i, resistivity: i, conductivity: i, dissolved_oxygen: i, ph_value: i })).join('\r\n');
    const r = await push(`${body}\n\n`, { type: 'application/x-ndjson' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toMatchObject({ accepted: 3, failed: 0 });
    const list = await query(base, `/api/v1/datacenter/queryDataList?uuid=${model}&select=id,temp`);
    expect(list.body.data.records).toEqual([{ id: 4, temp: 3 }, { id: 3, temp: 2 }, { id: 2, temp: 1 }, { id: 1, temp: 21 }]);
  });

  it('a body that arrives in many pieces is read whole, with and without Content-Length', async () => {
    const lines = Array.from({ length: 40 }, (_, i) => payload({ t1: i, t2: i, t3: i, resistivity: i, conductivity: i, dissolved_oxygen: i, ph_value: i }));
    const body = Buffer.from(`${lines.join('\n')}\n`);
    const url = new URL(`${base}/api/v1/inends/push?uuid=${inend}`);
    // Content-Length: the pieces are copied into one buffer of that size as they come.
    const head = `POST ${url.pathname}${url.search} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/x-ndjson\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(url.port), url.hostname, async () => {
        socket.write(head);
        for (let at = 0; at < body.length; at += 97) {
          socket.write(body.subarray(at, at + 97));
          await new Promise((r) => setTimeout(r, 1));
        }
      });
      let text = '';
      socket.on('data', (d) => (text += d.toString()));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)).data).toMatchObject({ accepted: 40, failed: 0 });
    // No Content-Length (chunked): the buffer grows.
    const chunked = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-ndjson' },
      body: new ReadableStream({
        start(controller) {
          for (let at = 0; at < body.length; at += 61) controller.enqueue(body.subarray(at, at + 61));
          controller.close();
        },
      }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(200);
    expect(((await chunked.json()) as { data: unknown }).data).toMatchObject({ accepted: 40, failed: 0 });
  });

  it('push auth: missing or wrong token 401, admin token is not a push token; empty body 400', async () => {
    const none = await call(base, `/api/v1/inends/push?uuid=${inend}`, { method: 'POST', body: '[]', token: null });
    expect(none.status).toBe(401);
    expect((await push('[]', { token: 'wrong' })).status).toBe(401);
    expect((await push('[]', { token: ADMIN })).status).toBe(401);
    expect((await push('')).status).toBe(400);
    expect((await push('\n \n', { type: 'application/x-ndjson' })).status).toBe(400);
    const missing = await call(base, '/api/v1/inends/push', { method: 'POST', body: '[]', token });
    expect(missing.status).toBe(400);
  });

  it('validate reports the error line; stats count invocations', async () => {
    const v = await call(base, '/api/v1/rules/validate', {
      method: 'POST',
      body: { actions: 'Actions = {\n function(args)\n x x\n end\n}', success: '', failed: '' },
    });
    expect(v.status, v.text).toBe(200);
    expect(v.body.data).toMatchObject({ ok: false, line: 3 });
    const ok = await call(base, '/api/v1/rules/validate', {
      method: 'POST',
      body: { actions: 'Actions = { function(args) return true, args end }', success: '', failed: '' },
    });
    expect(ok.body.data).toMatchObject({ ok: true });
    const stats = await call(base, `/api/v1/rules/stats?uuid=${rule}`);
    expect(stats.status).toBe(200);
    expect(stats.body.data.invocations).toBeGreaterThanOrEqual(4);
  });

  it('bad rule bodies are 400; management needs the admin token', async () => {
    const bad = await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: 'x', fromSource: ['INEND22222222'], actions: 'Actions = {' } });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect((await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: 'x' }, token: token })).status).toBe(401);
  });

  it('delete rule and input', async () => {
    expect((await call(base, `/api/v1/rules/del?uuid=${rule}`, { method: 'DELETE' })).status).toBe(200);
    expect((await call(base, `/api/v1/inends/del?uuid=${inend}`, { method: 'DELETE' })).status).toBe(200);
    expect((await call(base, `/api/v1/inends/detail?uuid=${inend}`)).status).toBe(404);
    expect((await push('[]')).status).toBe(401); // a deleted input answers like a wrong token
  });
});
