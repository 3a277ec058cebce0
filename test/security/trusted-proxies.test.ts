/**
 * `[plugin.http_server] trusted_proxies`: X-Forwarded-For names the client only when the peer is a listed
 * proxy. Seen on a real server through the throttle of failed authentication (limit 2 per address),
 * which keys on the client address; and the walk along the header, on ClientAddress itself.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientAddress } from '../../src/http/core/client-address.js';
import { bearer, raw } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

/** A wrong admin token from `localAddress`, with the given X-Forwarded-For. */
async function wrongToken(svc: TestService, localAddress: string, forwardedFor?: string | string[]): Promise<number> {
  const headers: Record<string, string | string[]> = bearer('wrong-token');
  if (forwardedFor !== undefined) headers['X-Forwarded-For'] = forwardedFor;
  return (await raw(svc.port, { path: '/api/v1/schema/list', localAddress, headers })).status;
}

describe('trusted_proxies set', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ ini: { 'plugin.http_server': ['trusted_proxies = 127.0.0.1', 'auth_failures_per_minute = 2'] } });
  });
  afterAll(() => svc.close());

  it('behind a listed proxy, each forwarded client has its own throttle', async () => {
    expect([await wrongToken(svc, '127.0.0.1', '10.0.0.5'), await wrongToken(svc, '127.0.0.1', '10.0.0.5')]).toEqual([401, 401]);
    expect(await wrongToken(svc, '127.0.0.1', '10.0.0.5')).toBe(429);
    // Another client through the same proxy, named alone, after a trusted hop, or in a second header line.
    expect(await wrongToken(svc, '127.0.0.1', '10.0.0.6')).toBe(401);
    expect(await wrongToken(svc, '127.0.0.1', '10.0.0.5, 127.0.0.1')).toBe(429);
    expect(await wrongToken(svc, '127.0.0.1', ['10.0.0.5', '127.0.0.1'])).toBe(429);
    // A client cannot escape by prepending addresses: the rightmost untrusted hop counts.
    expect(await wrongToken(svc, '127.0.0.1', '1.2.3.4, 10.0.0.5')).toBe(429);
  });

  it('from a peer that is not listed, X-Forwarded-For is ignored', async () => {
    expect(await wrongToken(svc, '127.0.0.2', '10.0.0.7')).toBe(401);
    expect(await wrongToken(svc, '127.0.0.2', '10.0.0.8')).toBe(401);
    expect(await wrongToken(svc, '127.0.0.2', '10.0.0.9')).toBe(429);
  });
});

describe('trusted_proxies not set', () => {
  it('X-Forwarded-For is ignored: every request counts against the peer', async () => {
    const svc = await startService({ ini: { 'plugin.http_server': ['auth_failures_per_minute = 2'] } });
    try {
      expect(await wrongToken(svc, '127.0.0.3', '10.0.1.1')).toBe(401);
      expect(await wrongToken(svc, '127.0.0.3', '10.0.1.2')).toBe(401);
      expect(await wrongToken(svc, '127.0.0.3', '10.0.1.3')).toBe(429);
    } finally {
      await svc.close();
    }
  });
});

describe('ClientAddress.resolve', () => {
  const proxies = new ClientAddress(['127.0.0.1', '10.9.0.0/16', 'fd00::/64']);

  it.each([
    ['a peer that is not a proxy is the client', '192.168.1.5', '10.0.0.1', '192.168.1.5'],
    ['no header: the proxy itself', '127.0.0.1', undefined, '127.0.0.1'],
    ['one hop', '127.0.0.1', '192.168.1.5', '192.168.1.5'],
    ['a chain of trusted proxies is skipped', '127.0.0.1', '192.168.1.5, 10.9.3.4', '192.168.1.5'],
    ['the rightmost untrusted hop wins over spoofed ones to its left', '127.0.0.1', '6.6.6.6, 192.168.1.5', '192.168.1.5'],
    ['garbage stops the walk at the last hop known to be right', '127.0.0.1', '192.168.1.5, unknown', '127.0.0.1'],
    ['garbage left of a good hop is never reached', '127.0.0.1', 'x, 192.168.1.5', '192.168.1.5'],
    ['only trusted proxies: the leftmost', '127.0.0.1', '10.9.0.1, 10.9.0.2', '10.9.0.1'],
    ['IPv6 range and an IPv4-mapped hop', 'fd00::7', '::ffff:192.168.1.5', '192.168.1.5'],
  ])('%s', (_name, peer, header, client) => {
    expect(proxies.resolve(peer, header)).toBe(client);
  });

  it('IPv4-mapped peers in uWS\'s long form match an IPv4 proxy', () => {
    expect(proxies.resolve('0000:0000:0000:0000:0000:ffff:7f00:0001', '192.168.1.5')).toBe('192.168.1.5');
  });
});
