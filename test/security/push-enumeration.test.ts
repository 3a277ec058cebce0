/**
 * Push enumeration: `POST /api/v1/inends/push` answers an unknown input exactly as it answers a wrong
 * token for an existing one (status, headers but the date, body), both count towards the throttle, and
 * both are throttled alike, so input ids cannot be probed. Each part uses its own loopback address
 * (Linux routes all of 127/8 to lo), so the throttle of one part does not touch another.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, bearer, raw, type RawAnswer } from '../support/client.js';
import { type TestService, startService } from '../support/service.js';

const FAILURES_PER_MINUTE = 4;

let svc: TestService;
let known: string;

async function createInput(name: string): Promise<string> {
  const r = await admin(svc.port, 'POST', '/api/v1/inends/create', { name, type: 'HTTP', description: '' });
  expect(r.status, r.text).toBe(200);
  return r.body.data.uuid;
}

function push(uuid: string, localAddress: string, token = 'a-wrong-token'): Promise<RawAnswer> {
  return raw(svc.port, {
    method: 'POST',
    path: `/api/v1/inends/push?uuid=${uuid}`,
    headers: { ...bearer(token), 'Content-Type': 'application/json' },
    body: '{"t1":1}',
    localAddress,
  });
}

/** Everything a client sees, but the date (and the uuid it sent, when `uuid` is given). */
function seen(r: RawAnswer, uuid?: string): { status: number; headers: Record<string, unknown>; body: string } {
  const { date: _date, ...headers } = r.headers;
  return { status: r.status, headers, body: uuid === undefined ? r.text : r.text.replaceAll(uuid, '<uuid>') };
}

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent', ini: { 'plugin.http_server': [`auth_failures_per_minute = ${FAILURES_PER_MINUTE}`] } });
  known = await createInput('known');
}, 60_000);

afterAll(async () => svc?.close());

describe('push enumeration', () => {
  it('the same request gets the same answer before and after its input is deleted', async () => {
    const doomed = await createInput('doomed');
    const before = await push(doomed, '127.0.0.2');
    expect(before.status).toBe(401);
    expect((await admin(svc.port, 'DELETE', `/api/v1/inends/del?uuid=${doomed}`)).status).toBe(200);
    const after = await push(doomed, '127.0.0.2');
    expect(seen(after)).toEqual(seen(before));
    expect(before.body).toEqual({ code: 401, msg: `wrong push token for input ${doomed} (or no such input)`, data: null });
  });

  it('an unknown input and a wrong token for a known one: same answers, counted and throttled alike', async () => {
    const unknown = 'INEND22222222';
    const wrongToken: RawAnswer[] = [];
    const noInput: RawAnswer[] = [];
    for (let i = 0; i < FAILURES_PER_MINUTE + 2; i++) {
      wrongToken.push(await push(known, '127.0.0.3'));
      noInput.push(await push(unknown, '127.0.0.4'));
    }
    const statuses = [...Array(FAILURES_PER_MINUTE).fill(401), 429, 429];
    expect(wrongToken.map((r) => r.status)).toEqual(statuses);
    expect(noInput.map((r) => r.status)).toEqual(statuses);
    for (let i = 0; i < FAILURES_PER_MINUTE; i++) expect(seen(noInput[i], unknown)).toEqual(seen(wrongToken[i], known));
    for (const i of [FAILURES_PER_MINUTE, FAILURES_PER_MINUTE + 1]) {
      // Retry-After counts seconds down from each address's own failures: compared as present, not equal.
      const { 'retry-after': a, ...wrongHeaders } = seen(wrongToken[i]).headers;
      const { 'retry-after': b, ...unknownHeaders } = seen(noInput[i]).headers;
      expect(Number(a)).toBeGreaterThanOrEqual(1);
      expect(Number(b)).toBeGreaterThanOrEqual(1);
      expect(unknownHeaders).toEqual(wrongHeaders);
      expect(noInput[i].body).toEqual({ code: 429, msg: expect.stringMatching(/^too many wrong credentials \(push-token\) from this address/), data: null });
      expect(noInput[i].body.code).toBe(wrongToken[i].body.code);
    }
  });

  it('the right token still works from a clean address', async () => {
    const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'works', type: 'HTTP', description: '' });
    const r = await push(created.body.data.uuid, '127.0.0.5', created.body.data.token);
    expect(r.status, r.text).toBe(200);
  });
});
