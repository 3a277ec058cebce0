/**
 * Credentials: constant-time comparison (functionally: every configured value works, near misses and
 * other lengths do not), and wrong credentials are slowed down per address and credential kind (429 with
 * Retry-After) while right ones keep getting 200, from any address including the throttled one. All
 * clients are on loopback: 127.0.0.2 is "another address" (Linux routes all of 127/8 to lo).
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SecretSet } from '../../src/http/guards/auth.js';
import { TooManyRequestsError } from '../../src/errors.js';
import { AuthThrottle, type CredentialKind, THROTTLE_WINDOW_MAX_S } from '../../src/http/guards/throttle.js';
import { admin, bearer, publishedModel, raw } from '../support/client.js';
import { ADMIN, SECRET, type TestService, startService } from '../support/service.js';

describe('SecretSet (constant-time comparison, functionally)', () => {
  it('accepts every configured value and nothing else', () => {
    const set = new SecretSet(['alpha-secret', 'b', '', 'ünïcode-秘密']);
    for (const ok of ['alpha-secret', 'b', 'ünïcode-秘密']) expect(set.matches(ok)).toBe(true);
    for (const bad of ['', undefined, 'alpha-secreT', 'alpha-secret ', 'alpha', 'alpha-secret-longer', 'B', 'ünïcode-秘', 'x'.repeat(10_000)]) {
      expect(set.matches(bad)).toBe(false);
    }
    expect(new SecretSet(['']).matches('')).toBe(false);
  });

  it('compares every code unit of values longer than one block of compared units', () => {
    const long = `${'s'.repeat(100)}-end`;
    const set = new SecretSet([long, 'short']);
    expect(set.matches(long)).toBe(true);
    expect(set.matches('short')).toBe(true);
    for (const bad of [`${'s'.repeat(100)}-enD`, `${long}x`, long.slice(0, 64), long.slice(0, -1), 'shor', 'short\u0000']) {
      expect(set.matches(bad)).toBe(false);
    }
  });

  it('tells apart strings that are the same once encoded as UTF-8 (a lone surrogate and U+FFFD)', () => {
    const set = new SecretSet(['key-\uFFFD']);
    expect(set.matches('key-\uFFFD')).toBe(true);
    expect(set.matches('key-\uD800')).toBe(false);
  });

  it('takes about the same time for a near miss, a far miss and a hit of the same length (no early exit)', () => {
    const secret = 'k'.repeat(64);
    const set = new SecretSet([secret, 'other']);
    const time = (candidate: string): number => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 5_000; i++) set.matches(candidate);
      return Number(process.hrtime.bigint() - t0);
    };
    time(secret); // warm up
    // The fastest of interleaved rounds: a busy machine only ever adds time, never removes it, so each
    // fastest only comes closer to the true cost with more rounds. At least 7, more (up to 100) while the
    // ratios are out of bounds: an early exit stays out however many rounds run.
    const best = { hit: Infinity, near: Infinity, far: Infinity };
    const within = (r: number): boolean => r > 0.33 && r < 3;
    for (let round = 0; round < 7 || (round < 100 && !(within(best.near / best.hit) && within(best.far / best.hit))); round++) {
      best.hit = Math.min(best.hit, time(secret));
      best.near = Math.min(best.near, time(`${'k'.repeat(63)}x`));
      best.far = Math.min(best.far, time('z'.repeat(64)));
    }
    const { hit, near, far } = best;
    // Generous bounds: this only catches an early-exit comparison, not nanosecond leaks.
    expect(near / hit).toBeGreaterThan(0.33);
    expect(near / hit).toBeLessThan(3);
    expect(far / hit).toBeGreaterThan(0.33);
    expect(far / hit).toBeLessThan(3);
  });

  it("takes about the same time whatever the configured value's length (a candidate of any length)", () => {
    const short = new SecretSet(['k']);
    const long = new SecretSet(['k'.repeat(60)]);
    const time = (set: SecretSet, candidate: string): number => {
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < 5_000; i++) set.matches(candidate);
      return Number(process.hrtime.bigint() - t0);
    };
    for (const candidate of ['k', 'k'.repeat(30), 'k'.repeat(60)]) {
      time(short, candidate); // warm up
      time(long, candidate);
      // As above: at least 7 rounds, more (up to 100) while the ratio is out of bounds.
      const best = { short: Infinity, long: Infinity };
      const within = (r: number): boolean => r > 0.33 && r < 3;
      for (let round = 0; round < 7 || (round < 100 && !within(best.long / best.short)); round++) {
        best.short = Math.min(best.short, time(short, candidate));
        best.long = Math.min(best.long, time(long, candidate));
      }
      expect(best.long / best.short).toBeGreaterThan(0.33);
      expect(best.long / best.short).toBeLessThan(3);
    }
  });
});

describe('AuthThrottle (token bucket per address and credential kind)', () => {
  /** 401 (undefined) or the Retry-After of the 429 that one more wrong credential gets. */
  const failOnce = (t: AuthThrottle, address: string, kind: CredentialKind): number | undefined => {
    try {
      t.fail(address, kind);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(TooManyRequestsError);
      return (err as TooManyRequestsError).retryAfterS;
    }
  };

  it('allows perMinute failures, then answers 429 to wrong ones of that kind from that address only', () => {
    let now = 1_000_000;
    const t = new AuthThrottle(3, 100, () => now);
    for (let i = 0; i < 3; i++) expect(failOnce(t, 'a', 'data-secret')).toBeUndefined();
    expect(t.retryAfterS('a', 'data-secret')).toBe(20); // one token per 20 s at 3/min
    expect(failOnce(t, 'a', 'data-secret')).toBe(40); // over the limit, and it still costs a token
    expect(t.retryAfterS('a', 'admin-token')).toBe(0);
    expect(failOnce(t, 'a', 'admin-token')).toBeUndefined();
    expect(t.retryAfterS('b', 'data-secret')).toBe(0);
    now += 40_000;
    expect(t.retryAfterS('a', 'data-secret')).toBe(0);
    expect(failOnce(t, 'a', 'data-secret')).toBeUndefined();
    now += 60_000;
    expect(t.retryAfterS('a', 'data-secret')).toBe(0);
    expect(t.retryAfterS('a', 'admin-token')).toBe(0);
    expect(t.size).toBe(0); // refilled entries are dropped
    expect(t.failures).toBe(6);
    expect(t.refused).toBe(1);
  });

  it('a client that ignores Retry-After extends its own window, up to THROTTLE_WINDOW_MAX_S', () => {
    const now = 1_000_000;
    const t = new AuthThrottle(20, 100, () => now);
    for (let i = 0; i < 20; i++) t.fail('a', 'push-token');
    const waits: number[] = [];
    for (let i = 0; i < 1000; i++) waits.push(failOnce(t, 'a', 'push-token') as number);
    expect(waits[0]).toBe(6); // tokens -1: two tokens short at one per 3 s
    expect(waits[20]).toBe(66);
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeGreaterThanOrEqual(waits[i - 1]);
    expect(Math.max(...waits)).toBe(THROTTLE_WINDOW_MAX_S);
  });

  it('keeps the table bounded, forgetting the least recently failing address', () => {
    const t = new AuthThrottle(1, 50);
    for (let i = 0; i < 1000; i++) failOnce(t, `10.0.${i >> 8}.${i & 255}`, 'admin-token');
    expect(t.size).toBe(50);
    expect(t.retryAfterS('10.0.3.231', 'admin-token')).toBeGreaterThan(0); // the last one is kept
    expect(t.retryAfterS('10.0.0.0', 'admin-token')).toBe(0); // the first one was forgotten
  });

  it('0 disables it', () => {
    const t = new AuthThrottle(0);
    for (let i = 0; i < 100; i++) expect(failOnce(t, 'a', 'data-secret')).toBeUndefined();
    expect(t.retryAfterS('a', 'data-secret')).toBe(0);
    expect(t.failures).toBe(100);
  });
});

