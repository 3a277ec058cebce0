/**
 * The Lua sandbox seen through the real HTTP API (management endpoints to create an input and rules,
 * then a push): a rule cannot reach files, the environment or another rule's globals, and cannot outlive
 * its time limit; the push answers, the other rule keeps storing, the server keeps serving.
 * The sandbox itself is tested in depth in test/scripts/sandbox.test.ts and engine.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, bearer, publishedModel, raw } from '../support/client.js';
import { SECRET, SHORT_LUA_LIMITS, type TestService, startService } from '../support/service.js';

let svc: TestService;
let model: string;
let inend: string;
let token: string;
const rules: Record<string, string> = {};

const SCRIPTS: Record<string, string> = {
  store: `Actions = { function(args) shared = "from-store"; local err = rds:Save("MODEL", {temp = 1}); if err ~= nil then Throw(err); return 0; end; return true, args; end }`,
  snoop: `Actions = { function(args) Throw("io=" .. tostring(io) .. " os=" .. tostring(os) .. " require=" .. tostring(require) .. " dofile=" .. tostring(dofile) .. " shared=" .. tostring(shared)); return 0; end }`,
  files: `Actions = { function(args) local f = io.open("/etc/passwd", "r"); Throw("opened " .. tostring(f)); return 0; end }`,
  loop: `Actions = { function(args) while true do end; end }`,
};

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent', ini: { scripts: SHORT_LUA_LIMITS } });
  model = await publishedModel(svc.port, 'lua', ['temp']);
  const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'in', type: 'HTTP', description: '' });
  inend = created.body.data.uuid;
  token = created.body.data.token;
  for (const [name, actions] of Object.entries(SCRIPTS)) {
    const r = await admin(svc.port, 'POST', '/api/v1/rules/create', { name, fromSource: [inend], actions: actions.replace('MODEL', model) });
    expect(r.status, r.text).toBe(200);
    rules[name] = r.body.data.uuid;
  }
}, 60_000);
afterAll(async () => svc?.close());

describe('Lua rules through HTTP', () => {
  it('no files, no environment, no shared globals, no endless loops; the good rule stores', async () => {
    const push = await raw(svc.port, { method: 'POST', path: `/api/v1/inends/push?uuid=${inend}`, headers: bearer(token), body: '{"x":1}' });
    expect(push.status, push.text).toBe(200);
    const last = await raw(svc.port, { path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}` });
    expect(last.body.data).toMatchObject({ id: 1, temp: 1 });

    const stats = async (name: string) => (await admin(svc.port, 'GET', `/api/v1/rules/stats?uuid=${rules[name]}`)).body.data;
    const snoop = await stats('snoop');
    expect(snoop.failures).toBe(1);
    expect(snoop.lastErrors[0].message).toContain('io=nil os=nil require=nil dofile=nil shared=nil');
    const files = await stats('files');
    expect(files.failures).toBe(1);
    expect(files.lastErrors[0].message).not.toContain('opened');
    const loop = await stats('loop');
    expect(loop.failures).toBe(1);
    expect(loop.lastErrors[0].message).toMatch(/time|limit|instruction/i);
    expect((await stats('store')).successes).toBe(1);
    expect((await raw(svc.port, { path: '/healthz' })).status).toBe(200);
  }, 30_000);
});
