/**
 * Memory of the real service, as an operator starts it: the command of `npm run serve` (package.json:
 * `node <V8 flags> dist/cli.js serve`, without npm around it, as the systemd unit of docs/deploy.md
 * runs it) in a child process, default settings except the data directory, the listen address and
 * the admin token. Its RSS (from
 * /proc/<pid>/status) is read beside a bare Node process (`node -e "setInterval(()=>{},1000)"`):
 * after start, after 30 s idle, while a second child process pushes 10,000 records/s through the
 * RHILEX sample rule, and once the Lua worker has stopped again after `worker_idle_s`. Also the
 * latency of a push that finds no worker (a cold start) next to the push after it.
 *
 * Linux only (reads /proc). Usage: npm run bench:memory [-- --rate 10000 --load-seconds 20 --idle-seconds 30
 *   --node-options='...' (NODE_OPTIONS of the service, to compare V8 flags; none by default)]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { CONFIG_KEYS, type IntKey } from '../src/config/keys.js';
import { postBody } from './http-post.js';
import { runInChild, serveChildJob } from './child-job.js';
import { BENCH_ADMIN, readSampleRule, samplePayload, setUpSampleRule } from './sample-rule.js';
import { printTable, repoRoot, writeResults, type Figure } from './report.js';
import { processCpuMs, serveEnv, serveEnvText, serveNodeFlags } from './targets.js';

const MIB = 1_048_576;
/** Pushes per second of the load generator; each carries rate / PUSHES_PER_S payloads. */
const PUSHES_PER_S = 10;

function progress(message: string): void {
  process.stderr.write(`[bench:memory] ${message}\n`);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Resident set and thread count of a live process, from /proc. */
async function rssOf(pid: number): Promise<{ rssBytes: number; threads: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1]);
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1]);
  return { rssBytes: kb * 1024, threads };
}

// ---------------------------------------------------------------- load generator (child process)

interface LoadJob {
  port: number;
  inend: string;
  token: string;
  recordsPerS: number;
  seconds: number;
}

interface LoadResult {
  accepted: number;
  failed: number;
  rejected: number;
  seconds: number;
  /** Pushes that had to wait for an earlier one to answer (the rate was not kept). */
  late: number;
}

