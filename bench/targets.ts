/**
 * What bench/http.ts and bench/ingest.ts share: servers under test in child processes pinned to core 0
 * (bench/http-target.ts), wrk on core 1, and the server-side costs read from outside the process
 * (CPU time from /proc, disk use with du), so a peer written in another language is measured the same way.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { repoRoot } from './report.js';

export const hasTaskset = spawnSync('taskset', ['--version']).status === 0;

/** The command line that runs `cmd` on one core (unchanged where taskset is missing). */
export function pinned(core: number, cmd: string, cmdArgs: string[]): [string, string[]] {
  return hasTaskset ? ['taskset', ['-c', String(core), cmd, ...cmdArgs]] : [cmd, cmdArgs];
}

/** Whether `name` is a command on PATH. */
export function installed(name: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${name}`]).status === 0;
}

export interface Target {
  child: ChildProcess;
  port: number;
  uuid: string;
  secret: string;
  /** The target's data directory, when it has one (`DIR <path>` before READY). */
  dir?: string;
}

/**
 * The node flags of `npm run serve`, so the figures are those of the documented command: the script runs
 * scripts/start.mjs, which starts the service with its NODE_FLAGS.
 */
export function serveNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  if (!pkg.scripts.serve.includes('scripts/start.mjs')) throw new Error(`package.json scripts.serve does not run scripts/start.mjs: ${pkg.scripts.serve}`);
  const start = readFileSync(join(repoRoot, 'scripts', 'start.mjs'), 'utf8');
  const flags = /^const NODE_FLAGS = (\[[^\]]*\]);$/m.exec(start);
  if (flags === null) throw new Error('scripts/start.mjs has no line "const NODE_FLAGS = [...];"');
  return JSON.parse(flags[1].replaceAll("'", '"')) as string[];
}

/** The environment scripts/start.mjs sets for the service (SERVE_ENV), without the caller's. */
function startScriptEnv(): Record<string, string> {
  const start = readFileSync(join(repoRoot, 'scripts', 'start.mjs'), 'utf8');
  const env = /^const SERVE_ENV = (\{[^}]*\});$/m.exec(start);
  if (env === null) throw new Error('scripts/start.mjs has no line "const SERVE_ENV = {...};"');
  return JSON.parse(env[1].replaceAll("'", '"').replace(/(\w+):/g, '"$1":')) as Record<string, string>;
}

/** The environment `npm run serve` gives the service: the bench's own over SERVE_ENV, as the start script does. */
export function serveEnv(): NodeJS.ProcessEnv {
  return { ...startScriptEnv(), ...process.env };
}

/** SERVE_ENV's variables as the service gets them (the bench's own value where it has one), for a report: `NAME=value ` each. */
export function serveEnvText(): string {
  return Object.entries(startScriptEnv())
    .map(([name, value]) => `${name}=${process.env[name] ?? value} `)
    .join('');
}

/**
 * BENCH_TARGET_FLAGS: node flags for the targets only, space-separated, for profiling them
 * (`--cpu-prof --cpu-prof-dir=/tmp/prof`: NODE_OPTIONS refuses --cpu-prof, and would profile the clients too).
 */
function profilingFlags(): string[] {
  return (process.env.BENCH_TARGET_FLAGS ?? '').split(' ').filter((flag) => flag !== '');
}

/**
 * Starts bench/http-target.js with `args` on core 0 and waits for its READY line. Every target (ours and
 * the peers' Node fronts) runs with the service's node flags and environment: V8's young generation changes the tail.
 */
export async function startTarget(label: string, args: string[], log: (m: string) => void): Promise<Target> {
  const script = join(repoRoot, 'dist-bench', 'bench', 'http-target.js');
  const [cmd, cmdArgs] = pinned(0, process.execPath, [...serveNodeFlags(), ...profilingFlags(), script, ...args]);
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'inherit'], env: serveEnv() });
  let dir: string | undefined;
  for await (const line of createInterface({ input: child.stdout! })) {
    const ready = /^READY (\d+) (\S+) (\S+)$/.exec(line);
    if (ready) return { child, port: Number(ready[1]), uuid: ready[2], secret: ready[3], dir };
    const dirLine = /^DIR (\S+)$/.exec(line);
    if (dirLine) dir = dirLine[1];
    else log(`  ${label}: ${line}`);
  }
  throw new Error(`${label} target exited before it was ready`);
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export interface Load {
  /** Requests answered in the run. */
  requests: number;
  requestsPerS: number;
  p99Ms: number;
  errors: number;
}

export function parseWrk(output: string): Load {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(output);
  const requests = /(\d+) requests in/.exec(output);
  const p99 = /\s99%\s+([\d.]+)(us|ms|s)\b/.exec(output);
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(output);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  if (!rps || !p99) throw new Error(`cannot read wrk output:\n${output}`);
  const scale = p99[2] === 'us' ? 1e-3 : p99[2] === 's' ? 1e3 : 1;
  const errors = Number(non2xx?.[1] ?? 0) + (socketErrors ? socketErrors.slice(1).reduce((n, v) => n + Number(v), 0) : 0);
  return { requests: Number(requests?.[1] ?? 0), requestsPerS: Number(rps[1]), p99Ms: Number(p99[1]) * scale, errors };
}

/** A request slower than this counts as an error (wrk's default is 2 s: deep pages of some peers take longer). */
export const WRK_TIMEOUT_S = 10;

function wrkCommand(url: string, connections: number, seconds: number): [string, string[]] {
  return pinned(1, 'wrk', ['-t1', `-c${connections}`, `-d${seconds}s`, `--timeout`, `${WRK_TIMEOUT_S}s`, '--latency', url]);
}

/** wrk on core 1: one thread, `connections` keep-alive connections, `seconds` long. */
export function runWrk(url: string, connections: number, seconds: number): Load {
  const [cmd, cmdArgs] = wrkCommand(url, connections, seconds);
  const result = spawnSync(cmd, cmdArgs, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr}`);
  return parseWrk(result.stdout);
}

