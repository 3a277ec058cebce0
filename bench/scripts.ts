/**
 * The rule runtime end to end, in one run: NDJSON pushes over HTTP to the real service
 * (startService: uWS, script engine, store with sync = interval) -> RHILEX's sample rule in the
 * worker pool -> the store, with 1 and with 2 workers; push latency under that load and alone; Lua
 * invocations/s of one worker (ScriptPool directly); and, as the ceiling, the same records appended
 * straight to a model log (ModelLog.save).
 *
 * The load generator is a child process, so the server's CPU time per record is its own.
 * Usage: npm run bench:scripts [-- --seconds 5 --connections 32 --lines 1000 --sync-interval-ms 1000]
 * `--quick`: only the end-to-end run with 1 worker, printed and not written (for alternating A/B runs).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent } from 'node:http';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { loadConfig } from '../src/config/index.js';
import { ModelRegistry } from '../src/models/registry.js';
import { ScriptPool } from '../src/scripts/pool/pool.js';
import { taskPayloads, type RunTask } from '../src/scripts/shared/protocol.js';
import { startService } from '../src/server.js';
import { Store } from '../src/store/index.js';
import { postBody } from './http-post.js';
import { runInChild, serveChildJob } from './child-job.js';
import { BENCH_ADMIN, SAMPLE_ATTRIBUTES, readSampleRule, sampleActions, samplePayload, setUpSampleRule } from './sample-rule.js';
import { printTable, writeResults, type Figure } from './report.js';
import { threadCpuMs, threadSplit } from './targets.js';

const TARGET_RECORDS_PER_S = 100_000;

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

function progress(message: string): void {
  process.stderr.write(`[bench:scripts] ${message}\n`);
}

// ---------------------------------------------------------------- load generator (child process)

interface ClientJob {
  port: number;
  inend: string;
  token: string;
  connections: number;
  lines: number;
  seconds: number;
  /** One payload per request, one request at a time: latency without queueing. */
  single: boolean;
}

interface ClientResult {
  accepted: number;
  failed: number;
  rejected: number;
  seconds: number;
  latenciesMs: number[];
}

async function runClient(job: ClientJob): Promise<ClientResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: job.connections });
  const path = `/api/v1/inends/push?uuid=${job.inend}`;
  const bodies = Array.from({ length: 16 }, (_, b) =>
    Buffer.from(Array.from({ length: job.single ? 1 : job.lines }, (_, i) => samplePayload(b * job.lines + i)).join('\n')),
  );
  const headers = { Authorization: `Bearer ${job.token}`, 'Content-Type': 'application/x-ndjson' };
  const post = (body: Buffer) => postBody(agent, { host: '127.0.0.1', port: job.port, path }, headers, body);
  const result: ClientResult = { accepted: 0, failed: 0, rejected: 0, seconds: 0, latenciesMs: [] };
  const started = performance.now();
  const deadline = started + job.seconds * 1000;
  const loop = async (c: number): Promise<void> => {
    for (let n = c; performance.now() < deadline; n++) {
      const sent = performance.now();
      const { status, text } = await post(bodies[n % bodies.length]);
      if (status === 200) {
        result.latenciesMs.push(performance.now() - sent);
        const data = (JSON.parse(text) as { data: { accepted: number; failed: number } }).data;
        result.accepted += data.accepted;
        result.failed += data.failed;
      } else if (status === 503) {
        result.rejected++;
        await new Promise((r) => setTimeout(r, 5));
      } else throw new Error(`push answered ${status}: ${text}`);
    }
  };
  await Promise.all(Array.from({ length: job.single ? 1 : job.connections }, (_, c) => loop(c)));
  result.seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return result;
}

function clientProcess(job: ClientJob): Promise<ClientResult> {
  return runInChild(fileURLToPath(import.meta.url), '--client', job);
}

// ---------------------------------------------------------------- the service

interface EndToEnd {
  recordsPerS: number;
  cpuUsPerRecord: number;
  loadP50Ms: number;
  loadP99Ms: number;
  singleP50Ms: number;
  singleP99Ms: number;
  /** Sequential single-payload pushes answered per second (contract 9: not held by the sync interval). */
  singlePerS: number;
  rejected: number;
  /** The service's CPU a record by thread: main thread, the Lua workers, the rest (V8's GC and compiler, libuv). */
  threads: { main: number; workers: number; rest: number };
}

interface RunOptions {
  seconds: number;
  connections: number;
  lines: number;
  /** A push answers once durable: with sync = interval, after the next sync. */
  syncIntervalMs: number;
}

