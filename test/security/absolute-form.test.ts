/**
 * An absolute-form request target (`GET http://evil.example/healthz`, RFC 9112 3.2.2) names its host in
 * the target, and a server must take that host instead of `Host`. So `allowed_hosts` has to check the
 * target's authority: otherwise a foreign name passes under an allowed `Host`. uWS refuses the form itself
 * (505); node:http accepts it, and then the target's host is checked and its path routed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { raw } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { ON_NODE_TRANSPORT } from '../support/transport.js';

describe('absolute-form targets with allowed_hosts set', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ ini: { 'plugin.http_server': ['allowed_hosts = gateway.plant.local, 127.0.0.1'] } });
  });
  afterAll(() => svc.close());

  it.each(['http://evil.example/healthz', 'http://evil.example:80/', 'https://EVIL.example./api/v1/schema/list', 'http://evil.example'])(
    '%s under an allowed Host is not served',
    async (target) => {
      const r = await raw(svc.port, { path: target, headers: { Host: 'gateway.plant.local' }, agent: false });
      expect(r.status).not.toBe(200);
      if (ON_NODE_TRANSPORT) {
        expect(r.status).toBe(421);
        expect(r.body.msg).toMatch(/^Host "[^"]*" is not a name of this server \(\[plugin\.http_server\] allowed_hosts\)$/);
      }
    },
  );

  it.runIf(ON_NODE_TRANSPORT)('an allowed name in the target is served by its path, whatever Host says', async () => {
    const r = await raw(svc.port, { path: 'http://gateway.plant.local:2580/healthz', headers: { Host: 'evil.example' }, agent: false });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toBe('ok');
  });
});

describe.runIf(ON_NODE_TRANSPORT)('absolute-form targets without allowed_hosts', () => {
  it('are routed by their path, query included', async () => {
    const svc = await startService();
    try {
      const health = await raw(svc.port, { path: 'http://anything.example/healthz?x=1', agent: false });
      expect(health.status).toBe(200);
      expect(health.body.data.status).toBe('ok');
      const api = await raw(svc.port, { path: 'http://anything.example/api/v1/schema/list', agent: false });
      expect(api.status).toBe(401);
    } finally {
      await svc.close();
    }
  });
});
