/**
 * The audit log (src/http/guards/audit.ts) over the real service: each destructive, code-changing or
 * credential-revealing admin action leaves one info line with the client address, the action and the
 * object's name and uuid; failed authentication leaves one warn line per address and window with the
 * count and the credential kinds; listening on a non-loopback host without TLS warns at start.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Audit, isLoopbackHost, warnIfPlainNonLoopback } from '../../src/http/guards/audit.js';
import { admin, bearer, publishedModel, raw } from '../support/client.js';
import { ADMIN, type LogLine, SECRET, type TestService, startService } from '../support/service.js';

const auditLines = (logs: readonly LogLine[], action?: string): LogLine[] =>
  logs.filter((l) => typeof l.audit === 'string' && (action === undefined || l.audit === action));

function memoryLogger(): { logger: pino.Logger; lines: LogLine[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.length > 0) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

describe('admin actions are audited with client, action, object name and uuid', () => {
  let svc: TestService;
  let model: string;
  let startedAt: number;
  beforeAll(async () => {
    startedAt = Date.now();
    svc = await startService({});
    model = await publishedModel(svc.port, 'audited', ['temp', 'spare']);
  }, 30_000);
  afterAll(async () => svc?.close());

  const expectOne = (action: string, object: string, name: string, uuid: string): void => {
    const lines = auditLines(svc.logs, action);
    expect(lines, action).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, audit: action, client: '127.0.0.1', object, name, uuid });
    expect(lines[0].time as number).toBeGreaterThanOrEqual(startedAt);
    expect(lines[0].msg).toBe(`${action}: ${object} ${name} (${uuid}) by 127.0.0.1`);
  };

  it('publishing a model', () => {
    expectOne('model.publish', 'model', 'audited', model);
  });

  it('inputs and rules: create, change code, delete', async () => {
    const inend = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'plc-7', type: 'HTTP', description: '' });
    expect(inend.status, inend.text).toBe(200);
    const inendUuid = inend.body.data.uuid as string;
    expectOne('inend.create', 'inend', 'plc-7', inendUuid);
    const actions = 'Actions = { function(args) return true, args; end }';
    const rule = await admin(svc.port, 'POST', '/api/v1/rules/create', { name: 'copy', fromSource: [inendUuid], actions });
    expect(rule.status, rule.text).toBe(200);
    const ruleUuid = rule.body.data.uuid as string;
    expectOne('rule.create', 'rule', 'copy', ruleUuid);
    const updated = await admin(svc.port, 'PUT', '/api/v1/rules/update', {
      uuid: ruleUuid, name: 'copy-v2', fromSource: [inendUuid], actions: 'Actions = { function(args) return false, args; end }',
    });
    expect(updated.status, updated.text).toBe(200);
    expectOne('rule.update', 'rule', 'copy-v2', ruleUuid);
    expect((await admin(svc.port, 'DELETE', `/api/v1/rules/del?uuid=${ruleUuid}`)).status).toBe(200);
    expectOne('rule.delete', 'rule', 'copy-v2', ruleUuid);
    expect((await admin(svc.port, 'DELETE', `/api/v1/inends/del?uuid=${inendUuid}`)).status).toBe(200);
    expectOne('inend.delete', 'inend', 'plc-7', inendUuid);
  });

  it('reading the data secret, clearing data, fixing a model, deleting an attribute and the model', async () => {
    expect((await admin(svc.port, 'GET', '/api/v1/datacenter/secret')).status).toBe(200);
    expectOne('secret.read', 'secret', 'dataschema_secrets', '');
    expect((await admin(svc.port, 'DELETE', `/api/v1/datacenter/clearSchemaData?uuid=${model}`)).status).toBe(200);
    expectOne('data.clear', 'model', 'audited', model);
    expect((await admin(svc.port, 'POST', `/api/v1/schema/fix?uuid=${model}&confirm=true`)).status).toBe(200);
    expectOne('model.fix', 'model', 'audited', model);
    const attrs = await admin(svc.port, 'GET', `/api/v1/schema/properties/list?schema_uuid=${model}`);
    const spare = (attrs.body.data.records as Array<{ uuid: string; name: string }>).find((a) => a.name === 'spare');
    expect(spare).toBeDefined();
    expect((await admin(svc.port, 'DELETE', `/api/v1/schema/properties/del?uuid=${spare?.uuid}`)).status).toBe(200);
    expectOne('attribute.delete', 'attribute', 'spare', spare?.uuid as string);
    expect((await admin(svc.port, 'DELETE', `/api/v1/schema/del?uuid=${model}`)).status).toBe(200);
    expectOne('model.delete', 'model', 'audited', model);
  });

  it('actions that fail and reads are not audited; nothing is audited below info', async () => {
    const before = auditLines(svc.logs).length;
    expect((await admin(svc.port, 'DELETE', '/api/v1/schema/del?uuid=SCHEMA99999999')).status).toBe(404);
    expect((await admin(svc.port, 'DELETE', '/api/v1/rules/del?uuid=RULE99999999')).status).toBe(404);
    expect((await admin(svc.port, 'GET', '/api/v1/schema/list')).status).toBe(200);
    expect(auditLines(svc.logs)).toHaveLength(before);
    expect(auditLines(svc.logs).every((l) => l.level >= 30)).toBe(true);
  });

  it('wrong credentials: one warn line per address with the count and the kinds; right and missing ones none', async () => {
    const a = { localAddress: '127.0.0.2' };
    const b = { localAddress: '127.0.0.3' };
    for (let i = 0; i < 3; i++) await raw(svc.port, { ...a, path: `/api/v1/datacenter/queryLastData?uuid=x&secrets=guess${i}` });
    for (let i = 0; i < 2; i++) await raw(svc.port, { ...a, path: '/api/v1/schema/list', headers: bearer(`guess${i}`) });
    await raw(svc.port, { ...b, method: 'POST', path: '/api/v1/inends/push?uuid=INEND99999999', headers: bearer('nope'), body: '{}' });
    await raw(svc.port, { ...b, path: '/api/v1/schema/list' }); // missing: not a failure
    await raw(svc.port, { ...b, path: `/api/v1/datacenter/queryLastData?uuid=x&secrets=${SECRET}` });
    await raw(svc.port, { ...b, path: '/api/v1/schema/list', headers: bearer(ADMIN) });
    // Aggregated: nothing is written until the window (a minute) ends or the server closes.
    expect(auditLines(svc.logs, 'auth.failed')).toHaveLength(0);
    await svc.close();
    const lines = auditLines(svc.logs, 'auth.failed');
    expect(lines).toHaveLength(2);
    expect(lines.find((l) => l.client === '127.0.0.2')).toMatchObject({
      level: 40, count: 5, kinds: ['admin-token', 'data-secret'], windowS: 60,
      msg: 'auth.failed: 5 wrong credentials (admin-token, data-secret) from 127.0.0.2 within 60 s',
    });
    expect(lines.find((l) => l.client === '127.0.0.3')).toMatchObject({ level: 40, count: 1, kinds: ['push-token'] });
  });
});

describe('Audit: failed authentication aggregated per address and window', () => {
  it('writes one line per address per window, and a full table early', async () => {
    const { logger, lines } = memoryLogger();
    const audit = new Audit(logger, 150, 3);
    for (let i = 0; i < 40; i++) audit.authFailed({ remoteAddress: '10.0.0.1' }, 'data-secret');
    audit.authFailed({ remoteAddress: '10.0.0.2' }, 'admin-token');
    expect(lines).toHaveLength(0);
    // The window's end is waited for (a busy machine fires the timer late; the ceiling only ends a hang).
    const linesAt = async (n: number): Promise<void> => {
      for (const until = Date.now() + 60_000; lines.length < n && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10));
    };
    await linesAt(2);
    expect(lines.map((l) => [l.client, l.count])).toEqual([['10.0.0.1', 40], ['10.0.0.2', 1]]);
    audit.authFailed({ remoteAddress: '10.0.0.1' }, 'push-token');
    await linesAt(3);
    expect(lines.slice(2).map((l) => [l.client, l.count, l.kinds])).toEqual([['10.0.0.1', 1, ['push-token']]]);
    // a fourth address with three pending: the three are written at once
    for (const address of ['a', 'b', 'c', 'd']) audit.authFailed({ remoteAddress: address }, 'data-secret');
    expect(lines.slice(3).map((l) => l.client)).toEqual(['a', 'b', 'c']);
    audit.flush();
    expect(lines.slice(6).map((l) => l.client)).toEqual(['d']);
  });
});

describe('start-up warning for plain HTTP on a non-loopback host', () => {
  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) expect(isLoopbackHost(h), h).toBe(true);
    for (const h of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'gateway.local', '127.0.0.1.example', '::ffff:10.0.0.1']) {
      expect(isLoopbackHost(h), h).toBe(false);
    }
  });

  it('warns once for a non-loopback host without TLS, never with TLS or on loopback', () => {
    const { logger, lines } = memoryLogger();
    expect(warnIfPlainNonLoopback('127.0.0.1', 2580, false, logger)).toBe(false);
    expect(warnIfPlainNonLoopback('0.0.0.0', 2580, true, logger)).toBe(false);
    expect(lines).toHaveLength(0);
    expect(warnIfPlainNonLoopback('0.0.0.0', 2580, false, logger)).toBe(true);
    expect(lines).toEqual([expect.objectContaining({ level: 40, audit: 'start.plain-http', host: '0.0.0.0', msg: expect.stringMatching(/serving plain HTTP/) })]);
  });

  it('the real server warns at start on 0.0.0.0, not on 127.0.0.1', async () => {
    const open = await startService({ ini: { 'plugin.http_server': ['host = 0.0.0.0'] } });
    const loop = await startService();
    try {
      expect(auditLines(open.logs, 'start.plain-http')).toEqual([expect.objectContaining({ level: 40, host: '0.0.0.0' })]);
      expect(auditLines(loop.logs, 'start.plain-http')).toHaveLength(0);
    } finally {
      await open.close();
      await loop.close();
    }
  });
});
