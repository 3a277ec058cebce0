/**
 * HTTP ingest of the 6-attribute sensor record, side by side with its peers in one run: ours (pushes of
 * NDJSON to an HTTP input, a pass-through Lua rule doing rds:Save: the service's only way in over HTTP),
 * Redis 7 streams behind a node:http front (one XADD per record, pipelined per request), and InfluxDB 1.x
 * (line protocol to /write). Each server is pinned to core 0, the client (bench/ingest-client.ts) to core 1.
 * Figures: records/s, the server's CPU time per record (/proc, so other load on the machine does not
 * count), and disk bytes per record once the data is flushed. A peer not installed is skipped with the reason.
 * Usage: npm run bench:ingest [-- --records 200000 --batch 1000 --connections 8]
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { IngestJob, IngestResult } from './ingest-client.js';
import { influxMissing, startInflux } from './peers/influx.js';
import { redisMissing, startRedis } from './peers/redis.js';
import { FIELDS } from './records.js';
import { printTable, repoRoot, writeResults, type Figure } from './report.js';
import { diskBytes, pinned, processCpuMs, startTarget, stopChild, threadCpuMs, threadSplitUs } from './targets.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '200000' },
    batch: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '8' },
    /** Comma-separated peers to run (redis, influx); all installed ones by default. */
    peers: { type: 'string', default: 'redis,influx' },
  },
});
const wanted = new Set(args.peers.split(',').map((p) => p.trim()));
const records = Number(args.records);
const batch = Number(args.batch);
const connections = Number(args.connections);
/** Records sent before the clock starts: workers and JIT warm, files created. */
const WARM_UP_RECORDS = 10 * batch;
const ADMIN = 'bench-admin';

function progress(message: string): void {
  process.stderr.write(`[bench:ingest] ${message}\n`);
}

interface Ingest {
  recordsPerS: number;
  cpuUsPerRecord: number;
  diskBytesPerRecord: number;
  batchP99Ms: number;
  /** Anything else worth printing about the run. */
  note?: string;
  /** The CPU of the first process by thread (threadSplitUs). */
  threads: string;
}

