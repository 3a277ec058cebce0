/**
 * Disk full, end to end: the real CLI with its data directory on an 8 MiB tmpfs (mounted by the test:
 * needs root and a working `mount`; skipped with the reason printed otherwise), `sync = always`,
 * RHILEX's sample rule storing pushed NDJSON. A filler file on the same tmpfs leaves ~192 KiB; pushes
 * run until the store hits ENOSPC. Then: a push answers 503 with a clear message, reads keep working,
 * deleting the filler lets writes resume, and every push answered 200 is stored (before and after a
 * restart).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  checkStore,
  lastData,
  newPushState,
  payload,
  pushNdjson,
  readAll,
  SECRET,
  setupPipeline,
  sleep,
  startService,
  writeConfig,
  type Answer,
  type Pipeline,
  type ServiceChild,
} from './support/service.mjs';
import { mountTmpfs } from './support/tmpfs.js';

/**
 * How long a push's answer is waited for while the disk stays full: a ceiling, long enough for a busy
 * machine. An answer that comes within it came while the disk was full, so the push did not wait for
 * space; one that hangs until the filler goes would not come.
 */
const ANSWER_WAIT_MS = 60_000;

const disk = mountTmpfs('disk-full', 8);
const { root, mnt, skipReason } = disk;

describe.skipIf(skipReason !== undefined)('disk full (tmpfs 8 MiB)', () => {
  const state = newPushState();
  const filler = path.join(mnt, 'filler');
  let file: string;
  let svc: ServiceChild;
  let pipeline: Pipeline;
  /** Pushes that got no answer within ANSWER_WAIT_MS (still running: awaited after space returns). */
  const late: Array<{ pushNo: number; answer: Promise<Answer> }> = [];
  /** First push answer that was not a clean 200 once the disk filled. */
  let firstRefusal: Answer | undefined;

  /** Sends one push of `n` lines; marks it acked when answered 200 with every line accepted. */
  function send(n: number): { pushNo: number; answer: Promise<Answer> } {
    const pushNo = state.nextPush++;
    const seqs = Array.from({ length: n }, () => state.nextSeq++);
    const push = { seqs, acked: false };
    state.pushes.set(pushNo, push);
    const answer = pushNdjson(svc.base, pipeline, seqs.map((seq, i) => payload(seq, pushNo, i, 0))).then((a) => {
      if (a.status === 200 && a.body?.data?.accepted === n && a.body?.data?.failed === 0) push.acked = true;
      return a;
    });
    return { pushNo, answer };
  }

  async function sendAndWait(n: number): Promise<Answer | undefined> {
    const p = send(n);
    const a = await Promise.race([p.answer, sleep(ANSWER_WAIT_MS).then(() => undefined)]);
    if (a === undefined) late.push(p);
    return a;
  }

  beforeAll(async () => {
    ({ file } = writeConfig(root, { dataDir: path.join(mnt, 'data'), store: { sync: 'always', segment_bytes: 65536, disk_reserve_bytes: 0, compact_sealed: 'off' } }));
    svc = await startService(file);
    pipeline = await setupPipeline(svc.base);
    for (let i = 0; i < 5; i++) expect((await sendAndWait(100))?.status).toBe(200);
    const st = fs.statfsSync(mnt);
    fs.writeFileSync(filler, Buffer.alloc(Math.max(0, st.bavail * st.bsize - 192 * 1024)));
    // ~70 bytes per record on disk: 192 KiB is full after ~2,800 records; give it up to 20,000.
    for (let i = 0; i < 200; i++) {
      const a = await sendAndWait(100);
      if (a === undefined || a.status !== 200 || a.body?.data?.failed !== 0) {
        firstRefusal = a;
        break;
      }
    }
    if (firstRefusal === undefined && late.length === 0) throw new Error('the disk never filled: 20,000 records fit in ~192 KiB?');
  }, 600_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
    disk.dispose();
  });

  it('a push while the disk is full answers 503 with a message naming the cause', async () => {
    const a = await sendAndWait(10);
    expect(a, 'no answer while the disk is full').toBeDefined();
    expect(a!.status, a!.text).toBe(503);
    expect(a!.body?.msg).toMatch(/read-only|disk full|ENOSPC/i);
    expect(a!.headers?.get('retry-after')).toMatch(/^\d+$/);
  }, 120_000);

  it('every push made while the disk fills is answered while it is full (none left hanging)', () => {
    expect(late.map((p) => p.pushNo), 'pushes without an answer').toEqual([]);
  });

  it('reads keep working while the disk is full', async () => {
    const last = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${pipeline.model}&secrets=${SECRET}`, { token: null });
    expect(last.status, last.text).toBe(200);
    expect(last.body.data.id).toBeGreaterThan(500);
    const page = await call(svc.base, `/api/v1/datacenter/queryDataList?uuid=${pipeline.model}&secrets=${SECRET}&size=100&current=2`, {
      token: null,
    });
    expect(page.status, page.text).toBe(200);
    expect(page.body.data.records).toHaveLength(100);
    const acked = [...state.pushes.values()].filter((p) => p.acked).reduce((n, p) => n + p.seqs.length, 0);
    expect(page.body.data.total).toBeGreaterThanOrEqual(acked);
  });

  it('/healthz is degraded, naming the model and since when it is read-only', async () => {
    const health = await call(svc.base, '/healthz', { token: null });
    expect(health.body.data.status).toBe('degraded');
    expect(health.body.data.reasons).toEqual([
      expect.stringMatching(new RegExp(`^model water \\(${pipeline.model}\\) is read-only since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z: .*ENOSPC`)),
    ]);
  });

  it('writes resume once space returns, and every push answered 200 is stored', async () => {
    fs.rmSync(filler);
    let resumed: Answer | undefined;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      resumed = await sendAndWait(50);
      if (resumed?.status === 200 && resumed.body?.data?.failed === 0) break;
      await sleep(250);
    }
    expect(resumed?.status, resumed?.text).toBe(200);
    expect(resumed?.body?.data).toMatchObject({ accepted: 50, failed: 0 });
    // Pushes that were waiting for the disk are answered now.
    const waited = await Promise.all(late.map((p) => Promise.race([p.answer, sleep(ANSWER_WAIT_MS).then(() => undefined)])));
    expect(waited.filter((a) => a === undefined)).toHaveLength(0);
    for (let i = 0; i < 5; i++) expect((await sendAndWait(100))?.status).toBe(200);
    const check = checkStore(await readAll(svc.base, pipeline.model), await lastData(svc.base, pipeline.model), state.pushes);
    expect(check.problems).toEqual([]);
    expect(check.ackedRecords).toBeGreaterThan(3000);
  }, 300_000);

  it('after a restart nothing answered 200 is missing', async () => {
    const exit = await svc.kill('SIGTERM');
    expect(exit).toEqual({ code: 0, signal: null });
    svc = await startService(file);
    const check = checkStore(await readAll(svc.base, pipeline.model), await lastData(svc.base, pipeline.model), state.pushes);
    expect(check.problems).toEqual([]);
    expect((await sendAndWait(10))?.status).toBe(200);
  }, 120_000);
});
