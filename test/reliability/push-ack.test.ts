/**
 * Contract 9, push acknowledgement, through the real CLI: under `interval` a push answers as soon as its
 * records are stored and visible (not after the sync, `data.durable: false`); `wait=durable` waits for
 * the sync that covers them (`durable: true`); under `always` every push is durable; `wait` takes only
 * `durable`. A client pushing one payload at a time is not held by the sync interval: its pushes are
 * answered many times between two fdatasyncs (counted from /metrics, not timed, so a busy machine that
 * stretches every push changes nothing).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN, SECRET, call, configIn, lastData, payload, setupPipeline, startService } from './support/service.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-push-ack-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const SYNC_INTERVAL_MS = 3000;

/** fdatasync calls on the model's segment files so far (the edge_store_fsync_seconds histogram's count). */
async function fsyncs(base: string, model: string): Promise<number> {
  const r = await call(base, '/metrics', { token: ADMIN });
  expect(r.status).toBe(200);
  const m = new RegExp(`^edge_store_fsync_seconds_count\\{model="${model}"\\} (\\d+)$`, 'm').exec(r.text);
  return m === null ? 0 : Number(m[1]);
}

function push(base: string, p: { inend: string; token: string }, line: string, query = '') {
  return call(base, `/api/v1/inends/push?uuid=${p.inend}${query}`, { method: 'POST', token: p.token, body: line });
}

describe('push acknowledgement (contract 9)', () => {
  it(`interval (${SYNC_INTERVAL_MS} ms): answers at once, visible, durable false; wait=durable waits for the sync`, async () => {
    const { file } = configIn(tmp, 'interval', { store: { sync: 'interval', sync_interval_ms: SYNC_INTERVAL_MS } });
    const svc = await startService(file);
    try {
      const p = await setupPipeline(svc.base, 'ack');
      const n = 50;
      const syncsBefore = await fsyncs(svc.base, p.model);
      for (let i = 1; i <= n; i++) {
        const r = await push(svc.base, p, payload(i, i, 0, 1));
        expect(r.status, r.text).toBe(200);
        expect(r.body.data).toMatchObject({ accepted: 1, failed: 0, durable: false });
      }
      // Sequential pushes that each waited for a sync would need a sync each: n of them at least.
      const syncs = (await fsyncs(svc.base, p.model)) - syncsBefore;
      expect(syncs, `fdatasyncs during ${n} sequential pushes`).toBeLessThan(n / 2);
      expect((await lastData(svc.base, p.model)).temp).toBe(n);

      const t1 = performance.now();
      const waited = await push(svc.base, p, payload(n + 1, n + 1, 0, 1), '&wait=durable');
      expect(waited.status, waited.text).toBe(200);
      expect(waited.body.data).toMatchObject({ accepted: 1, durable: true });
      expect(performance.now() - t1).toBeGreaterThan(5);
      // The sync it waited for is in the count (so the count above was read, not missing).
      expect(await fsyncs(svc.base, p.model)).toBeGreaterThan(syncsBefore + syncs);

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