/** runWrk without blocking this process: for a server that runs in it. */
export function runWrkAsync(url: string, connections: number, seconds: number): Promise<Load> {
  const [cmd, cmdArgs] = wrkCommand(url, connections, seconds);
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(parseWrk(out)) : reject(new Error(`wrk failed: ${err}`)))));
}

const TICKS_PER_S = Number((spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout ?? '').trim()) || 100;

/** User + system CPU time of a process and all its threads so far, in ms (10 ms resolution). */
export function processCpuMs(pid: number): number {
  return statCpuMs(`/proc/${pid}/stat`);
}

/** User + system CPU time in ms of a /proc stat file: a process's (all threads) or one thread's (task/<tid>/stat). */
function statCpuMs(path: string): number {
  const stat = readFileSync(path, 'utf8');
  // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_S;
}

/** User + system CPU time so far of each thread of a process, in ms by thread id (the main thread's is the pid). */
export function threadCpuMs(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(Number(tid), statCpuMs(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/**
 * The CPU a process took per record between two threadCpuMs readings, split as a profile needs it: the
 * main thread, the busiest other thread (in bench:ingest, the one Lua worker of a 2-core machine) and the rest
 * (V8's GC and compiler threads, libuv's pool).
 */
export function threadSplitUs(before: Map<number, number>, after: Map<number, number>, pid: number, records: number): string {
  const { main, busiest, rest } = threadSplit(before, after, pid, records, 1);
  const us = (value: number) => `${value.toFixed(2)} µs`;
  return `server CPU per record by thread: main ${us(main)}, busiest other thread ${us(busiest)}, the rest ${us(rest)}`;
}

/**
 * The same split as numbers (µs a record): the main thread, the `busiestCount` busiest other threads
 * together (the Lua workers, when the process runs that many), and the rest.
 */
export function threadSplit(
  before: Map<number, number>,
  after: Map<number, number>,
  pid: number,
  records: number,
  busiestCount: number,
): { main: number; busiest: number; rest: number } {
  const used = [...after].map(([tid, ms]) => ({ tid, ms: ms - (before.get(tid) ?? 0) }));
  const main = used.find((t) => t.tid === pid)?.ms ?? 0;
  const others = used.filter((t) => t.tid !== pid).sort((a, b) => b.ms - a.ms);
  const sum = (list: typeof others) => list.reduce((total, t) => total + t.ms, 0);
  const us = (ms: number) => (ms * 1000) / records;
  return { main: us(main), busiest: us(sum(others.slice(0, busiestCount))), rest: us(sum(others.slice(busiestCount))) };
}

/** Bytes the paths take on disk (allocated blocks, as `du` counts them); a path not created yet is 0. */
export function diskBytes(paths: readonly string[]): number {
  const present = paths.filter((path) => existsSync(path));
  if (present.length === 0) return 0;
  const result = spawnSync('du', ['-s', '--block-size=1', ...present], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`du failed: ${result.stderr}`);
  return result.stdout
    .trim()
    .split('\n')
    .reduce((sum, line) => sum + Number(line.split('\t')[0]), 0);
}

/** A loopback port nobody listens on right now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function waitForHttp(url: string, timeoutMs: number, isUp: (status: number) => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url);
      await res.arrayBuffer();
      if (isUp(res.status)) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
