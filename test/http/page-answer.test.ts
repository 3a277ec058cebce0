/**
 * queryDataList's answer, byte for byte, over the real server: the store prints the records of a page
 * straight from their stored bytes (src/store/read/record-json.ts), and the answer must stay what the route
 * sent when it built RecordViews and ran JSON.stringify over the envelope. The expected text is made here
 * the way the route made it (log.page, formatRecord, envelope), for every attribute type, strings JSON
 * escapes, NaN and the infinities (refused by the rules, but stored by older versions or restores),
 * update-last, and attributes added after records were written.
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatRecord, isoSeconds } from '../../src/http/core/format.js';
import { envelope } from '../../src/http/core/reply.js';
import { checkRecord } from '../../src/models/record-check.js';
import type { PageQuery } from '../../src/store/base/types.js';
import { admin } from '../support/client.js';
import { SECRET, startService, type TestService } from '../support/service.js';

let svc: TestService;
let uuid: string;

/** The whole answer as it came off the socket: status line and headers (Date dropped), and the body bytes. */
async function rawGet(path: string): Promise<{ head: string[]; body: Buffer }> {
  const socket = connect(svc.port, '127.0.0.1');
  // Not end(): a half-closed request may be dropped before its answer; the server closes after it.
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const all = Buffer.concat(chunks);
  const split = all.indexOf('\r\n\r\n');
  const head = all
    .subarray(0, split)
    .toString('latin1')
    .split('\r\n')
    .filter((line) => !/^(date|uwebsockets|connection|keep-alive):/i.test(line));
  return { head, body: all.subarray(split + 4) };
}

/** What the route answered before pages were printed from the stored bytes. */
async function referenceBody(q: PageQuery): Promise<Buffer> {
  const page = await svc.registry.log(uuid).page(q);
  const records = page.records.map((record) => formatRecord(record, isoSeconds));
  return Buffer.from(envelope({ current: q.current, size: q.size, total: page.total, records }));
}

function save(input: Record<string, unknown>): void {
  const checked = checkRecord(svc.registry.get(uuid), input, 'save');
  if (!checked.ok) throw new Error(checked.error);
  svc.registry.log(uuid).save(checked.record);
}

const STRINGS = ['', 'plain', 'say "hi" \\ back', 'tab\tline\nret\r\u0000\u001f\u007f', 'caf\u00e9 \u6e29\u5ea6 \ud83d\ude80 \u2028', 'x'.repeat(300)];

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  const created = await admin(svc.port, 'POST', '/api/v1/schema/create', { name: 'page-answer', description: '' });
  uuid = created.body.data.uuid as string;
  for (const [name, type] of [
    ['label', 'STRING'],
    ['count', 'INTEGER'],
    ['temp', 'FLOAT'],
    ['on', 'BOOL'],
    ['where', 'GEO'],
  ]) {
    const r = await admin(svc.port, 'POST', '/api/v1/schema/properties/create', { schemaId: uuid, name, type });
    expect(r.status, r.text).toBe(200);
  }
  expect((await admin(svc.port, 'POST', `/api/v1/schema/publish?uuid=${uuid}`)).status).toBe(200);
  const log = svc.registry.log(uuid);
  for (let i = 0; i < 60; i++) {
    save({ label: STRINGS[i % STRINGS.length], count: i * 1_000_003 - 30_000_000, temp: i / 7 - 3, on: i % 2 === 0, where: `${i}.5,-${i}.25` });
  }
  save({});
  // Stored without the rules' check (an older version, a restore): JSON prints them as null.
  log.save({ label: 'odd', count: Number.MAX_SAFE_INTEGER, temp: NaN, on: true, where: '0,0' });
  log.save({ label: 'odd', count: -Number.MAX_SAFE_INTEGER, temp: Infinity, on: false, where: '0,0' });
  log.save({ label: 'odd', count: 0, temp: -Infinity, on: false, where: '0,0' });
  save({ label: 'before update', count: 1, temp: 1.5, on: true, where: '1,1' });
  log.updateLast({ label: 'after "update"', temp: -0.1 });
  // Records written before this attribute existed read its default.
  const added = await admin(svc.port, 'POST', '/api/v1/schema/properties/create', {
    schemaId: uuid,
    name: 'note',
    type: 'STRING',
    rule: { defaultValue: 'none "yet"' },
  });
  expect(added.status, added.text).toBe(200);
  for (let i = 0; i < 20; i++) save({ label: `new ${i}`, count: i, temp: i * 0.3, on: true, where: '2,2', note: STRINGS[i % STRINGS.length] });
  log.updateLast({ note: 'last \u00e9' });
  await log.durable();
});

afterAll(async () => {
  await svc?.close();
});

describe('queryDataList answer bytes', () => {
  it('are the envelope the route built from RecordViews, for every page, order and select', async () => {
    const cases: Array<{ q: PageQuery; params: string }> = [];
    for (const order of ['desc', 'asc'] as const) {
      for (const [current, size] of [[1, 1000], [1, 10], [3, 10], [9, 10], [2, 37], [1, 1]]) {
        cases.push({ q: { current, size, order }, params: `current=${current}&size=${size}&order=${order}` });
      }
      for (const select of [['temp'], ['note', 'id'], ['create_at', 'label', 'where'], ['on', 'count']]) {
        cases.push({ q: { current: 2, size: 25, order, select }, params: `current=2&size=25&order=${order}&select=${select.join(',')}` });
      }
    }
    for (const { q, params } of cases) {
      const { head, body } = await rawGet(`/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${SECRET}&${params}`);
      const expected = await referenceBody(q);
      expect(body.toString('utf8'), params).toBe(expected.toString('utf8'));
      expect(Buffer.compare(body, expected), params).toBe(0);
      expect(head, params).toEqual([
        'HTTP/1.1 200 OK',
        'Content-Type: application/json; charset=utf-8',
        'X-Content-Type-Options: nosniff',
        'Cache-Control: no-store',
        'Access-Control-Allow-Origin: *',
        `Content-Length: ${expected.length}`,
      ]);
    }
  });

  it('print NaN and the infinities as null, defaults where a record predates its attribute, and the updated last record', async () => {
    const { body } = await rawGet(`/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${SECRET}&size=1000&order=asc`);
    const text = body.toString('utf8');
    expect(text).toMatch(/"count":9007199254740991,"temp":null,"on":true,"where":"0,0","note":"none \\"yet\\""\}/);
    expect(text).toContain('"temp":null,"on":false');
    expect(text).toContain('"label":"after \\"update\\"","count":1,"temp":-0.1');
    expect(text).toContain('"label":"tab\\tline\\nret\\r\\u0000\\u001f\u007f"');
    expect(text).toContain('"label":"caf\u00e9 \u6e29\u5ea6 \ud83d\ude80 \u2028"');
    expect(text).toContain('"label":"","count":0,"temp":0,"on":false,"where":"0,0","note":"none \\"yet\\""');
    expect(text).toMatch(/"note":"last \u00e9"\}\]\}\}$/);
    expect(JSON.parse(text).data.total).toBe(85);
  });
});
