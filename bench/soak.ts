/**
 * Soak: the real service (bench/soak-server.ts, a child process running startService with a temp ini:
 * sync = interval, 2 Lua workers, retention 256 MiB so the disk stays bounded and retention runs) under
 * steady load from this process, all on 127.0.0.1:
 *   - pushes: NDJSON batches of RHILEX-sample payloads through the sample rule, --rate records/s
 *     (default 10,000: --batch 100 lines per push, so 100 pushes/s);
 *   - HMI polling: queryLastData at --polls requests/s (default 1,000);
 *   - paging: queryDataList size 100 on random pages at --pages requests/s (default 20).
 * Open loop: each stream issues what is due every 5 ms, up to its in-flight cap (pushes 400: with
 * sync = interval a push waits up to 1 s for its fdatasync; polls 64; pages 16); what cannot be issued
 * is dropped from the schedule and shows as a lower achieved rate (reported, not hidden).
 * Every --sample-s seconds (default 5): server RSS and heap, event-loop delay p99/max (measured in the
 * server process), p99 latency per stream, achieved rates, errors. Progress lines go to stderr.
 * Pass = no request failed (non-200, connection error, timeout, or a push with failed lines) and memory
 * flat: RSS growth over the second half (least-squares slope of the second half's RSS samples times
 * half the run) below max(10 % of the second half's mean RSS, 16 MB).
 * Writes the samples to dist-bench/soak-samples.json and the chart to docs/images/soak.png (--chart).
 *   npm run soak [-- --minutes 2] [--rate 10000] [--polls 1000] [--pages 20] [--workers 2] [--no-chart]
 */
import { fork, type ChildProcess } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderChart, type SoakSample } from './soak-chart.js';
import type { ServerSample } from './soak-server.js';

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '10' },
    rate: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '100' },
    polls: { type: 'string', default: '1000' },
    pages: { type: 'string', default: '20' },
    workers: { type: 'string', default: '2' },
    'sample-s': { type: 'string', default: '5' },
    chart: { type: 'string' },
    'no-chart': { type: 'boolean', default: false },
  },
});
const num = (name: keyof typeof args, min: number, max: number): number => {
  const v = Number(args[name]);
  if (!Number.isFinite(v) || v < min || v > max) {
    process.stderr.write(`--${name} must be a number in ${min}..${max}, got ${String(args[name])}\n`);
    process.exit(2);
  }
  return v;
};
const minutes = num('minutes', 0.1, 24 * 60);
const rate = num('rate', 1, 200_000);
const batch = Math.round(num('batch', 1, 10_000));
const polls = num('polls', 0, 100_000);
const pages = num('pages', 0, 10_000);
const workers = Math.round(num('workers', 1, 64));
const sampleS = num('sample-s', 1, 600);

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const HOST = '127.0.0.1';
const SECRET = 'soak-secret';
const ADMIN = 'soak-admin-token-0123456789abcdef';
const REQUEST_TIMEOUT_MS = 10_000;
const MB = 1024 * 1024;

const say = (line: string): void => {
  process.stderr.write(`[soak] ${line}\n`);
};

// ---------- HTTP client (node:http, keep-alive, one agent per stream) ----------

interface Reply {
  status: number;
  body: string;
}

function request(port: number, agent: http.Agent, method: string, path: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: HOST, port, method, path, headers, agent, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${REQUEST_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}

// ---------- the service child ----------

async function startServer(dir: string): Promise<{ child: ChildProcess; port: number }> {
  const file = join(dir, 'soak.ini');
  await writeFile(
    file,
    [
      '[main]',
      `data_dir = ${join(dir, 'data')}`,
      `dataschema_secrets = ${SECRET}`,
      `admin_token = ${ADMIN}`,
      'log_level = warn',
      '[plugin.http_server]',
      `host = ${HOST}`,
      'port = 0',
      '[store]',
      'sync = interval',
      `retention_max_bytes = ${256 * MB}`,
      '[scripts]',
      `workers = ${workers}`,
      '',
    ].join('\n'),
  );
  const child = fork(join(repoRoot, 'dist-bench/bench/soak-server.js'), [file], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { type?: string; port?: number }) => (m.type === 'ready' ? resolve(m.port as number) : reject(new Error(`unexpected ${JSON.stringify(m)}`))));
    child.once('exit', (code) => reject(new Error(`soak server exited (${code}) before it was ready`)));
  });
  return { child, port };
}