async function client(job: Omit<IngestJob, 'batch' | 'connections' | 't0Ms'>, t0Ms: number): Promise<IngestResult> {
  const full: IngestJob = { ...job, batch, connections, t0Ms };
  const [cmd, cmdArgs] = pinned(1, process.execPath, [join(repoRoot, 'dist-bench', 'bench', 'ingest-client.js'), JSON.stringify(full)]);
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const code = await new Promise((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`ingest client exited with ${String(code)}`);
  const result = JSON.parse(out) as IngestResult;
  if (result.failed > 0) throw new Error(`${result.failed} records were refused`);
  return result;
}

/** Warm-up, then the timed run with the servers' CPU read around it; `flushed` waits and answers disk bytes. */
async function ingest(
  label: string,
  job: Omit<IngestJob, 'batch' | 'connections' | 't0Ms' | 'first' | 'records'>,
  pids: number[],
  flushed: () => Promise<number>,
): Promise<Ingest> {
  const t0Ms = Date.now();
  progress(`  ${label}: ${WARM_UP_RECORDS.toLocaleString()} records warm-up`);
  await client({ ...job, first: 0, records: WARM_UP_RECORDS }, t0Ms);
  progress(`  ${label}: ${records.toLocaleString()} records, ${batch} a request, ${connections} connections`);
  const cpuBefore = pids.reduce((sum, pid) => sum + processCpuMs(pid), 0);
  const threadsBefore = threadCpuMs(pids[0]);
  const result = await client({ ...job, first: WARM_UP_RECORDS, records }, t0Ms);
  const cpuMs = pids.reduce((sum, pid) => sum + processCpuMs(pid), 0) - cpuBefore;
  const threads = threadSplitUs(threadsBefore, threadCpuMs(pids[0]), pids[0], result.records);
  progress(`  ${label}: ${threads}`);
  return {
    recordsPerS: result.records / result.seconds,
    cpuUsPerRecord: (cpuMs * 1000) / result.records,
    diskBytesPerRecord: (await flushed()) / (WARM_UP_RECORDS + records),
    batchP99Ms: result.p99Ms,
    threads,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Disk use once it stops changing (Influx snapshots its WAL and compacts a few seconds after the writes). */
async function settledDisk(paths: string[], minWaitMs: number): Promise<number> {
  await sleep(minWaitMs);
  let last = diskBytes(paths);
  for (let i = 0; i < 30; i++) {
    await sleep(1000);
    const now = diskBytes(paths);
    if (now === last) return now;
    last = now;
  }
  return last;
}

async function admin(port: number, path: string, body: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as { data: Record<string, unknown> };
  if (res.status !== 200) throw new Error(`POST ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function ours(): Promise<Ingest> {
  progress('starting ours');
  const target = await startTarget('ours', ['--impl', 'ours', '--records', '0'], progress);
  try {
    const empty = diskBytes([target.dir!]);
    const input = await admin(target.port, '/api/v1/inends/create', { name: 'sensors', type: 'HTTP', description: '' });
    const actions = [
      'Actions = {',
      '  function(args)',
      '    local t, err = json:J2T(args)',
      '    if err ~= nil then Throw(err) end',
      `    local saveErr = rds:Save("${target.uuid}", t)`,
      '    if saveErr ~= nil then Throw(saveErr) end',
      '    return 0',
      '  end',
      '}',
    ].join('\n');
    await admin(target.port, '/api/v1/rules/create', { name: 'store', description: '', fromSource: [input.uuid], actions, success: '', failed: '' });
    const job = {
      url: `http://127.0.0.1:${target.port}/api/v1/inends/push?uuid=${input.uuid as string}`,
      headers: { Authorization: `Bearer ${input.token as string}`, 'Content-Type': 'application/x-ndjson' },
      format: 'ndjson' as const,
    };
    // The default sync interval is 1 s: the records are on disk after the next tick.
    return await ingest('ours', job, [target.child.pid!], async () => (await settledDisk([target.dir!], 1500)) - empty);
  } finally {
    await stopChild(target.child);
  }
}

async function redis(): Promise<Ingest> {
  const server = await startRedis();
  progress(`starting Redis ${server.version} and its streams front`);
  const target = await startTarget('redis', ['--impl', 'redis', '--records', '0', '--redis-port', String(server.port)], progress);
  try {
    const memoryBefore = await server.usedMemory();
    const empty = diskBytes([server.dir]);
    const job = {
      url: `http://127.0.0.1:${target.port}/write?uuid=${target.uuid}&secrets=${encodeURIComponent(target.secret)}`,
      headers: { 'Content-Type': 'application/x-ndjson' },
      format: 'ndjson' as const,
    };
    const result = await ingest('redis', job, [server.pid, target.child.pid!], async () => (await settledDisk([server.dir], 1500)) - empty);
    const memoryPerRecord = ((await server.usedMemory()) - memoryBefore) / (WARM_UP_RECORDS + records);
    return { ...result, note: `used_memory per record: ${memoryPerRecord.toFixed(1)} B` };
  } finally {
    await stopChild(target.child);
    await server.stop();
  }
}

async function influx(): Promise<{ version: string; result: Ingest }> {
  const server = await startInflux();
  progress(`starting ${server.version}`);
  try {
    const empty = diskBytes(server.storeDirs);
    const job = { url: server.url('/write?db=bench&precision=ms'), headers: { 'Content-Type': 'text/plain' }, format: 'line' as const };
    const result = await ingest('influx', job, [server.pid], async () => (await settledDisk(server.storeDirs, 4000)) - empty);
    return { version: server.version.replace('InfluxDB v', 'InfluxDB '), result };
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const notes: string[] = [];
  const peers: Record<string, Ingest> = {};
  const redisSkip = wanted.has('redis') ? redisMissing() : 'not asked for (--peers)';
  const influxSkip = wanted.has('influx') ? influxMissing() : 'not asked for (--peers)';
  for (const reason of [redisSkip, influxSkip]) {
    if (reason === undefined) continue;
    progress(`peer skipped: ${reason}`);
    notes.push(`Skipped: ${reason}.`);
  }

  const ourResult = await ours();
  if (!redisSkip) peers['Redis streams'] = await redis();
  if (!influxSkip) {
    const { version, result } = await influx();
    peers[version] = result;
  }
  const loadAfter = loadavg();
  const pick = (key: keyof Omit<Ingest, 'note' | 'threads'>) => Object.fromEntries(Object.entries(peers).map(([name, r]) => [name, r[key]]));
  const figures: Figure[] = [
    { name: 'ingest over HTTP', value: ourResult.recordsPerS, unit: 'rec/s', better: 'higher', peers: pick('recordsPerS') },
    { name: 'server CPU per record', value: ourResult.cpuUsPerRecord, unit: 'µs', better: 'lower', peers: pick('cpuUsPerRecord') },
    { name: 'disk per record, flushed', value: ourResult.diskBytesPerRecord, unit: 'B', better: 'lower', peers: pick('diskBytesPerRecord') },
    { name: `request p99 (${batch} records)`, value: ourResult.batchP99Ms, unit: 'ms', better: 'lower', peers: pick('batchP99Ms') },
  ];
  printTable(`HTTP ingest of ${records.toLocaleString()} records, ${batch} a request`, figures);
  console.log(`Ours: ${ourResult.threads}`);
  for (const [name, r] of Object.entries(peers)) if (r.note) console.log(`${name}: ${r.note}`);
  const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' ');
  await writeResults(
    'ingest',
    'HTTP ingest vs Redis streams and InfluxDB (`npm run bench:ingest`)',
    '–',
    figures,
    [
      `${records.toLocaleString()} records of the 6-attribute sensor record (${FIELDS.join(', ')}) after ${WARM_UP_RECORDS.toLocaleString()}`,
      `not timed, ${batch} a request, ${connections} keep-alive connections from a client process pinned to core 1; each`,
      'server pinned to core 0. Ours: NDJSON pushes to an HTTP input, a rule that decodes each line (json:J2T) and',
      'rds:Save()s it, the store with `sync = interval` (1 s, the default); a push answers once its records are stored',
      'and visible. Redis streams: redis-server with an append-only file fsynced every second behind a node:http',
      'front (bench/baselines/redis-stream-server.ts, speaking RESP itself: no Redis client is a dependency), one',
      'XADD per record pipelined per request; its CPU is redis-server plus the front. InfluxDB: line protocol to',
      '`/write?precision=ms` (device_id a tag, the rest fields), its defaults otherwise (the WAL fsynced per write',
      'request). Server CPU: user + system time of the server processes (all threads) from /proc during the timed',
      'part. Disk: allocated bytes (du) of the data once flushed and settled (Influx: WAL snapshotted to TSM and',
      'compacted), less the empty store, over all records written.',
      `Ours: ${ourResult.threads} (the busiest other thread is the Lua worker; the rest are V8's GC and compiler`,
      'threads and libuv\'s pool; /proc per thread, same timed part).',
      ...Object.entries(peers).flatMap(([name, r]) => (r.note ? [`${name}: ${r.note}.`] : [])),
      ...notes,
      `Load average (1, 5, 15 min) before the run: ${load(loadBefore)}; after: ${load(loadAfter)} (shared 2-core machine).`,
    ].join('\n'),
  );
}

await main();
