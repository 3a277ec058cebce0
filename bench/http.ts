/**
 * HTTP read path against the reference server (node:http + better-sqlite3) in one run: queryLastData
 * and queryDataList (size 100 and 1000, shallow and deep pages), requests/s and p99, with and without
 * 10,000 writes/s going on. Each server runs alone in a child process pinned to core 0; the load
 * generator (wrk, else autocannon's absence is reported) runs on core 1.
 * Usage: npm run bench:http [-- --records 1000000 --seconds 5]
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { printTable, repoRoot, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '50' },
  },
});
const records = Number(args.records);
const seconds = Number(args.seconds);
const connections = Number(args.connections);

interface Target {
  child: ChildProcess;
  port: number;
  uuid: string;
  secret: string;
}

interface Load {
  requestsPerS: number;
  p99Ms: number;
  errors: number;
}

function progress(message: string): void {
  process.stderr.write(`[bench:http] ${message}\n`);
}

const hasTaskset = spawnSync('taskset', ['--version']).status === 0;
const pinned = (core: number, cmd: string, cmdArgs: string[]): [string, string[]] =>
  hasTaskset ? ['taskset', ['-c', String(core), cmd, ...cmdArgs]] : [cmd, cmdArgs];

async function startTarget(impl: 'ours' | 'sqlite', writesPerS: number): Promise<Target> {
  const script = join(repoRoot, 'dist-bench', 'bench', 'http-target.js');
  const [cmd, cmdArgs] = pinned(0, process.execPath, [script, '--impl', impl, '--records', String(records), '--writes', String(writesPerS)]);
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    const match = /^READY (\d+) (\S+) (\S+)$/.exec(line);
    if (match) return { child, port: Number(match[1]), uuid: match[2], secret: match[3] };
    progress(`  ${impl}: ${line}`);
  }
  throw new Error(`${impl} target exited before it was ready`);
}

async function stopTarget(target: Target): Promise<void> {
  const exited = new Promise((resolve) => target.child.once('exit', resolve));
  target.child.kill('SIGTERM');
  await exited;
}

function parseWrk(output: string): Load {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(output);
  const p99 = /\s99%\s+([\d.]+)(us|ms|s)\b/.exec(output);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(output);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  if (!rps || !p99) throw new Error(`cannot read wrk output:\n${output}`);
  const scale = p99[2] === 'us' ? 1e-3 : p99[2] === 's' ? 1e3 : 1;
  const errors = Number(non2xx?.[1] ?? 0) + (socketErrors ? socketErrors.slice(1).reduce((n, v) => n + Number(v), 0) : 0);
  return { requestsPerS: Number(rps[1]), p99Ms: Number(p99[1]) * scale, errors };
}

function runWrk(url: string): Load {
  const [cmd, cmdArgs] = pinned(1, 'wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url]);
  const result = spawnSync(cmd, cmdArgs, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr}`);
  return parseWrk(result.stdout);
}

function scenarios(t: Target): Array<{ name: string; url: string }> {
  const base = `http://127.0.0.1:${t.port}/api/v1/datacenter`;
  const q = `uuid=${t.uuid}&secrets=${encodeURIComponent(t.secret)}`;
  const deep100 = Math.floor(records / 100) - 1;
  const deep1000 = Math.floor(records / 1000) - 1;
  return [
    { name: 'queryLastData', url: `${base}/queryLastData?${q}` },
    { name: 'queryDataList size 100, page 1', url: `${base}/queryDataList?${q}&current=1&size=100` },
    { name: `queryDataList size 100, page ${deep100}`, url: `${base}/queryDataList?${q}&current=${deep100}&size=100` },
    { name: 'queryDataList size 1000, page 1', url: `${base}/queryDataList?${q}&current=1&size=1000` },
    { name: `queryDataList size 1000, page ${deep1000}`, url: `${base}/queryDataList?${q}&current=${deep1000}&size=1000` },
  ];
}

async function measure(impl: 'ours' | 'sqlite', writesPerS: number): Promise<Map<string, Load>> {
  progress(`starting ${impl} with ${records.toLocaleString()} records, ${writesPerS} writes/s`);
  const target = await startTarget(impl, writesPerS);
  const loads = new Map<string, Load>();
  try {
    for (const s of scenarios(target)) {
      progress(`  ${impl}: ${s.name} (${seconds} s)`);
      loads.set(s.name, runWrk(s.url));
    }
  } finally {
    await stopTarget(target);
  }
  return loads;
}

async function main(): Promise<void> {
  if (spawnSync('wrk', ['--version']).error) {
    throw new Error('wrk is not installed: apt-get install wrk (the benchmark needs a load generator outside Node)');
  }
  const figures: Figure[] = [];
  for (const writesPerS of [0, 10_000]) {
    const ours = await measure('ours', writesPerS);
    const sqlite = await measure('sqlite', writesPerS);
    const suffix = writesPerS ? ', 10k writes/s' : '';
    for (const [name, load] of ours) {
      const base = sqlite.get(name)!;
      if (load.errors || base.errors) progress(`  errors in ${name}: ours ${load.errors}, sqlite ${base.errors}`);
      figures.push(
        { name: `${name}${suffix} req/s`, value: load.requestsPerS, unit: 'req/s', baseline: base.requestsPerS, better: 'higher' },
        { name: `${name}${suffix} p99`, value: load.p99Ms, unit: 'ms', baseline: base.p99Ms, better: 'lower' },
      );
    }
  }
  printTable('HTTP reads vs node:http + better-sqlite3', figures);
  await writeResults(
    'http',
    'HTTP reads vs node:http + better-sqlite3 (`npm run bench:http`)',
    'node:http + better-sqlite3',
    figures,
    [
      `wrk, 1 thread, ${connections} connections, ${seconds} s per figure, on loopback; each server in its own`,
      'process pinned to core 0, wrk on core 1. Same model (6 attributes), same records, same secret check and',
      'envelope. The reference answers a list with `count(*)` + `LIMIT/OFFSET` and the latest with',
      '`ORDER BY id DESC LIMIT 1`, as RHILEX does. Writes, when on, are appended inside the server process by a',
      '10 ms timer (100 records a tick).',
    ].join('\n'),
  );
}

await main();