function askSample(child: ChildProcess): Promise<ServerSample> {
  return new Promise((resolve) => {
    const on = (m: ServerSample): void => {
      if (m.type !== 'sample') return;
      child.off('message', on);
      resolve(m);
    };
    child.on('message', on);
    child.send({ type: 'sample' });
  });
}

async function setup(port: number): Promise<{ model: string; inend: string; token: string }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const admin = async (method: string, path: string, body?: unknown): Promise<any> => {
    const r = await request(port, agent, method, path, { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' }, body === undefined ? undefined : JSON.stringify(body));
    if (r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${r.body}`);
    return (JSON.parse(r.body) as { data: any }).data;
  };
  const model = (await admin('POST', '/api/v1/schema/create', { name: 'soak', description: 'bench/soak.ts' })).uuid as string;
  for (const name of ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value']) {
    await admin('POST', '/api/v1/schema/properties/create', { schemaId: model, name, type: 'FLOAT', rule: { defaultValue: 0, min: 0, max: 0, round: 2 } });
  }
  await admin('POST', `/api/v1/schema/publish?uuid=${model}`);
  const input = await admin('POST', '/api/v1/inends/create', { name: 'soak', type: 'HTTP', description: '' });
  const actions = (await readFile(join(repoRoot, 'fixtures/lua/rhilex-sample.lua'), 'utf8')).replaceAll('SCHEMAZ848ZRDG', model);
  await admin('POST', '/api/v1/rules/create', { name: 'sample', description: '', fromSource: [input.uuid], actions, success: '', failed: '' });
  agent.destroy();
  return { model, inend: input.uuid as string, token: input.token as string };
}

// ---------- load streams ----------

interface Stream {
  name: string;
  ratePerS: number;
  inflightMax: number;
  agent: http.Agent;
  issued: number;
  inflight: number;
  /** Dropped from the schedule because the in-flight cap was reached. */
  behind: number;
  ok: number;
  failed: number;
  window: number[];
  all: number[];
  lastErrors: string[];
  fire(): Promise<string | undefined>;
}

function stream(name: string, ratePerS: number, inflightMax: number, fire: () => Promise<string | undefined>): Stream {
  return {
    name,
    ratePerS,
    inflightMax,
    agent: new http.Agent({ keepAlive: true, maxSockets: inflightMax }),
    issued: 0,
    inflight: 0,
    behind: 0,
    ok: 0,
    failed: 0,
    window: [],
    all: [],
    lastErrors: [],
    fire,
  };
}

function launch(s: Stream): void {
  s.issued++;
  s.inflight++;
  const t0 = performance.now();
  s.fire().then(
    (error) => done(s, t0, error),
    (err: unknown) => done(s, t0, `connection: ${(err as Error).message}`),
  );
}

function done(s: Stream, t0: number, error: string | undefined): void {
  s.inflight--;
  const ms = performance.now() - t0;
  s.window.push(ms);
  if (error === undefined) s.ok++;
  else {
    s.failed++;
    const at = ((performance.now() - start) / 1000).toFixed(1);
    if (s.lastErrors.length < 10) s.lastErrors.push(`${at}s after ${ms.toFixed(0)} ms: ${error}`);
    if (s.failed <= 20) say(`FAILED ${s.name} at ${at}s after ${ms.toFixed(0)} ms: ${error}`);
  }
}

function p99(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = Float64Array.from(values).sort();
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)];
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function payloadLine(): string {
  const v = (base: number, spread: number): number => Math.round((base + Math.random() * spread) * 100) / 100;
  return JSON.stringify([
    { tag: 't1', value: v(20, 5) },
    { tag: 't2', value: v(20, 5) },
    { tag: 't3', value: v(20, 5) },
    { tag: 'resistivity', value: v(1, 1) },
    { tag: 'conductivity', value: v(2, 1) },
    { tag: 'dissolved_oxygen', value: v(7, 2) },
    { tag: 'ph_value', value: v(6.5, 1) },
  ]);
}

// ---------- main ----------

const dir = await mkdtemp(join(os.tmpdir(), 'edc-soak-'));
const { child, port } = await startServer(dir);
let childExited = false;
child.once('exit', () => (childExited = true));
// Whatever happens to this process, the service child and the temp data go with it.
process.on('exit', () => {
  if (!childExited) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});
const { model, inend, token } = await setup(port);
say(`service pid ${child.pid} on ${HOST}:${port}, data ${dir}; ${minutes} min, ${rate} records/s (${batch}/push), ${polls} queryLastData/s, ${pages} queryDataList/s, ${workers} Lua workers`);

// A pool of distinct bodies, reused round-robin: building JSON is not what is measured.
const bodies = Array.from({ length: 64 }, () => `${Array.from({ length: batch }, payloadLine).join('\n')}\n`);
let bodyIndex = 0;
let recordsStored = 0;
let lastTotal = 0;

const pushes = stream('push', rate / batch, 400, async () => {
  const body = bodies[bodyIndex++ % bodies.length];
  const r = await request(port, pushes.agent, 'POST', `/api/v1/inends/push?uuid=${inend}`, { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-ndjson' }, body);
  if (r.status !== 200) return `push ${r.status} ${r.body.slice(0, 200)}`;
  const d = (JSON.parse(r.body) as { data: { accepted: number; failed: number } }).data;
  recordsStored += d.accepted;
  return d.failed === 0 && d.accepted === batch ? undefined : `push 200 with failed lines: ${r.body.slice(0, 200)}`;
});
const lasts = stream('queryLastData', polls, 64, async () => {
  const r = await request(port, lasts.agent, 'GET', `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}`, {});
  return r.status === 200 ? undefined : `queryLastData ${r.status} ${r.body.slice(0, 200)}`;
});
const pagesStream = stream('queryDataList', pages, 16, async () => {
  const pagesNow = Math.max(1, Math.ceil(lastTotal / 100));
  const current = 1 + Math.floor(Math.random() * pagesNow);
  const order = Math.random() < 0.5 ? 'asc' : 'desc';
  const r = await request(port, pagesStream.agent, 'GET', `/api/v1/datacenter/queryDataList?uuid=${model}&secrets=${SECRET}&size=100&current=${current}&order=${order}`, {});
  if (r.status !== 200) return `queryDataList ${r.status} ${r.body.slice(0, 200)}`;
  lastTotal = (JSON.parse(r.body) as { data: { total: number } }).data.total;
  return undefined;
});
const streams = [pushes, lasts, pagesStream].filter((s) => s.ratePerS > 0);

const durationMs = minutes * 60_000;
/** Written at every sample, so a run that dies still leaves its figures. */
const samplesFile = join(repoRoot, 'dist-bench/soak-samples.json');
const start = performance.now();
const samples: SoakSample[] = [];
const serverSamples: ServerSample[] = [];
let prev = { t: 0, records: 0, last: 0, page: 0, failed: 0 };

const tick = setInterval(() => {
  const elapsedS = (performance.now() - start) / 1000;
  for (const s of streams) {
    const due = Math.floor(elapsedS * s.ratePerS) - s.issued - s.behind;
    const room = s.inflightMax - s.inflight;
    const n = Math.min(due, room);
    for (let i = 0; i < n; i++) launch(s);
    if (due > n && due - n > s.ratePerS * 0.05) s.behind += due - n; // more than 50 ms behind: drop the backlog
  }
}, 5);

async function sample(): Promise<void> {
  const t = (performance.now() - start) / 1000;
  const srv = await askSample(child);
  serverSamples.push(srv);
  const dt = t - prev.t;
  const failed = streams.reduce((n, s) => n + s.failed, 0);
  const row: SoakSample = {
    t: Math.round(t * 10) / 10,
    rssMb: Math.round(srv.rssMb * 10) / 10,
    heapUsedMb: Math.round(srv.heapUsedMb * 10) / 10,
    eldP99Ms: Math.round(srv.eldP99Ms * 100) / 100,
    eldMaxMs: Math.round(srv.eldMaxMs * 100) / 100,
    pushP99Ms: Math.round(p99(pushes.window) * 100) / 100,
    lastP99Ms: Math.round(p99(lasts.window) * 100) / 100,
    pageP99Ms: Math.round(p99(pagesStream.window) * 100) / 100,
    recordsPerS: Math.round((recordsStored - prev.records) / dt),
    lastPerS: Math.round((lasts.ok + lasts.failed - prev.last) / dt),
    pagePerS: Math.round((pagesStream.ok + pagesStream.failed - prev.page) / dt),
    errors: failed - prev.failed,
  };
  for (const s of streams) {
    for (const v of s.window) s.all.push(v);
    s.window = [];
  }
  prev = { t, records: recordsStored, last: lasts.ok + lasts.failed, page: pagesStream.ok + pagesStream.failed, failed };
  samples.push(row);
  await writeFile(samplesFile, JSON.stringify({ info: { title: 'soak (running)', subtitle: '' }, samples }, null, 1));
  const mmss = `${Math.floor(t / 60)}m${String(Math.floor(t % 60)).padStart(2, '0')}s`;
  say(
    `${mmss} records ${recordsStored.toLocaleString('en-US')} (${row.recordsPerS.toLocaleString('en-US')}/s) | last ${row.lastPerS}/s p99 ${row.lastP99Ms} ms | ` +
      `page ${row.pagePerS}/s p99 ${row.pageP99Ms} ms | push p99 ${row.pushP99Ms} ms | rss ${row.rssMb} MB heap ${row.heapUsedMb} MB | ` +
      `eld p99 ${row.eldP99Ms} ms max ${row.eldMaxMs} ms | errors ${failed}`,
  );
}

let sampling = Promise.resolve();
const sampler = setInterval(() => {
  sampling = sampling.then(sample);
}, sampleS * 1000);
await new Promise((resolve) => setTimeout(resolve, durationMs));
clearInterval(tick);
clearInterval(sampler);
await sampling;
// Let in-flight requests finish (each is bounded by REQUEST_TIMEOUT_MS).
const drainUntil = Date.now() + REQUEST_TIMEOUT_MS + 1000;
while (streams.some((s) => s.inflight > 0) && Date.now() < drainUntil) await new Promise((r) => setTimeout(r, 20));
await sample();

// ---------- verdict ----------

const loadS = (performance.now() - start) / 1000;
const rss = samples.map((s) => s.rssMb);
// Memory trend over the second half: least-squares slope of RSS against time, times the half's length.
// (RSS swings by ±20 MB from one 5 s sample to the next under this load, so comparing two short windows
// is noise; the slope over ~60 samples is not.)
const half = samples.filter((s) => s.t >= loadS / 2);
const meanT = half.reduce((a, s) => a + s.t, 0) / Math.max(1, half.length);
const meanRss = half.reduce((a, s) => a + s.rssMb, 0) / Math.max(1, half.length);
let covTR = 0;
let varT = 0;
for (const s of half) {
  covTR += (s.t - meanT) * (s.rssMb - meanRss);
  varT += (s.t - meanT) ** 2;
}
const slopeMbPerS = varT > 0 ? covTR / varT : 0;
const growthMb = slopeMbPerS * (loadS / 2);
const growthLimitMb = Math.max(meanRss * 0.1, 16);
const firstHalf = samples.filter((s) => s.t < loadS / 2);
const meanRssFirstHalf = firstHalf.reduce((a, s) => a + s.rssMb, 0) / Math.max(1, firstHalf.length);
const failedRequests = streams.reduce((k, s) => k + s.failed, 0);
const memoryFlat = growthMb < growthLimitMb;
const stillRunning = !childExited;
const pass = failedRequests === 0 && memoryFlat && stillRunning;

const stopped = new Promise<void>((resolve) => child.once('exit', () => resolve()));
if (!childExited) child.send({ type: 'stop' });
await Promise.race([stopped, new Promise((r) => setTimeout(r, 30_000))]);
if (!childExited) child.kill('SIGKILL');

const perStream = Object.fromEntries(
  streams.map((s) => [
    s.name,
    {
      targetPerS: s.ratePerS,
      achievedPerS: Math.round(((s.ok + s.failed) / loadS) * 10) / 10,
      requests: s.ok + s.failed,
      failed: s.failed,
      droppedFromSchedule: s.behind,
      p50Ms: Math.round(median(s.all) * 100) / 100,
      p99Ms: Math.round(p99(s.all) * 100) / 100,
      maxMs: Math.round(s.all.reduce((m, v) => (v > m ? v : m), 0) * 100) / 100,
      lastErrors: s.lastErrors,
    },
  ]),
);
const summary = {
  pass,
  minutes: Math.round((loadS / 60) * 100) / 100,
  recordsStored,
  recordsPerS: Math.round(recordsStored / loadS),
  targetRecordsPerS: rate,
  failedRequests,
  memory: {
    rssFirstSampleMb: rss[0],
    rssMeanFirstHalfMb: Math.round(meanRssFirstHalf * 10) / 10,
    rssMeanSecondHalfMb: Math.round(meanRss * 10) / 10,
    rssLastSampleMb: rss[rss.length - 1],
    rssMaxMb: Math.max(...rss),
    slopeSecondHalfMbPerMin: Math.round(slopeMbPerS * 600) / 10,
    growthSecondHalfMb: Math.round(growthMb * 10) / 10,
    growthLimitMb: Math.round(growthLimitMb * 10) / 10,
    flat: memoryFlat,
  },
  eventLoopDelay: {
    p99MsMedianOfSamples: median(samples.map((s) => s.eldP99Ms)),
    p99MsWorstSample: Math.max(...samples.map((s) => s.eldP99Ms)),
    maxMs: Math.max(...samples.map((s) => s.eldMaxMs)),
  },
  serverCpuS: serverSamples.length > 0 ? Math.round((serverSamples[serverSamples.length - 1].cpuUserMs + serverSamples[serverSamples.length - 1].cpuSystemMs) / 100) / 10 : 0,
  streams: perStream,
  machine: `${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, ${Math.round(os.totalmem() / 1024 ** 3)} GiB, Node ${process.version}`,
  date: new Date().toISOString(),
};

const info = {
  title: `edge-datacenter soak: ${summary.minutes} min, ${summary.recordsPerS.toLocaleString('en-US')} records/s stored (target ${rate.toLocaleString('en-US')}), ${failedRequests} failed requests — ${pass ? 'PASS' : 'FAIL'}`,
  subtitle: `queryLastData ${perStream.queryLastData?.achievedPerS ?? 0}/s, queryDataList size 100 ${perStream.queryDataList?.achievedPerS ?? 0}/s; RSS mean ${meanRssFirstHalf.toFixed(0)} MB (1st half) / ${meanRss.toFixed(0)} MB (2nd half), trend over the 2nd half ${growthMb >= 0 ? '+' : ''}${growthMb.toFixed(1)} MB (limit +${growthLimitMb.toFixed(0)} MB); ${summary.machine}; ${summary.date.slice(0, 10)}`,
};
await writeFile(samplesFile, JSON.stringify({ info, summary, samples }, null, 1));
if (!args['no-chart']) {
  const out = args.chart ?? join(repoRoot, 'docs/images/soak.png');
  try {
    await renderChart(samples, info, out);
    say(`chart: ${out}`);
  } catch (err) {
    say(`chart not drawn: ${(err as Error).message} (samples in ${samplesFile}; redraw with node dist-bench/bench/soak-chart.js ${samplesFile})`);
  }
}
await rm(dir, { recursive: true, force: true });
for (const s of streams) s.agent.destroy();
process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
say(
  `${pass ? 'PASS' : 'FAIL'}: ${recordsStored.toLocaleString('en-US')} records in ${summary.minutes} min (${summary.recordsPerS}/s of ${rate}/s), ` +
    `${failedRequests} failed requests, RSS growth over the second half ${summary.memory.growthSecondHalfMb} MB (limit ${summary.memory.growthLimitMb} MB)` +
    (stillRunning ? '' : ', the service exited during the run'),
);
process.exit(pass ? 0 : 1);