describe('throttling over HTTP: only wrong credentials are slowed down, never a right one', () => {
  let svc: TestService;
  let model: string;
  let inend: string;
  let pushToken: string;
  beforeAll(async () => {
    svc = await startService({ ini: { 'plugin.http_server': ['auth_failures_per_minute = 5'] } });
    model = await publishedModel(svc.port, 'throttled', ['temp']);
    const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' });
    inend = created.body.data.uuid;
    pushToken = created.body.data.token;
  }, 30_000);
  afterAll(async () => svc?.close());

  const attacker = { localAddress: '127.0.0.2' };
  const secretAt = (where: { localAddress?: string }, secret: string): Promise<{ status: number }> =>
    raw(svc.port, { ...where, path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${encodeURIComponent(secret)}` });
  const adminAt = (where: { localAddress?: string }, token: string): Promise<{ status: number }> =>
    raw(svc.port, { ...where, path: '/api/v1/schema/list', headers: bearer(token) });
  const pushAt = (where: { localAddress?: string }, token: string): Promise<{ status: number }> =>
    raw(svc.port, {
      ...where,
      method: 'POST',
      path: `/api/v1/inends/push?uuid=${inend}`,
      headers: { ...bearer(token), 'Content-Type': 'application/json' },
      body: '{"v":1}',
    });

  it('wrong secrets: 401 up to the limit, then 429 with Retry-After; the right secret and token there still pass', async () => {
    for (let i = 0; i < 5; i++) {
      expect((await secretAt(attacker, `guess${i}`)).status).toBe(401);
      expect((await secretAt({}, SECRET)).status).toBe(200); // another address is unaffected all along
    }
    const throttled = await raw(svc.port, { ...attacker, path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=guess6` });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(throttled.body).toEqual({ code: 429, msg: expect.stringMatching(/too many wrong credentials \(data-secret\)/), data: null });
    // From the throttled address itself, the right secret and the right admin and push tokens pass...
    expect((await secretAt(attacker, SECRET)).status).toBe(200);
    expect((await adminAt(attacker, ADMIN)).status).toBe(200);
    expect((await pushAt(attacker, pushToken)).status).toBe(200);
    // ...and wrong credentials of another kind are counted apart: 401, not 429.
    expect((await adminAt(attacker, 'wrong-admin')).status).toBe(401);
    expect((await pushAt(attacker, 'wrong-push')).status).toBe(401);
    // Paths without credentials are not throttled.
    expect((await raw(svc.port, { ...attacker, path: '/healthz' })).status).toBe(200);
  });

  it('interleaved with ongoing wrong ones, the right secret and admin token from the same address get 200 every time', async () => {
    const shared = { localAddress: '127.0.0.4' }; // one address for all, as behind a reverse proxy
    for (let i = 0; i < 10; i++) await secretAt(shared, `flood${i}`);
    for (let i = 0; i < 10; i++) await adminAt(shared, `flood${i}`);
    const right: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 20; i++) {
      wrong.push((await secretAt(shared, `again${i}`)).status);
      right.push((await secretAt(shared, SECRET)).status);
      wrong.push((await adminAt(shared, `again${i}`)).status);
      right.push((await adminAt(shared, ADMIN)).status);
    }
    expect(right).toEqual(new Array(40).fill(200));
    expect(wrong).toEqual(new Array(40).fill(429));
  });

  it('correct credentials are never counted: a busy correct client is not slowed down', async () => {
    for (let i = 0; i < 50; i++) expect((await adminAt({}, ADMIN)).status).toBe(200);
    // missing credentials are not counted either
    for (let i = 0; i < 10; i++) expect((await raw(svc.port, { path: '/api/v1/schema/list' })).status).toBe(401);
    expect((await adminAt({}, 'one-typo')).status).toBe(401);
  });

  it('wrong admin tokens count too, /metrics shares their bucket, and the counters are in /metrics', async () => {
    const other = { localAddress: '127.0.0.3' };
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await adminAt(other, `wrong-${i}`)).status);
    for (let i = 0; i < 3; i++) statuses.push((await raw(svc.port, { ...other, path: '/metrics', headers: bearer(`wrong-m${i}`) })).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    const m = await raw(svc.port, { ...other, path: '/metrics', headers: bearer(ADMIN) });
    expect(m.status).toBe(200);
    // 8 + 60 + 1 + 7 wrong credentials; 1 + (10 + 40) + 2 answered 429
    expect(m.text).toMatch(/^edge_http_auth_failures_total 76$/m);
    expect(m.text).toMatch(/^edge_http_auth_throttled_total 53$/m);
    // (127.0.0.2, 127.0.0.4) x (data secret, admin token), 127.0.0.2 push token, 127.0.0.1 and 127.0.0.3 admin token
    expect(m.text).toMatch(/^edge_http_auth_throttle_addresses 7$/m);
  });
});

describe('push tokens are checked before the body is read', () => {
  let svc: TestService;
  let inend: string;
  beforeAll(async () => {
    svc = await startService({ logLevel: 'silent' });
    const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' });
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
      }, 30_000); // the body never completes: any answer came before it; the ceiling only ends a hang
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