async function endToEnd(workers: number, opts: RunOptions, sample: string): Promise<EndToEnd> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-scripts-'));
  try {
    const file = join(dir, 'bench.ini');
    await writeFile(
      file,
      [
        '[main]',
        `data_dir = ${join(dir, 'data')}`,
        'dataschema_secrets = bench-secret',
        `admin_token = ${BENCH_ADMIN}`,
        'log_level = silent',
        '[plugin.http_server]',
        'host = 127.0.0.1',
        'port = 0',
        `body_bytes_max = ${4 * 1024 * 1024}`,
        '[store]',
        'sync = interval',
        `sync_interval_ms = ${opts.syncIntervalMs}`,
        '[scripts]',
        `workers = ${workers}`,
        `queue_max = ${Math.max(10_000, 4 * opts.connections * opts.lines)}`,
        '',
      ].join('\n'),
    );
    const { config } = await loadConfig({ file, env: {} });
    const service = await startService(config, pino({ level: 'silent' }));
    try {
      const { port } = service;
      const { inend, token } = await setUpSampleRule(port, sample);
      const job = { port, inend, token, connections: opts.connections, lines: opts.lines, single: false };
      progress(`  ${workers} worker(s): warm-up`);
      await clientProcess({ ...job, seconds: 1 });
      progress(`  ${workers} worker(s): ${opts.connections} connections x ${opts.lines} lines for ${opts.seconds} s`);
      const cpu = process.cpuUsage();
      const threadsBefore = threadCpuMs(process.pid);
      const load = await clientProcess({ ...job, seconds: opts.seconds });
      const threadsAfter = threadCpuMs(process.pid);
      const used = process.cpuUsage(cpu);
      const split = threadSplit(threadsBefore, threadsAfter, process.pid, load.accepted, workers);
      const threads = { main: split.main, workers: split.busiest, rest: split.rest };
      progress(`  ${workers} worker(s): server CPU per record by thread: ${formatThreads(threads)}`);
      if (load.failed > 0) throw new Error(`${load.failed} payloads failed in the rule`);
      progress(`  ${workers} worker(s): single-payload pushes, one at a time`);
      const single = await clientProcess({ ...job, single: true, seconds: 2 });
      const loadSorted = [...load.latenciesMs].sort((a, b) => a - b);
      const singleSorted = [...single.latenciesMs].sort((a, b) => a - b);
      return {
        recordsPerS: load.accepted / load.seconds,
        cpuUsPerRecord: (used.user + used.system) / load.accepted,
        loadP50Ms: percentile(loadSorted, 0.5),
        loadP99Ms: percentile(loadSorted, 0.99),
        singleP50Ms: percentile(singleSorted, 0.5),
        singleP99Ms: percentile(singleSorted, 0.99),
        singlePerS: single.accepted / single.seconds,
        rejected: load.rejected,
        threads,
      };
    } finally {
      await service.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function formatThreads(t: EndToEnd['threads']): string {
  const total = t.main + t.workers + t.rest;
  return `main ${t.main.toFixed(2)} / workers ${t.workers.toFixed(2)} / rest ${t.rest.toFixed(2)} = ${total.toFixed(2)} µs`;
}

// ---------------------------------------------------------------- one worker, and the store alone

async function withModel<T>(fn: (registry: ModelRegistry, uuid: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-scripts-'));
  const store = await Store.open({
    rootDir: join(dir, 'store'),
    durability: 'interval',
    syncIntervalMs: 1000,
    segmentBytesMax: 32 * 1024 * 1024,
    segmentAgeMsMax: 24 * 3_600_000,
    retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
  });
  try {
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    const model = await registry.create({ name: 'water' });
    for (const name of SAMPLE_ATTRIBUTES) await registry.createAttribute({ schemaId: model.uuid, name, type: 'FLOAT' });
    await registry.publish(model.uuid);
    return await fn(registry, model.uuid);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** Tasks of `batch` payloads sent one after another to a single worker: invocations/s and worker time per invocation. */
async function oneWorker(sample: string, seconds: number, batch: number): Promise<{ perS: number; workerUs: number }> {
  return withModel(async (registry, uuid) => {
    const pool = new ScriptPool({ workers: 1, timeoutMs: 200, hardTimeoutMs: 60_000, memoryMb: 32 });
    try {
      const task: RunTask = {
        kind: 'run',
        modelsVersion: 1,
        models: registry.list(),
        readOnlyModels: [],
        rulesEpoch: 1,
        liveRuleIds: ['RULEBENCH'],
        rules: [{ uuid: 'RULEBENCH', version: 1, actions: sampleActions(sample, uuid), success: '', failed: '' }],
        payloads: taskPayloads(Array.from({ length: batch }, (_, i) => samplePayload(i))),
      };
      await pool.run(task);
      let invocations = 0;
      let workerMs = 0;
      const started = performance.now();
      while (performance.now() - started < seconds * 1000) {
        const result = await pool.run(task);
        if (result.errors.length > 0) throw new Error(result.errors[0].message);
        invocations += batch;
        workerMs += result.elapsedMs ?? 0;
      }
      return { perS: invocations / ((performance.now() - started) / 1000), workerUs: (workerMs * 1000) / invocations };
    } finally {
      await pool.close();
    }
  });
}

/** The records the sample rule makes, appended straight to the model's log, then made durable. */
async function storeDirect(count: number): Promise<number> {
  return withModel(async (registry, uuid) => {
    const log = registry.log(uuid);
    const records = Array.from({ length: 1024 }, (_, i) => {
      const v = (t: number): number => Math.round((20 + t * 0.5 + (i % 97) / 100) * 100) / 100;
      return { temp: (v(0) + v(1) + v(2)) / 3, resistivity: v(3), conductivity: v(4), dissolved_oxygen: v(5), ph_value: v(6) };
    });
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      log.save(records[i & 1023]);
      // Let the writer drain its queue, as the event loop does between pushes.
      if ((i & 4095) === 4095) await new Promise((resolve) => setImmediate(resolve));
    }
    await log.durable();
    return count / ((performance.now() - started) / 1000);
  });
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const { values: args } = parseArgs({
    options: {
      seconds: { type: 'string', default: '5' },
      connections: { type: 'string', default: '32' },
      lines: { type: 'string', default: '1000' },
      'sync-interval-ms': { type: 'string', default: '1000' },
      client: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
    },
  });
  const opts = {
    seconds: Number(args.seconds),
    connections: Number(args.connections),
    lines: Number(args.lines),
    syncIntervalMs: Number(args['sync-interval-ms']),
  };
  const sample = await readSampleRule();
  const loadBefore = loadavg()[0];
  if (args.quick) {
    const e = await endToEnd(1, opts, sample);
    console.log(`1 worker: ${Math.round(e.recordsPerS)} records/s, server CPU per record ${e.cpuUsPerRecord.toFixed(2)} µs`);
    console.log(`by thread: ${formatThreads(e.threads)}; load ${loadBefore.toFixed(1)} -> ${loadavg()[0].toFixed(1)}`);
    return;
  }

  progress('store alone (ModelLog.save, sync = interval)');
  const direct = await storeDirect(1_000_000);
  progress('one worker, tasks of 2048 payloads');
  const worker = await oneWorker(sample, 3, 2048);
  progress('end to end over HTTP');
  const e1 = await endToEnd(1, opts, sample);
  const e2 = await endToEnd(2, opts, sample);
  const loadAfter = loadavg()[0];

  const target = `≥ ${TARGET_RECORDS_PER_S.toLocaleString('en-US')}`;
  const figures: Figure[] = [
    { name: 'end to end, 1 worker', value: e1.recordsPerS, unit: 'records/s', baseline: direct, better: 'higher', target },
    { name: 'end to end, 2 workers', value: e2.recordsPerS, unit: 'records/s', baseline: direct, better: 'higher', target },
    { name: 'server CPU per record, 1 worker', value: e1.cpuUsPerRecord, unit: 'µs', better: 'lower' },
    { name: 'server CPU per record, 2 workers', value: e2.cpuUsPerRecord, unit: 'µs', better: 'lower' },
    { name: `push of ${opts.lines} lines under load p50, 1 worker`, value: e1.loadP50Ms, unit: 'ms', better: 'lower' },
    { name: `push of ${opts.lines} lines under load p99, 1 worker`, value: e1.loadP99Ms, unit: 'ms', better: 'lower' },
    { name: `push of ${opts.lines} lines under load p50, 2 workers`, value: e2.loadP50Ms, unit: 'ms', better: 'lower' },
    { name: `push of ${opts.lines} lines under load p99, 2 workers`, value: e2.loadP99Ms, unit: 'ms', better: 'lower' },
    { name: 'single-payload push alone p50, 1 worker', value: e1.singleP50Ms, unit: 'ms', better: 'lower' },
    { name: 'single-payload push alone p99, 1 worker', value: e1.singleP99Ms, unit: 'ms', better: 'lower' },
    { name: 'sequential single-payload pushes, 1 worker', value: e1.singlePerS, unit: '/s', better: 'higher', target: '≥ 500' },
    { name: 'sample-rule invocations per worker', value: worker.perS, unit: '/s', better: 'higher' },
    { name: 'worker time per invocation', value: worker.workerUs, unit: 'µs', better: 'lower' },
    { name: 'store alone (ModelLog.save)', value: direct, unit: 'records/s', better: 'higher' },
  ];
  printTable('Rule runtime (RHILEX sample script), end to end', figures);
  const notes = [
    `NDJSON pushes of ${opts.lines} sample payloads on ${opts.connections} keep-alive connections from a separate process,`,
    `${opts.seconds} s per run, through POST /api/v1/inends/push -> the RHILEX sample rule -> the store (sync = interval,`,
    `sync_interval_ms = ${opts.syncIntervalMs}, the default); a push answers once its records are stored and visible, without`,
    'waiting for the next sync (contract 9). The baseline column is the same records appended straight to a',
    'ModelLog (no HTTP, no Lua). "server CPU per record" is the service process (main thread + workers) and does not',
    'depend on what else runs on the machine; records/s does. By thread (/proc, same timed part), 1 worker:',
    `${formatThreads(e1.threads)}; 2 workers: ${formatThreads(e2.threads)}. Load average (1 min) on this shared machine:`,
    `${loadBefore.toFixed(1)} before the run, ${loadAfter.toFixed(1)} after.${e1.rejected + e2.rejected > 0 ? ` 503 answers (queue full): ${e1.rejected + e2.rejected}.` : ''}`,
  ].join('\n');
  await writeResults('scripts', 'Rule runtime, end to end', 'store alone', figures, notes);
}

if (process.argv.includes('--client')) {
  serveChildJob(runClient);
} else {
  await main();
}
