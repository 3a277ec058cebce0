/**
 * I/O faults in a running service, end to end: the real CLI (`sync = always`, 64 KiB segments so seals
 * happen during faults) runs under libfiu's POSIX preload (`fiu-run -x`), and while 16 clients push NDJSON
 * the test turns failure points on and off with `fiu-ctrl`: every pwrite/pwritev failing with EIO, half
 * of the fdatasyncs failing with EIO, a single pwrite and a single pwritev failing with ENOSPC, short writes. The clients act
 * on the answers: a 200 means every line is stored; a 503 lists the lines kept in `data.kept`, and the
 * client resends exactly the others. Checks: every line answered stored or kept is there once, intact;
 * no line called failed is stored except by its resend; every record once in the end; `/healthz` says
 * degraded while the store is read-only; writable again without a restart (time measured per fault);
 * and a kill -9 during a fault loses no acknowledged record.
 *
 * Needs `fiu-run`/`fiu-ctrl` (Debian: fiu-utils) on Linux; skipped with the reason printed otherwise.
 * libuv's file writes go through glibc's pwrite/pwritev and fdatasync, which the preload wraps;
 * UV_USE_IO_URING=0 keeps them off io_uring, which it could not see.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  call,
  payload,
  pushNdjson,
  readAll,
  sleep,
  startService,
  writeConfig,
  type Pipeline,
  setupPipeline,
  type ServiceChild,
  type StoredRecord,
} from './support/service.mjs';

const run = promisify(execFile);
const PUSHERS = 16;
const EIO = 5;
const ENOSPC = 28;

function fiuMissing(): string | undefined {
  if (process.platform !== 'linux') return `not linux (${process.platform})`;
  for (const tool of ['fiu-run', 'fiu-ctrl']) {
    const r = spawnSync(tool, ['-h'], { encoding: 'utf8' });
    if (r.error) return `${tool} not found (apt-get install fiu-utils)`;
  }
  if (!fs.existsSync('/usr/lib/fiu/fiu_posix_preload.so')) return 'libfiu POSIX preload missing (/usr/lib/fiu/fiu_posix_preload.so)';
  return undefined;
}

const skipReason = fiuMissing();
if (skipReason) console.warn(`libfiu fault tests skipped: ${skipReason}`);

type LineState = 'sent' | 'acked' | 'kept' | 'failed' | 'unknown';

/** What the clients were told about each line (by sequence number) and what they sent. */
class Clients {
  readonly lines = new Map<number, LineState>();
  /** pushNo -> the seqs of its lines, to check each stored record against the push that carried it. */
  readonly pushes = new Map<number, number[]>();
  readonly problems: string[] = [];
  readonly answers = { ok: 0, unavailable: 0, other: 0 };
  nextSeq = 1;
  nextPush = 1;
  /** Set when a fault ends: the first push sent after it and answered 200 in full marks `writableAt`. */
  faultEndedAt: number | undefined;
  writableAt: number | undefined;
  /** A 503 answered since the flag was last cleared. */
  saw503 = false;
  private stopped = false;
  private loops: Array<Promise<void>> = [];

  constructor(
    private readonly base: () => string,
    private readonly pipeline: Pipeline,
  ) {}

  problem(m: string): void {
    if (this.problems.length < 30) this.problems.push(m);
  }

  start(round: number): void {
    this.stopped = false;
    this.loops = Array.from({ length: PUSHERS }, (_, k) => this.loop(k, round));
  }

  /** New lines stop; each client resends what it was told failed until it is stored (or gives up at the deadline). */
  async stop(deadlineMs = 120_000): Promise<void> {
    this.stopped = true;
    const deadline = Date.now() + deadlineMs;
    await Promise.race([Promise.all(this.loops), sleep(deadlineMs)]);
    if (Date.now() >= deadline) this.problem('clients still resending at the deadline');
  }

