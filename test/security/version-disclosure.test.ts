/**
 * No version disclosure without a credential: no answer carries uWS's `uWebSockets: 20` header (or any
 * Server / X-Powered-By header), `/healthz` shows the service version only to the metrics or admin
 * token, and no unauthenticated route (UI files, 404s, API errors) names a version. The HTML pages uWS
 * writes itself for requests it refuses before routing still name "uWebSockets/20": pinned here so a
 * change of the library shows up (docs/security.md, "Version disclosure"). On the node transport those
 * requests get our JSON envelope instead, which names no software.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVICE_VERSION } from '../../src/http/server.js';
import { bearer, raw, type RawAnswer, type RawRequest } from '../support/client.js';
import { ADMIN, SECRET, type TestService, startService } from '../support/service.js';
import { ON_NODE_TRANSPORT } from '../support/transport.js';

const METRICS_TOKEN = 'metrics-token-0123456789';

let svc: TestService;

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent', ini: { main: [`metrics_token = ${METRICS_TOKEN}`] } });
});

afterAll(async () => svc?.close());

/** Header names and values, and the body, that would tell a version or the server software. */
function disclosures(r: RawAnswer): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(r.headers)) {
    const text = `${name}: ${String(value)}`;
    if (/^(uwebsockets|server|x-powered-by)$/i.test(name) || /uwebsockets|0\.1\.0/i.test(text)) found.push(text);
  }
  if (r.text.includes(SERVICE_VERSION) || /uwebsockets|"version"/i.test(r.text)) found.push(`body: ${r.text.slice(0, 120)}`);
  return found;
}

const UNAUTHENTICATED: RawRequest[] = [
  { path: '/healthz' },
  { path: '/healthz', headers: { Authorization: 'Basic dXNlcjpwYXNz' } },
  { path: '/' },
  { method: 'HEAD', path: '/' },
  { path: '/index.html' },
  { path: '/js/app.js' },
  { path: '/app.css' },
  { path: '/favicon.svg' },
  { path: '/no-such-file.txt' },
  { path: '/../../etc/passwd' },
  { method: 'POST', path: '/index.html', body: '' },
  { path: '/api/v1/schema/list' },
  { path: '/api/v1/schema/list', headers: bearer('wrong-token') },
  { path: '/api/v1/no/such/route' },
  { path: '/api/v1/datacenter/queryLastData?uuid=SCHEMA22222222' },
  { path: '/api/v1/datacenter/queryLastData?uuid=%ZZ&secrets=x' },
  { method: 'DELETE', path: '/healthz' },
  { path: '/metrics' },
  { method: 'POST', path: '/api/v1/inends/push?uuid=INEND22222222', headers: bearer('x'), body: '{}' },
  { method: 'OPTIONS', path: '/api/v1/datacenter/queryLastData', headers: { Origin: 'http://hmi.example', 'Access-Control-Request-Method': 'GET' } },
];

describe('version disclosure', () => {
  it('no unauthenticated answer names the server software or a version', async () => {
    for (const request of UNAUTHENTICATED) {
      const r = await raw(svc.port, { ...request, agent: false });
      expect(r.status, `${request.method ?? 'GET'} ${request.path}`).toBeGreaterThan(0);
      expect(disclosures(r), `${request.method ?? 'GET'} ${request.path} -> ${r.status}`).toEqual([]);
    }
  });

  it('authenticated answers do not carry the uWebSockets header either', async () => {
    for (const request of [
      { path: '/api/v1/schema/list', headers: bearer(ADMIN) },
      { path: '/metrics', headers: bearer(ADMIN) },
      { path: `/api/v1/datacenter/queryLastData?uuid=SCHEMA22222222&secrets=${SECRET}` },
    ]) {
      const r = await raw(svc.port, request);
      expect(Object.keys(r.headers).filter((h) => /^(uwebsockets|server|x-powered-by)$/i.test(h)), request.path).toEqual([]);
    }
  });

  it('/healthz shows the version to the admin or metrics token only; a wrong token is a 401', async () => {
    const anonymous = await raw(svc.port, { path: '/healthz' });
    expect(anonymous.status).toBe(200);
    expect(anonymous.body.data).toEqual({ status: 'ok', uptimeS: expect.any(Number), models: 0, scripts: 'on' });
    for (const token of [ADMIN, METRICS_TOKEN]) {
      const r = await raw(svc.port, { path: '/healthz', headers: bearer(token) });
      expect(r.status).toBe(200);
      expect(r.body.data).toEqual({ status: 'ok', version: SERVICE_VERSION, uptimeS: expect.any(Number), models: 0, scripts: 'on', inputs: [] });
    }
    const wrong = await raw(svc.port, { path: '/healthz', headers: bearer('not-the-token') });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toEqual({ code: 401, msg: 'wrong metrics or admin token', data: null });
    // Another scheme (a proxy's Basic auth passed through) is not a guess: the anonymous answer.
    const basic = await raw(svc.port, { path: '/healthz', headers: { Authorization: 'Basic dXNlcjpwYXNz' } });
    expect(basic.status).toBe(200);
    expect(basic.body.data.version).toBeUndefined();
  });

  const ask = (text: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const socket = net.connect(svc.port, '127.0.0.1', () => socket.write(text));
      let out = '';
      socket.on('data', (d: Buffer) => (out += d.toString('latin1')));
      socket.on('close', () => resolve(out));
      socket.on('error', reject);
    });

  it.skipIf(ON_NODE_TRANSPORT)("uWS's own pages for requests refused before routing still name uWebSockets/20 (documented, not removable at run time; uWS only)", async () => {
    const http10 = await ask('GET /healthz HTTP/1.0\r\n\r\n');
    expect(http10).toMatch(/^HTTP\/1\.1 505 /);
    expect(http10).toContain('uWebSockets/20 Server');
    expect(http10).not.toContain(SERVICE_VERSION);
    expect(http10.toLowerCase()).not.toContain('uwebsockets: 20');
  });

  it.runIf(ON_NODE_TRANSPORT)('on node:http, requests the parser refuses get a JSON envelope that names no software', async () => {
    const garbage = await ask('GET /healthz HTTP/1.1\r\nHost x\r\n\r\n');
    expect(garbage).toMatch(/^HTTP\/1\.1 400 /);
    expect(garbage).toContain('"code":400');
    const huge = await ask(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(90_000)}\r\n\r\n`);
    expect(huge).toMatch(/^HTTP\/1\.1 431 /);
    for (const answer of [garbage, huge]) {
      expect(answer).toMatch(/Content-Type: application\/json/);
      expect(answer.toLowerCase()).not.toMatch(/uwebsockets|node|server:|x-powered-by/);
      expect(answer).not.toContain(SERVICE_VERSION);
    }
  });
});
