/**
 * `[plugin.http_server] allowed_hosts`, the defence against DNS rebinding, on a real server: a Host that
 * is not listed gets 421 before any credential is looked at (so it neither reaches the data nor spends
 * the throttle of its address); listed names match without port, case or trailing dot; without the key
 * every Host is served.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostOfHeader } from '../../src/http/core/allowed-hosts.js';
import { bearer, raw } from '../support/client.js';
import { ADMIN, startService, type TestService } from '../support/service.js';

describe('allowed_hosts set', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({
      ini: { 'plugin.http_server': ['allowed_hosts = gateway.plant.local, 127.0.0.1, [::1]', 'auth_failures_per_minute = 2'] },
    });
  });
  afterAll(() => svc.close());

  it('serves the listed names, with or without port, in any case, with a trailing dot', async () => {
    for (const host of ['gateway.plant.local', `gateway.plant.local:${svc.port}`, 'GATEWAY.Plant.Local.:80', `127.0.0.1:${svc.port}`, `[::1]:${svc.port}`]) {
      const r = await raw(svc.port, { path: '/api/v1/schema/list', headers: { Host: host, ...bearer(ADMIN) } });
      expect(r.status, host).toBe(200);
    }
  });

  it('answers 421 to any other Host, even with the right admin token, and for the UI and preflights', async () => {
    for (const host of ['evil.example', `evil.example:${svc.port}`, 'gateway.plant.local.evil.example', '127.0.0.2', `localhost:${svc.port}`]) {
      const r = await raw(svc.port, { path: '/api/v1/schema/list', headers: { Host: host, ...bearer(ADMIN) } });
      expect(r.status, host).toBe(421);
      expect(r.body).toEqual({ code: 421, msg: `Host ${JSON.stringify(host)} is not a name of this server ([plugin.http_server] allowed_hosts)`, data: null });
    }
    expect((await raw(svc.port, { path: '/', headers: { Host: 'evil.example' } })).status).toBe(421);
    expect((await raw(svc.port, { path: '/healthz', headers: { Host: 'evil.example' } })).status).toBe(421);
    const preflight = await raw(svc.port, {
      method: 'OPTIONS',
      path: '/api/v1/datacenter/queryLastData',
      headers: { Host: 'evil.example', Origin: 'http://evil.example', 'Access-Control-Request-Method': 'GET' },
    });
    expect(preflight.status).toBe(421);
    expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses before the credential check: wrong tokens under another Host do not count against the address', async () => {
    // The limit is 2 wrong credentials per minute; ten under a rebound name must leave it untouched.
    for (let i = 0; i < 10; i++) {
      const r = await raw(svc.port, { path: '/api/v1/schema/list', localAddress: '127.0.0.3', headers: { Host: 'evil.example', ...bearer(`wrong-${i}`) } });
      expect(r.status).toBe(421);
    }
    const wrong = await raw(svc.port, { path: '/api/v1/schema/list', localAddress: '127.0.0.3', headers: { Host: 'gateway.plant.local', ...bearer('wrong') } });
    expect(wrong.status).toBe(401);
    const right = await raw(svc.port, { path: '/api/v1/schema/list', localAddress: '127.0.0.3', headers: { Host: 'gateway.plant.local', ...bearer(ADMIN) } });
    expect(right.status).toBe(200);
  });
});

describe('allowed_hosts not set', () => {
  it('every Host is served', async () => {
    const svc = await startService();
    try {
      const r = await raw(svc.port, { path: '/api/v1/schema/list', headers: { Host: 'evil.example', ...bearer(ADMIN) } });
      expect(r.status).toBe(200);
    } finally {
      await svc.close();
    }
  });
});

describe('hostOfHeader', () => {
  it.each([
    ['Gateway.Plant.Local:2580', 'gateway.plant.local'],
    ['gateway.plant.local.', 'gateway.plant.local'],
    ['10.1.2.3:80', '10.1.2.3'],
    ['[FD00::1]:2580', 'fd00::1'],
    ['[::1]', '::1'],
    ['fd00::1', 'fd00::1'],
  ])('%s -> %s', (header, host) => {
    expect(hostOfHeader(header)).toBe(host);
  });
});
