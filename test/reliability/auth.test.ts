/**
 * Credentials: constant-time comparison (functionally: every configured value works, near misses and
 * other lengths do not), and wrong credentials from one address are slowed down (429 with Retry-After)
 * while correct clients on another address keep getting 200. All clients are on loopback: 127.0.0.2 is
 * "another address" (Linux routes all of 127/8 to lo).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretSet } from '../../src/http/auth.js';
import { AuthThrottle } from '../../src/http/throttle.js';
import { ADMIN, bearer, raw, SECRET, type Service, startService } from './helpers.js';

describe('SecretSet (constant-time comparison, functionally)', () => {
  it('accepts every configured value and nothing else', () => {
    const set = new SecretSet(['alpha-secret', 'b', '', 'ünïcode-秘密']);
    for (const ok of ['alpha-secret', 'b', 'ünïcode-秘密']) expect(set.matches(ok)).toBe(true);
    for (const bad of ['', undefined, 'alpha-secreT', 'alpha-secret ', 'alpha', 'alpha-secret-longer', 'B', 'ünïcode-秘', 'x'.repeat(10_000)]) {
      expect(set.matches(bad)).toBe(false);
    }
    expect(new SecretSet(['']).matches('')).toBe(false);
  });

  it('takes about the same time for a near miss, a far miss and a hit (hashing first, no early exit)', () => {
    const secret = 'k'.repeat(64);
    const set = new SecretSet([secret, 'other']);
    const time = (candidate: string): number => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 20_000; i++) set.matches(candidate);
      return Number(process.hrtime.bigint() - t0);
    };
    time(secret); // warm up
    const hit = time(secret);
    const near = time(`${'k'.repeat(63)}x`);
    const far = time('z');
    // Generous bounds: this only catches an early-exit comparison, not nanosecond leaks.
    expect(near / hit).toBeGreaterThan(0.33);
    expect(near / hit).toBeLessThan(3);
    expect(far / hit).toBeGreaterThan(0.33);
    expect(far / hit).toBeLessThan(3);
  });
});

describe('AuthThrottle (token bucket per address)', () => {
  it('allows perMinute failures, then refuses until a token is back', () => {
    let now = 1_000_000;
    const t = new AuthThrottle(3, 100, () => now);
    for (let i = 0; i < 3; i++) {
      expect(t.retryAfterS('a')).toBe(0);
      t.fail('a');
    }
    expect(t.retryAfterS('a')).toBe(20); // one token per 20 s at 3/min
    expect(() => t.check('a')).toThrow(/too many wrong credentials/);
    expect(t.retryAfterS('b')).toBe(0);
    now += 20_000;
    expect(t.retryAfterS('a')).toBe(0);
    now += 60_000;
    expect(t.retryAfterS('a')).toBe(0);
    expect(t.size).toBe(0); // refilled entries are dropped
  });

  it('keeps the table bounded, forgetting the least recently failing address', () => {
    const t = new AuthThrottle(1, 50);
    for (let i = 0; i < 1000; i++) t.fail(`10.0.${i >> 8}.${i & 255}`);
    expect(t.size).toBe(50);
    expect(t.retryAfterS('10.0.3.231')).toBeGreaterThan(0); // the last one is kept
    expect(t.retryAfterS('10.0.0.0')).toBe(0); // the first one was forgotten
  });

  it('0 disables it', () => {
    const t = new AuthThrottle(0);
    for (let i = 0; i < 100; i++) t.fail('a');
    expect(t.retryAfterS('a')).toBe(0);
    expect(t.failures).toBe(100);
  });
});

describe('throttling over HTTP', () => {
  let svc: Service;
  let model: string;
  beforeAll(async () => {
    svc = await startService({ engine: false, ini: { 'plugin.http_server': ['auth_failures_per_minute = 5'] } });
    model = 'SCHEMA22222222';
  });
  afterAll(async () => svc?.close());

  const attacker = { localAddress: '127.0.0.2' };
  const good = (): Promise<{ status: number }> =>
    raw(svc.port, { path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}` });

  it('wrong secrets from one address: 401 up to the limit, then 429 with Retry-After for any credential there', async () => {
    for (let i = 0; i < 5; i++) {
      const r = await raw(svc.port, { ...attacker, path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=guess${i}` });
      expect(r.status).toBe(401);
      // a correct client on another address is unaffected all along
      expect((await good()).status).toBe(404); // authenticated: the model does not exist
    }
    const throttled = await raw(svc.port, { ...attacker, path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=guess6` });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(throttled.body).toEqual({ code: 429, msg: expect.stringMatching(/too many wrong credentials/), data: null });
    // The admin token and push tokens share the limit: the address is refused before the check,
    // even with the right token (the documented trade-off).
    const adminThere = await raw(svc.port, { ...attacker, path: '/api/v1/schema/list', headers: bearer(ADMIN) });
    expect(adminThere.status).toBe(429);
    // Correct clients elsewhere keep getting answers.
    for (let i = 0; i < 10; i++) expect((await good()).status).toBe(404);
    expect((await raw(svc.port, { path: '/api/v1/schema/list', headers: bearer(ADMIN) })).status).toBe(200);
    // Paths without credentials are not throttled.
    expect((await raw(svc.port, { ...attacker, path: '/healthz' })).status).toBe(200);
  });

  it('correct credentials are never counted: a busy correct client is not slowed down', async () => {
    for (let i = 0; i < 50; i++) {
      expect((await raw(svc.port, { path: '/api/v1/schema/list', headers: bearer(ADMIN) })).status).toBe(200);
    }
    // missing credentials are not counted either
    for (let i = 0; i < 10; i++) expect((await raw(svc.port, { path: '/api/v1/schema/list' })).status).toBe(401);
    expect((await raw(svc.port, { path: '/api/v1/schema/list', headers: bearer(ADMIN) })).status).toBe(200);
  });

  it('wrong admin tokens count too, and the limit is visible in /metrics', async () => {
    const other = { localAddress: '127.0.0.3' };
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await raw(svc.port, { ...other, path: '/api/v1/schema/list', headers: bearer(`wrong-${i}`) })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const m = await raw(svc.port, { path: '/metrics', headers: bearer(ADMIN) });
    expect(m.text).toMatch(/^edge_http_auth_failures_total 1[0-9]$/m);
    expect(m.text).toMatch(/^edge_http_auth_throttled_total [3-9]$/m);
    expect(m.text).toMatch(/^edge_http_auth_throttle_addresses 2$/m);
  });
});

describe('push tokens are checked before the body is read', () => {
  let svc: Service;
  let inend: string;
  beforeAll(async () => {
    svc = await startService({ logLevel: 'silent' });
    const created = await raw(svc.port, {
      method: 'POST',
      path: '/api/v1/inends/create',
      headers: { ...bearer(ADMIN), 'Content-Type': 'application/json' },
      body: JSON.stringify({ name: 'plc', type: 'HTTP', description: '' }),
    });
    inend = created.body.data.uuid;
  }, 30_000);
  afterAll(async () => svc?.close());

  /** Sends the headers of a 4 MiB push and 10 bytes of its body; resolves with the status line. */
  function pushHeadersOnly(path: string, token: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(svc.port, '127.0.0.1', () => {
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Length: ${4 * 1024 * 1024}\r\n\r\n0123456789`);
      });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error('no answer while the body was incomplete'));
      }, 5000);
      socket.once('data', (d: Buffer) => {
        clearTimeout(timer);
        socket.destroy();
        resolve(d.toString('latin1').split('\r\n')[0]);
      });
      socket.once('error', reject);
    });
  }

  it('two Authorization headers with different values are refused with 400; repeated equal ones pass', async () => {
    const ask = (headers: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = net.connect(svc.port, '127.0.0.1', () => socket.write(`GET /api/v1/schema/list HTTP/1.1\r\nHost: x\r\n${headers}\r\n`));
        socket.once('data', (d: Buffer) => {
          socket.destroy();
          resolve(d.toString('latin1'));
        });
        socket.once('error', reject);
      });
    const two = await ask(`Authorization: Bearer ${ADMIN}\r\nAuthorization: Bearer someone-else\r\n`);
    expect(two.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(two).toContain('two authorization headers with different values');
    expect((await ask(`Authorization: Bearer ${ADMIN}\r\nAuthorization: Bearer ${ADMIN}\r\n`)).split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('a wrong token and an unknown input are answered 401 at once, without waiting for the body', async () => {
    expect(await pushHeadersOnly(`/api/v1/inends/push?uuid=${inend}`, 'not-a-token')).toBe('HTTP/1.1 401 Unauthorized');
    expect(await pushHeadersOnly('/api/v1/inends/push?uuid=INEND22222222', 'not-a-token')).toBe('HTTP/1.1 401 Unauthorized');
  });
});