  private async loop(k: number, round: number): Promise<void> {
    const resend: number[] = [];
    let n = 1 + ((k * 7) % 40);
    while (!this.stopped || resend.length > 0) {
      const seqs = resend.length > 0 ? resend.splice(0, 50) : Array.from({ length: (n = (n % 40) + 1) }, () => this.nextSeq++);
      const pushNo = this.nextPush++;
      this.pushes.set(pushNo, seqs);
      for (const s of seqs) this.lines.set(s, 'sent');
      const sentAt = performance.now();
      const a = await pushNdjson(this.base(), this.pipeline, seqs.map((seq, i) => payload(seq, pushNo, i, round)));
      const d = a.body?.data;
      if (a.status === 200) {
        this.answers.ok++;
        if (d?.accepted !== seqs.length || d?.failed !== 0) {
          this.problem(`push ${pushNo}: 200 but ${a.text.slice(0, 200)}`);
          for (const s of seqs) this.lines.set(s, 'unknown');
          continue;
        }
        for (const s of seqs) this.lines.set(s, 'acked');
        if (this.faultEndedAt !== undefined && this.writableAt === undefined && sentAt >= this.faultEndedAt) this.writableAt = performance.now();
      } else if (a.status === 503) {
        this.answers.unavailable++;
        this.saw503 = true;
        if (!/^\d+$/.test(a.headers?.get('retry-after') ?? '')) this.problem(`push ${pushNo}: 503 without Retry-After`);
        const kept = new Set<number>(d?.kept ?? []);
        if (d != null && (d.accepted !== kept.size || d.accepted + d.failed !== seqs.length)) {
          this.problem(`push ${pushNo}: 503 counts do not add up: ${a.text.slice(0, 200)}`);
        }
        seqs.forEach((s, i) => {
          if (kept.has(i + 1)) this.lines.set(s, 'kept');
          else {
            this.lines.set(s, 'failed');
            resend.push(s);
          }
        });
        await sleep(100);
      } else if (a.status === 0) {
        for (const s of seqs) this.lines.set(s, 'unknown');
        return; // the service is gone (kill -9)
      } else {
        this.answers.other++;
        this.problem(`push ${pushNo}: HTTP ${a.status} ${a.text.slice(0, 200)}`);
        for (const s of seqs) this.lines.set(s, 'unknown');
      }
    }
  }

  /**
   * Each stored record is a line some push carried, intact; no line stored twice; every line answered
   * acked (and, unless `killed`, kept) stored; no line whose last answer was failed stored.
   */
  check(records: StoredRecord[], killed: boolean): { stored: number; lost: number; duplicated: number; corrupted: number; keptLost: number } {
    const seen = new Set<number>();
    let duplicated = 0;
    let corrupted = 0;
    for (const r of records) {
      const seq = r.temp;
      if (r.conductivity !== seq || this.pushes.get(r.resistivity)?.[r.dissolved_oxygen] !== seq) {
        corrupted++;
        this.problem(`id ${r.id} is no line that was pushed: ${JSON.stringify(r)}`);
        continue;
      }
      if (seen.has(seq)) {
        duplicated++;
        this.problem(`seq ${seq} stored twice`);
      }
      seen.add(seq);
      if (this.lines.get(seq) === 'failed') this.problem(`seq ${seq} was answered failed (not resent since) but is stored`);
    }
    let lost = 0;
    let keptLost = 0;
    for (const [seq, state] of this.lines) {
      if (seen.has(seq)) continue;
      if (state === 'acked') {
        lost++;
        this.problem(`seq ${seq} was answered 200 but is missing`);
      } else if (state === 'kept') {
        if (killed) keptLost++;
        else {
          lost++;
          this.problem(`seq ${seq} was answered kept but is missing`);
        }
      }
    }
    return { stored: seen.size, lost, duplicated, corrupted, keptLost };
  }

  count(state: LineState): number {
    let n = 0;
    for (const s of this.lines.values()) if (s === state) n++;
    return n;
  }
}

