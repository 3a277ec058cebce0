/**
 * `[store] disk_reserve_bytes` end to end (contract 14): the real CLI with its data directory on a 16 MiB
 * tmpfs (mounted by the test: needs root; skipped with the reason otherwise) and a 4 MiB reserve. A filler
 * file takes free space below the reserve: within a few seconds pushes answer 503 naming the reserve,
 * /healthz is degraded, reads go on; once the filler is gone writes resume without a restart, and every
 * push answered 200 is stored.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, call, payload, pushNdjson, readAll, setupPipeline, sleep, startService, writeConfig, type Pipeline, type ServiceChild } from './support/service.mjs';
import { mountTmpfs } from './support/tmpfs.js';

const RESERVE_BYTES = 4 * 1_048_576;
const disk = mountTmpfs('disk-reserve', 16);
const { root, mnt, skipReason } = disk;

/**
 * Polls `probe` every 100 ms until it returns true or `ms` pass; returns the time it took, or undefined.
 * `ms` is a ceiling (a busy machine only makes the wait longer), not the claim under test.
 */
async function within(ms: number, probe: () => Promise<boolean>): Promise<number | undefined> {
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    if (await probe()) return Date.now() - t0;
    await sleep(100);
  }
  return undefined;
}

describe.skipIf(skipReason !== undefined)('disk reserve (tmpfs 16 MiB, reserve 4 MiB)', () => {
  const filler = path.join(mnt, 'filler');
  let svc: ServiceChild;
  let pipeline: Pipeline;
  /** The seqs (stored as temp) of the lines answered stored: every line of a 200, the kept lines of a 503 (contract 19). */
  const acked = new Set<number>();
  let seq = 0;

  async function push(n: number): Promise<{ status: number; body?: { msg?: string } }> {
    const seqs = Array.from({ length: n }, () => ++seq);
    const a = await pushNdjson(
      svc.base,
      pipeline,
      seqs.map((s, i) => payload(s, s, i, 0)),
    );
    if (a.status === 200 && a.body?.data?.accepted === n) for (const s of seqs) acked.add(s);
    // A push the reserve stopped part way: the lines appended before are kept, and stored (contract 19).
    if (a.status === 503) for (const line of (a.body?.data?.kept ?? []) as number[]) acked.add(seqs[line - 1]);
    return a;
  }

  beforeAll(async () => {
    const { file } = writeConfig(root, {
      dataDir: path.join(mnt, 'data'),
      store: { sync: 'always', segment_bytes: 65536, disk_reserve_bytes: RESERVE_BYTES },
    });
    svc = await startService(file);
    pipeline = await setupPipeline(svc.base);
    for (let i = 0; i < 3; i++) expect((await push(50)).status).toBe(200);
  }, 180_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
    disk.dispose();
  });

  it('below the reserve: pushes get 503 naming it, /healthz is degraded, reads go on', async () => {
    const st = fs.statfsSync(mnt);
    fs.writeFileSync(filler, Buffer.alloc(st.bavail * st.bsize - RESERVE_BYTES + 1_048_576));
    let refusal: { status: number; body?: { msg?: string } } | undefined;
    const ms = await within(60_000, async () => {
      const a = await push(10);
      if (a.status !== 503) return false;
      refusal = a;
      return true;
    });
    expect(ms, 'pushes refused').toBeDefined();
    expect(refusal?.body?.msg).toMatch(/store read-only for model .*: free disk \d+ MiB is below the reserve of 4 MiB \(\[store\] disk_reserve_bytes\)/);
    const health = await call(svc.base, '/healthz', { token: null });
    expect(health.body.data.status).toBe('degraded');
    expect(health.body.data.reasons.join(' ')).toContain('below the reserve');
    const last = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${pipeline.model}&secrets=${SECRET}`, { token: null });
    expect(last.status).toBe(200);
  }, 120_000);

  it('space back: writes resume without a restart, and every push answered 200 is stored', async () => {
    fs.rmSync(filler);
    const ms = await within(60_000, async () => (await push(10)).status === 200);
    expect(ms, 'writes resume without a restart').toBeDefined();
    expect((await call(svc.base, '/healthz', { token: null })).body.data.status).toBe('ok');
    const stored = await readAll(svc.base, pipeline.model);
    expect(stored.records.map((r) => r.temp)).toEqual([...acked].sort((x, y) => x - y));
  }, 120_000);
});