function post(agent: Agent, port: number, path: string, token: string, body: Buffer): Promise<{ status: number; text: string }> {
  return postBody(agent, { host: '127.0.0.1', port, path }, { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-ndjson' }, body);
}

/** Pushes of recordsPerS / PUSHES_PER_S lines every 1 / PUSHES_PER_S s, on up to 8 connections. */
async function runLoad(job: LoadJob): Promise<LoadResult> {
  const connections = 8;
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const lines = Math.round(job.recordsPerS / PUSHES_PER_S);
  const bodies = Array.from({ length: 8 }, (_, b) => Buffer.from(Array.from({ length: lines }, (_, i) => samplePayload(b * lines + i)).join('\n')));
  const path = `/api/v1/inends/push?uuid=${job.inend}`;
  const result: LoadResult = { accepted: 0, failed: 0, rejected: 0, seconds: 0, late: 0 };
  const inFlight = new Set<Promise<void>>();
  const started = performance.now();
  for (let n = 0; n < job.seconds * PUSHES_PER_S; n++) {
    const due = started + (n * 1000) / PUSHES_PER_S;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    if (inFlight.size >= connections) {
      result.late++;
      await Promise.race(inFlight);
    }
    const push = post(agent, job.port, path, job.token, bodies[n % bodies.length]).then(({ status, text }) => {
      if (status === 503) {
        result.rejected++;
        return;
      }
      if (status !== 200) throw new Error(`push answered ${status}: ${text}`);
      const data = (JSON.parse(text) as { data: { accepted: number; failed: number } }).data;
      result.accepted += data.accepted;
      result.failed += data.failed;
    });
    const tracked = push.finally(() => inFlight.delete(tracked));
    inFlight.add(tracked);
  }
  await Promise.all(inFlight);
  result.seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return result;
}

function loadProcess(job: LoadJob): Promise<LoadResult> {
  return runInChild(fileURLToPath(import.meta.url), '--load', job);
}

// ---------------------------------------------------------------- the service and bare Node

interface Service {
  child: ChildProcess;
  port: number;
  stop(): Promise<void>;
}

/** The CLI as an operator runs it; resolves once it printed its address. */
async function startCli(configFile: string, nodeOptions: string): Promise<Service> {
  const args = [...serveNodeFlags(), join(repoRoot, 'dist', 'cli.js'), 'serve', '--config', configFile];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...serveEnv(), NODE_OPTIONS: nodeOptions },
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const match = /listening on https?:\/\/[^\s]*:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.once('exit', (code) => reject(new Error(`the service exited with ${code} before listening:\n${out}`)));
  });
  child.stdout!.resume();
  return {
    child,
    port,
    async stop() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

function startBareNode(): ChildProcess {
  return spawn(process.execPath, ['-e', 'setInterval(()=>{},1000)'], { stdio: 'ignore', env: { ...process.env, NODE_OPTIONS: '' } });
}

/** One single-payload push on a new connection, timed until its answer (stored, not yet synced). */
async function timedPush(port: number, inend: string, token: string, i: number): Promise<number> {
  const agent = new Agent({ keepAlive: false });
  const started = performance.now();
  const { status, text } = await post(agent, port, `/api/v1/inends/push?uuid=${inend}`, token, Buffer.from(samplePayload(i)));
  const ms = performance.now() - started;
  agent.destroy();
  if (status !== 200) throw new Error(`push answered ${status}: ${text}`);
  return ms;
}

async function configFile(dir: string, extra: string[] = []): Promise<string> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, 'bench.ini');
  await writeFile(
    file,
    ['[main]', `data_dir = ${join(dir, 'data')}`, `admin_token = ${BENCH_ADMIN}`, '[plugin.http_server]', 'host = 127.0.0.1', 'port = 0', ...extra, ''].join('\n'),
  );
  return file;
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('bench:memory reads /proc: Linux only');
  const { values: args } = parseArgs({
    options: {
      rate: { type: 'string', default: '10000' },
      'load-seconds': { type: 'string', default: '20' },
      'idle-seconds': { type: 'string', default: '30' },
      'node-options': { type: 'string', default: '' },
      load: { type: 'boolean', default: false },
    },
  });
  const rate = Number(args.rate);
  const loadSeconds = Number(args['load-seconds']);
  const idleSeconds = Number(args['idle-seconds']);
  const nodeOptions = args['node-options'];
  const sample = await readSampleRule();
  const idleStopS = (CONFIG_KEYS.find((k) => k.key === 'worker_idle_s') as IntKey).default;
  const loadBefore = loadavg()[0];
  const figures: Figure[] = [];
  const mib = (bytes: number): number => bytes / MIB;

  const dir = await mkdtemp(join(tmpdir(), 'bench-memory-'));
  const bare = startBareNode();
  try {
    // Workers kept from the start (worker_idle_s = 0): what on-demand workers save at idle.
    progress('the service with worker_idle_s = 0 (workers start with it and stay)');
    const keptDir = join(dir, 'kept');
    const kept = await startCli(await configFile(keptDir, ['[scripts]', 'worker_idle_s = 0']), nodeOptions);
    await sleep(5000);
    const keptRss = await rssOf(kept.child.pid!);
    await kept.stop();

    progress('the service with the default settings: start, then idle');
    const service = await startCli(await configFile(join(dir, 'default')), nodeOptions);
    const pid = service.child.pid!;
    await sleep(3000);
    const afterStart = await rssOf(pid);
    const bareAfterStart = await rssOf(bare.pid!);
    progress(`  after start: ${mib(afterStart.rssBytes).toFixed(1)} MiB, ${afterStart.threads} threads; waiting ${idleSeconds} s`);
    await sleep(idleSeconds * 1000);
    const afterIdle = await rssOf(pid);
    const bareAfterIdle = await rssOf(bare.pid!);

    progress('a model, an HTTP input and the sample rule');
    const { inend, token } = await setUpSampleRule(service.port, sample);
    const warmFirstMs = await timedPush(service.port, inend, token, 0);

    progress(`${rate} records/s for ${loadSeconds} s`);
    const samples: number[] = [];
    let maxThreads = 0;
    const sampler = setInterval(() => {
      rssOf(pid).then(
        (s) => {
          samples.push(s.rssBytes);
          maxThreads = Math.max(maxThreads, s.threads);
        },
        () => undefined,
      );
    }, 250);
    const cpuBeforeMs = processCpuMs(pid);
    const load = await loadProcess({ port: service.port, inend, token, recordsPerS: rate, seconds: loadSeconds });
    const cpuUsPerRecord = ((processCpuMs(pid) - cpuBeforeMs) * 1000) / load.accepted;
    clearInterval(sampler);
    if (load.failed > 0) throw new Error(`${load.failed} payloads failed in the rule`);
    const steady = samples.slice(Math.floor(samples.length / 4)); // past the first quarter: the heap has grown to its working size
    const loadMax = Math.max(...samples);
    const loadMean = steady.reduce((a, b) => a + b, 0) / steady.length;

    progress(`waiting ${idleStopS + 5} s for the worker to stop (worker_idle_s = ${idleStopS})`);
    await sleep((idleStopS + 5) * 1000);
    const afterLoadIdle = await rssOf(pid);
    const coldMs = await timedPush(service.port, inend, token, 1);
    const warmMs = await timedPush(service.port, inend, token, 2);
    await service.stop();

    figures.push(
      { name: 'RSS after start', value: mib(afterStart.rssBytes), unit: 'MiB', baseline: mib(bareAfterStart.rssBytes), better: 'lower', target: '< 60 MiB' },
      { name: `RSS after ${idleSeconds} s idle`, value: mib(afterIdle.rssBytes), unit: 'MiB', baseline: mib(bareAfterIdle.rssBytes), better: 'lower', target: '< 60 MiB' },
      { name: 'RSS after start, worker_idle_s = 0 (1 worker kept)', value: mib(keptRss.rssBytes), unit: 'MiB', baseline: mib(bareAfterStart.rssBytes), better: 'lower' },
      { name: `RSS at ${rate.toLocaleString('en-US')} records/s, mean`, value: mib(loadMean), unit: 'MiB', baseline: mib(bareAfterIdle.rssBytes), better: 'lower', target: '< 100 MiB' },
      { name: `RSS at ${rate.toLocaleString('en-US')} records/s, max`, value: mib(loadMax), unit: 'MiB', baseline: mib(bareAfterIdle.rssBytes), better: 'lower', target: '< 100 MiB' },
      { name: `RSS ${idleStopS + 5} s after the load (worker stopped)`, value: mib(afterLoadIdle.rssBytes), unit: 'MiB', baseline: mib(bareAfterIdle.rssBytes), better: 'lower' },
      { name: 'records/s stored during the load', value: load.accepted / load.seconds, unit: 'records/s', better: 'higher' },
      { name: 'server CPU per record during the load', value: cpuUsPerRecord, unit: 'µs', better: 'lower' },
      { name: 'push after rule creation (worker running)', value: warmFirstMs, unit: 'ms', better: 'lower' },
      { name: 'first push after idle (cold start)', value: coldMs, unit: 'ms', better: 'lower' },
      { name: 'the push after it', value: warmMs, unit: 'ms', better: 'lower' },
    );
    printTable('Memory of the service (RSS) beside bare Node', figures);
    const loadAfter = loadavg()[0];
    const notes = [
      `\`${serveEnvText()}node ${serveNodeFlags().join(' ')} dist/cli.js serve\` (what \`npm run serve\` runs) started as a child process with the default settings except \`data_dir\` (a temporary`,
      'directory), `host = 127.0.0.1`, `port = 0` and `admin_token`;' + (nodeOptions === '' ? ' no NODE_OPTIONS.' : ` NODE_OPTIONS=\`${nodeOptions}\`.`) + ' RSS is VmRSS from /proc; the',
      'baseline column is a bare `node -e "setInterval(()=>{},1000)"` read at the same moments. The load is a',
      `separate process posting ${PUSHES_PER_S} NDJSON pushes a second of ${Math.round(rate / PUSHES_PER_S)} sample payloads each`,
      'through POST /api/v1/inends/push -> the RHILEX sample rule (one record per payload) -> the store; "mean" is',
      `sampled every 250 ms after the first quarter of the run, "max" over all of it. Threads during the load: ${maxThreads}.`,
      'Server CPU: user + system time of the service process (all threads) from /proc over the load, per record stored.',
      `Cold start: the push after ${idleStopS + 5} s without work, when the Lua worker has stopped (worker_idle_s = ${idleStopS}),`,
      'against the push right after it: single payloads on a new connection, answered once stored (not waiting',
      `for the next sync). Load average (1 min): ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after.` +
        (load.rejected + load.late > 0 ? ` 503 answers: ${load.rejected}; pushes sent late: ${load.late}.` : ''),
    ].join('\n');
    await writeResults('memory', 'Memory (`npm run bench:memory`)', 'bare Node', figures, notes);
  } finally {
    bare.kill();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--load')) {
  serveChildJob(runLoad);
} else {
  await main();
}
