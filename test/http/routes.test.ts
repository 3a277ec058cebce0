/**
 * The route table of the real service, with the credential each route asks for. A route added without
 * a line here fails this test: decide its guard, then add it. Public routes are listed as such.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Router } from '../../src/http/core/router.js';
import { pino } from 'pino';
import { startService, type TestService } from '../support/service.js';

const ADMIN = 'admin token';
const DATA_SECRET = 'data secret';
const PUSH_TOKEN = 'push token';
const MONITOR = 'metrics or admin token';
const HEALTH = 'public; metrics or admin token when a bearer token is sent';

const EXPECTED: Record<string, string> = {
  'GET /api/v1/datacenter/queryDataList': DATA_SECRET,
  'GET /api/v1/datacenter/queryLastData': DATA_SECRET,
  'GET /api/v1/datacenter/queryAggregate': DATA_SECRET,
  'GET /api/v1/datacenter/queryLastDataBatch': DATA_SECRET,
  'GET /api/v1/datacenter/stream': DATA_SECRET,

  'POST /api/v1/schema/create': ADMIN,
  'PUT /api/v1/schema/update': ADMIN,
  'DELETE /api/v1/schema/del': ADMIN,
  'GET /api/v1/schema/list': ADMIN,
  'GET /api/v1/schema/detail': ADMIN,
  'POST /api/v1/schema/recovery/ack': ADMIN,
  'PUT /api/v1/schema/retention': ADMIN,
  'POST /api/v1/schema/publish': ADMIN,
  'POST /api/v1/schema/fix': ADMIN,
  'POST /api/v1/schema/properties/create': ADMIN,
  'PUT /api/v1/schema/properties/update': ADMIN,
  'DELETE /api/v1/schema/properties/del': ADMIN,
  'GET /api/v1/schema/properties/list': ADMIN,
  'GET /api/v1/schema/properties/detail': ADMIN,
  'GET /api/v1/schema/getTemplates': ADMIN,
  'GET /api/v1/schema/getTemplateFields': ADMIN,
  'POST /api/v1/schema/genTemplate': ADMIN,

  'GET /api/v1/datacenter/listSchemaDDL': ADMIN,
  'GET /api/v1/datacenter/schemaDDLDetail': ADMIN,
  'GET /api/v1/datacenter/schemaDDLDefine': ADMIN,
  'GET /api/v1/datacenter/exportData': ADMIN,
  'DELETE /api/v1/datacenter/clearSchemaData': ADMIN,
  'GET /api/v1/datacenter/backup': ADMIN,
  'GET /api/v1/uplink/status': ADMIN,
  'POST /api/v1/datacenter/restore': ADMIN,
  'POST /api/v1/datacenter/importData': ADMIN,
  'GET /api/v1/datacenter/secret': ADMIN,

  'GET /api/v1/inends/list': ADMIN,
  'GET /api/v1/inends/detail': ADMIN,
  'POST /api/v1/inends/create': ADMIN,
  'PUT /api/v1/inends/update': ADMIN,
  'DELETE /api/v1/inends/del': ADMIN,
  'POST /api/v1/inends/rotateToken': ADMIN,
  'GET /api/v1/inends/stats': ADMIN,
  'POST /api/v1/inends/push': PUSH_TOKEN,

  'GET /api/v1/rules/list': ADMIN,
  'GET /api/v1/rules/detail': ADMIN,
  'POST /api/v1/rules/create': ADMIN,
  'PUT /api/v1/rules/update': ADMIN,
  'DELETE /api/v1/rules/del': ADMIN,
  'POST /api/v1/rules/validate': ADMIN,
  'POST /api/v1/rules/dryRun': ADMIN,
  'GET /api/v1/rules/stats': ADMIN,

  'GET /metrics': MONITOR,
  'GET /healthz': HEALTH,
};

let svc: TestService;

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
});

afterAll(async () => svc?.close());

describe('route table', () => {
  it('every route has the guard decided for it, and no route is missing or extra', () => {
    const actual = Object.fromEntries(svc.routes.map((r) => [`${r.method} ${r.path}`, r.guard]));
    expect(actual).toEqual(EXPECTED);
  });

  it('the guards run: one route of each refuses a wrong or missing credential with 401', async () => {
    const sample = new Map<string, string>();
    for (const [route, guard] of Object.entries(EXPECTED)) if (!sample.has(guard)) sample.set(guard, route);
    for (const [guard, route] of sample) {
      const [method, path] = route.split(' ');
      const r = await fetch(`${svc.base}${path}?uuid=INEND22222222`, { method, headers: { Authorization: 'Bearer wrong' } });
      expect(r.status, `${route} (${guard})`).toBe(401);
    }
  });
});

describe('route groups', () => {
  const router = (): Router => new Router({ logger: pino({ level: 'silent' }), urlBytesMax: 1024, bodyBytesMax: 1024, fallback: () => null });
  const open = { who: 'public', check() {} };

  it('join the prefix and the path, and refuse malformed ones', () => {
    const r = router();
    r.group({ prefix: '/api/x', guard: open }, (g) => g.get('/y', () => 1));
    expect(r.routes()).toEqual([{ method: 'GET', path: '/api/x/y', guard: 'public' }]);
    expect(() => r.group({ prefix: '/api/', guard: open }, () => {})).toThrow("route group prefix must be '' or start with / and not end with one, got \"/api/\"");
    expect(() => r.group({ prefix: 'api', guard: open }, () => {})).toThrow('route group prefix');
    expect(() => r.group({ prefix: '/api', guard: open }, (g) => g.get('y', () => 1))).toThrow('route path must start with /, got "y" in group "/api"');
  });

  it('refuse a route declared twice', () => {
    const r = router();
    r.group({ prefix: '/api', guard: open }, (g) => g.get('/y', () => 1));
    expect(() => r.group({ prefix: '/api', guard: open }, (g) => g.get('/y', () => 2))).toThrow('route defined twice: GET /api/y');
  });
});
