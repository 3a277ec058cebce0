/**
 * Downloads of a model's whole data set are audited like destructive actions: a backup
 * (`GET datacenter/backup`) and an export (`GET datacenter/exportData`, every format) leave one info line
 * with the time, client address, action, model name and uuid, once the data starts to leave. Refused
 * downloads (unknown model, bad parameter, wrong token) leave none.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { checkRecord } from '../../src/models/record-check.js';
import { bearer, publishedModel, raw } from '../support/client.js';
import { ADMIN, type LogLine, type TestService, startService } from '../support/service.js';

let svc: TestService;
let model: string;
let startedAt: number;

beforeAll(async () => {
  startedAt = Date.now();
  svc = await startService({});
  model = await publishedModel(svc.port, 'exported', ['temp']);
  const checked = checkRecord(svc.registry.get(model), { temp: 21.5 }, 'save');
  if (!checked.ok) throw new Error(checked.error);
  svc.registry.log(model).save(checked.record);
}, 30_000);
afterAll(async () => svc?.close());

const auditLines = (action: string): LogLine[] => svc.logs.filter((l) => l.audit === action);

function download(path: string, token = ADMIN) {
  return raw(svc.port, { path, headers: bearer(token) });
}

it('a backup download: one info line with client, model name and uuid', async () => {
  const r = await download(`/api/v1/datacenter/backup?uuid=${model}`);
  expect(r.status, r.text).toBe(200);
  const lines = auditLines('data.backup');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatchObject({ level: 30, audit: 'data.backup', client: '127.0.0.1', object: 'model', name: 'exported', uuid: model });
  expect(lines[0].time as number).toBeGreaterThanOrEqual(startedAt);
  expect(lines[0].msg).toBe(`data.backup: model exported (${model}) by 127.0.0.1`);
});

it('an export download: one info line per download, whatever the format', async () => {
  for (const format of ['csv', 'jsonl', 'xlsx']) {
    const r = await download(`/api/v1/datacenter/exportData?uuid=${model}&format=${format}`);
    expect(r.status, `${format}: ${r.text.slice(0, 200)}`).toBe(200);
  }
  const lines = auditLines('data.export');
  expect(lines).toHaveLength(3);
  for (const line of lines) {
    expect(line).toMatchObject({ level: 30, audit: 'data.export', client: '127.0.0.1', object: 'model', name: 'exported', uuid: model });
    expect(line.msg).toBe(`data.export: model exported (${model}) by 127.0.0.1`);
  }
});

it('refused downloads are not audited', async () => {
  const before = svc.logs.filter((l) => typeof l.audit === 'string' && l.audit !== 'auth.failed').length;
  expect((await download('/api/v1/datacenter/backup?uuid=SCHEMA99999999')).status).toBe(404);
  expect((await download('/api/v1/datacenter/exportData?uuid=SCHEMA99999999')).status).toBe(404);
  expect((await download(`/api/v1/datacenter/exportData?uuid=${model}&format=pdf`)).status).toBe(400);
  expect((await download(`/api/v1/datacenter/backup?uuid=${model}`, 'wrong-token')).status).toBe(401);
  expect(svc.logs.filter((l) => typeof l.audit === 'string' && l.audit !== 'auth.failed')).toHaveLength(before);
});
