/**
 * Contract 9, push acknowledgement, through the real CLI: under `interval` a push answers as soon as its
 * records are stored and visible (not after the sync, `data.durable: false`); `wait=durable` waits for
 * the sync that covers them (`durable: true`); under `always` every push is durable; `wait` takes only
 * `durable`. A client pushing one payload at a time is not held by the sync interval.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SECRET, call, configIn, lastData, payload, setupPipeline, startService } from './support/service.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-push-ack-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const SYNC_INTERVAL_MS = 3000;

function push(base: string, p: { inend: string; token: string }, line: string, query = '') {
  return call(base, `/api/v1/inends/push?uuid=${p.inend}${query}`, { method: 'POST', token: p.token, body: line });
}

describe('push acknowledgement (contract 9)', () => {
  it(`interval (${SYNC_INTERVAL_MS} ms): answers at once, visible, durable false; wait=durable waits for the sync`, async () => {
    const { file } = configIn(tmp, 'interval', { store: { sync: 'interval', sync_interval_ms: SYNC_INTERVAL_MS } });
    const svc = await startService(file);
    try {
      const p = await setupPipeline(svc.base, 'ack');
      const t0 = performance.now();
      const n = 50;
      for (let i = 1; i <= n; i++) {
        const r = await push(svc.base, p, payload(i, i, 0, 1));
        expect(r.status, r.text).toBe(200);
        expect(r.body.data).toMatchObject({ accepted: 1, failed: 0, durable: false });
      }
      const ms = performance.now() - t0;
      expect(ms, `${n} sequential pushes took ${Math.round(ms)} ms`).toBeLessThan(SYNC_INTERVAL_MS);
      expect((await lastData(svc.base, p.model)).temp).toBe(n);

      const t1 = performance.now();
      const waited = await push(svc.base, p, payload(n + 1, n + 1, 0, 1), '&wait=durable');
      expect(waited.status, waited.text).toBe(200);
      expect(waited.body.data).toMatchObject({ accepted: 1, durable: true });
      expect(performance.now() - t1).toBeGreaterThan(5);

      const bad = await push(svc.base, p, payload(0, 0, 0, 1), '&wait=sync');
      expect(bad.status).toBe(400);
      expect(bad.body.msg).toContain("parameter 'wait' must be durable or absent");
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);

  it('always: every push is durable when answered', async () => {
    const { file } = configIn(tmp, 'always', { store: { sync: 'always' } });
    const svc = await startService(file);
    try {
      const p = await setupPipeline(svc.base, 'ack');
      const r = await push(svc.base, p, payload(1, 1, 0, 1));
      expect(r.body.data).toMatchObject({ accepted: 1, durable: true });
      const q = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${p.model}&secrets=${SECRET}`, { token: null });
      expect(q.body.data.temp).toBe(1);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);
});
