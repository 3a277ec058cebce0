/**
 * Contract 9 under `sync = none`, through the real CLI: nothing syncs by itself, so a plain push answers
 * `durable: false` without any fdatasync, and a push with `wait=durable` has the records it wrote
 * fdatasync'ed before it answers `durable: true`. The store's fsync histogram in /metrics counts the
 * fdatasyncs of each model's segment files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call, configIn, payload, setupPipeline, startService } from './support/service.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-push-ack-none-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function push(base: string, p: { inend: string; token: string }, line: string, query = '') {
  return call(base, `/api/v1/inends/push?uuid=${p.inend}${query}`, { method: 'POST', token: p.token, body: line });
}

/** How many fdatasyncs of `model`'s segment files /metrics has counted. */
async function fsyncCount(base: string, model: string): Promise<number> {
  const r = await call(base, '/metrics');
  expect(r.status).toBe(200);
  const m = new RegExp(`^edge_store_fsync_seconds_count\\{model="${model}"\\} (\\d+)$`, 'm').exec(r.text);
  return m === null ? 0 : Number(m[1]);
}

describe('push acknowledgement under sync = none (contract 9)', () => {
  it('a plain push does not sync; wait=durable fdatasyncs the model it wrote and answers durable: true', async () => {
    const { file } = configIn(tmp, 'none', { store: { sync: 'none' } });
    const svc = await startService(file);
    try {
      const p = await setupPipeline(svc.base, 'none');
      const before = await fsyncCount(svc.base, p.model);
      const plain = await push(svc.base, p, payload(1, 1, 0, 1));
      expect(plain.status, plain.text).toBe(200);
      expect(plain.body.data).toMatchObject({ accepted: 1, failed: 0, durable: false });
      expect(await fsyncCount(svc.base, p.model)).toBe(before);

      const waited = await push(svc.base, p, payload(2, 2, 0, 1), '&wait=durable');
      expect(waited.status, waited.text).toBe(200);
      expect(waited.body.data).toMatchObject({ accepted: 1, failed: 0, durable: true });
      expect(await fsyncCount(svc.base, p.model)).toBeGreaterThan(before);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);
});
