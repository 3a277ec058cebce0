/**
 * UI paths with dot segments (`/../../etc/passwd`, encoded or not) are refused with a plain 404, as
 * docs/api.md says, on both transports: browsers resolve `.` and `..` before they send a URL, so only a
 * probe sends them, and it must not be told "200" (the UI's index.html) for a path that climbs out of the
 * UI directory. Real files and client-side routes are still served.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { raw } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
});
afterAll(() => svc.close());

it.each([
  '/../../etc/passwd',
  '/..',
  '/../',
  '/%2e%2e/%2e%2e/etc/passwd',
  '/..%2f..%2fetc%2fpasswd',
  '/js/../../../src/server.ts',
  '/js/../index.html',
  '/./index.html',
  '/a/b/../../../etc/shadow',
])('%s: plain 404', async (path) => {
  for (const method of ['GET', 'HEAD']) {
    const r = await raw(svc.port, { method, path });
    expect(r.status, `${method} ${path}`).toBe(404);
    expect(r.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
  }
});

it.each([
  ['/', 'text/html; charset=utf-8'],
  ['/index.html', 'text/html; charset=utf-8'],
  ['/js/app.js', 'text/javascript; charset=utf-8'],
  ['/settings/models', 'text/html; charset=utf-8'],
])('%s is still served', async (path, type) => {
  const r = await raw(svc.port, { path });
  expect(r.status).toBe(200);
  expect(r.headers['content-type']).toBe(type);
});