describe.skipIf(skipReason !== undefined)('libfiu I/O faults in a running service', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-fiu-'));
  const fifo = path.join(root, 'fiu-ctrl');
  let file: string;
  let svc: ServiceChild;
  let pipeline: Pipeline;
  let clients: Clients;
  const summary: string[] = [];

  const fiu = async (...commands: string[]): Promise<void> => {
    const args = ['-f', fifo, ...commands.flatMap((c) => ['-c', c]), String(svc.child.pid)];
    await run('fiu-ctrl', args, { timeout: 30_000 });
  };

  const start = (): Promise<ServiceChild> =>
    startService(file, { wrap: ['fiu-run', '-x', '-f', fifo], env: { UV_USE_IO_URING: '0' } });

  /**
   * Turns the fault on, keeps it for `holdMs` and until what `until` names was seen (a 503 answer, a
   * degraded /healthz: waited for, since a busy machine may push little in `holdMs`; the 60 s ceiling only
   * turns a fault that never shows into a failure), turns it off, waits until a push succeeds again.
   */
  async function phase(
    name: string,
    on: string[],
    off: string[],
    holdMs: number,
    until: { saw503?: boolean; degraded?: boolean } = {},
  ): Promise<{ writableMs: number | undefined; degraded: boolean }> {
    clients.saw503 = false;
    clients.faultEndedAt = undefined;
    clients.writableAt = undefined;
    const ackedBefore = clients.count('acked');
    await fiu(...on);
    const started = Date.now();
    let degraded = false;
    const seen = (): boolean => (until.saw503 !== true || clients.saw503) && (until.degraded !== true || degraded);
    while (Date.now() - started < holdMs || (!seen() && Date.now() - started < 60_000)) {
      const h = await call(svc.base, '/healthz', { token: null });
      if (h.body?.data?.status === 'degraded') degraded = true;
      await sleep(100);
    }
    if (off.length > 0) await fiu(...off);
    clients.faultEndedAt = performance.now();
    const deadline = Date.now() + 60_000;
    while (clients.writableAt === undefined && Date.now() < deadline) await sleep(20);
    const writableMs = clients.writableAt === undefined ? undefined : Math.round(clients.writableAt - clients.faultEndedAt);
    summary.push(
      `libfiu ${name}: records acknowledged ${clients.count('acked') - ackedBefore}, 503 answers ${clients.saw503 ? 'yes' : 'no'}, ` +
        `/healthz degraded ${degraded ? 'yes' : 'no'}, writable again after ${writableMs ?? '-'} ms`,
    );
    await sleep(300);
    return { writableMs, degraded };
  }

  beforeAll(async () => {
    ({ file } = writeConfig(root, { store: { sync: 'always', segment_bytes: 65536 } }));
    svc = await start();
    pipeline = await setupPipeline(svc.base);
    clients = new Clients(() => svc.base, pipeline);
    clients.start(0);
    await sleep(1000);
  }, 300_000);

  afterAll(async () => {
    if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
    for (const line of summary) console.log(line);
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('every pwrite fails with EIO for 1.5 s: 503s, /healthz degraded, writable again without a restart', async () => {
    const names = ['posix/io/rw/pwrite', 'posix/io/rw/pwritev'];
    const r = await phase(
      'pwrite+pwritev EIO for 1.5 s',
      names.map((n) => `enable name=${n},failinfo=${EIO}`),
      names.map((n) => `disable name=${n}`),
      1500,
      { saw503: true, degraded: true },
    );
    expect(clients.saw503).toBe(true);
    expect(r.degraded).toBe(true);
    expect(r.writableMs).toBeDefined();
  }, 180_000);

  it('half of the fdatasyncs fail with EIO for 1.5 s: writable again without a restart', async () => {
    const r = await phase(
      'fdatasync EIO p=0.5 for 1.5 s',
      [`enable_random name=posix/io/sync/fdatasync,probability=0.5,failinfo=${EIO}`],
      ['disable name=posix/io/sync/fdatasync'],
      1500,
      { saw503: true },
    );
    expect(clients.saw503).toBe(true);
    expect(r.writableMs).toBeDefined();
  }, 180_000);

  // One-shot on both calls: an append goes out as a pwrite (one buffer) or a pwritev (several, as when a
  // busy machine lets more records gather per write), so a pwrite alone may only ever hit other writes.
  it('one pwrite and one pwritev fail with ENOSPC: writable again without a restart', async () => {
    const names = ['posix/io/rw/pwrite', 'posix/io/rw/pwritev'];
    const r = await phase(
      'one pwrite and one pwritev ENOSPC',
      names.map((n) => `enable name=${n},failinfo=${ENOSPC},onetime=1`),
      names.map((n) => `disable name=${n}`),
      0,
      { saw503: true },
    );
    expect(clients.saw503).toBe(true);
    expect(r.writableMs).toBeDefined();
  }, 180_000);

  it('short writes (pwrite/pwritev reduced, p=0.5, 1 s) are continued', async () => {
    const names = ['posix/io/rw/pwrite/reduce', 'posix/io/rw/pwritev/reduce'];
    const r = await phase(
      'short pwrite/pwritev p=0.5 for 1 s',
      names.map((n) => `enable_random name=${n},probability=0.5`),
      names.map((n) => `disable name=${n}`),
      1000,
    );
    expect(r.writableMs).toBeDefined();
  }, 180_000);

  it('every answer was true: lines answered stored or kept are there once, failed lines only by their resend, each record once', async () => {
    await clients.stop();
    const { records, total } = await readAll(svc.base, pipeline.model);
    expect(total).toBe(records.length);
    const c = clients.check(records, false);
    summary.push(
      `libfiu all phases: ${PUSHERS} clients, ${clients.answers.ok} pushes answered 200, ${clients.answers.unavailable} answered 503; ` +
        `records acknowledged ${clients.count('acked')}, kept ${clients.count('kept')}, stored ${c.stored}, lost ${c.lost}, duplicated ${c.duplicated}, corrupted ${c.corrupted}`,
    );
    expect(clients.problems).toEqual([]);
    expect({ lost: c.lost, duplicated: c.duplicated, corrupted: c.corrupted }).toEqual({ lost: 0, duplicated: 0, corrupted: 0 });
    // The clients resent every failed line until it was stored: every line is there, once.
    expect(clients.count('failed') + clients.count('unknown')).toBe(0);
    expect(c.stored).toBe(clients.lines.size);
  }, 300_000);

  it('kill -9 while every pwrite fails, then a restart: no acknowledged record lost', async () => {
    clients.start(1);
    await sleep(500);
    const names = ['posix/io/rw/pwrite', 'posix/io/rw/pwritev'];
    clients.saw503 = false;
    await fiu(...names.map((n) => `enable name=${n},failinfo=${EIO}`));
    const t = Date.now();
    while (!clients.saw503 && Date.now() - t < 60_000) await sleep(20);
    await sleep(200);
    expect(await svc.kill('SIGKILL')).toEqual({ code: null, signal: 'SIGKILL' });
    await clients.stop(60_000);
    svc = await start();
    const { records } = await readAll(svc.base, pipeline.model);
    const c = clients.check(records, true);
    summary.push(
      `libfiu kill -9 during pwrite EIO: records acknowledged ${clients.count('acked')}, lost ${c.lost}, duplicated ${c.duplicated}, ` +
        `corrupted ${c.corrupted}; kept lines lost with the process ${c.keptLost}`,
    );
    expect(clients.problems).toEqual([]);
    expect({ lost: c.lost, duplicated: c.duplicated, corrupted: c.corrupted }).toEqual({ lost: 0, duplicated: 0, corrupted: 0 });
    const after = await pushNdjson(svc.base, pipeline, [payload(clients.nextSeq, clients.nextPush, 0, 2)]);
    expect(after.status, after.text).toBe(200);
  }, 300_000);
});
