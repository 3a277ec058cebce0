/**
 * The service under test: `node --max-semi-space-size=1 dist/cli.js serve` (what docs/deploy.md's
 * systemd unit runs) as a child process on a generated ini file, so its CPU time and memory are its own
 * and not the load generator's. Both are read from /proc, which is why the bench needs Linux.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchError } from '../errors.js';
import { BENCH_ADMIN, BENCH_SECRET } from './client.js';

const CLI = fileURLToPath(new URL('../cli.js', import.meta.url));
/** The V8 flags of scripts/start.mjs (npm run serve) and of docs/deploy.md's unit (test/bench/bench.test.ts checks). */
export const SERVICE_NODE_FLAGS = ['--max-semi-space-size=1'];
/** The environment scripts/start.mjs and the unit give the service, under the operator's own. */
export const SERVICE_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
/** /proc reports CPU time in USER_HZ ticks, 100 a second on every architecture a gateway runs (ARM, arm64, x86). */
const MS_PER_TICK = 10;
const MIB = 1_048_576;
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;

/** Smaller than the default 32 MiB: retention removes whole sealed segments, and the run keeps its disk use low. */
export const SEGMENT_BYTES = 16 * MIB;
export const RETENTION_BYTES = 64 * MIB;

export type Sync = 'interval' | 'always';

/**
 * What differs from the defaults: a private data directory, loopback on a free port, the bench's
 * credentials, and bounds on disk. Everything else (workers, queue, compaction, sync interval) is what a gateway runs.
 */
export function benchIni(dataDir: string, sync: Sync): string {
  return [
    '[main]',
    `data_dir = ${dataDir}`,
    `dataschema_secrets = ${BENCH_SECRET}`,
    `admin_token = ${BENCH_ADMIN}`,
    // info: the start-up line names the port and the transport; nothing logs at info per request.
    'log_level = info',
    '[plugin.http_server]',
    'host = 127.0.0.1',
    'port = 0',
    '[store]',
    `sync = ${sync}`,
    `segment_bytes = ${SEGMENT_BYTES}`,
    `retention_max_bytes = ${RETENTION_BYTES}`,
    '',
  ].join('\n');
}

/**
 * The environment of the child: the operator's, less the service's own overrides (a shell that exports
 * EDGE_DATACENTER_MAIN_DATA_DIR would otherwise point the bench at the production data), except the
 * transport, whose choice is part of what the bench measures.
 */
function childEnv(): NodeJS.ProcessEnv {
  const env = { ...SERVICE_ENV, ...process.env };
  for (const key of Object.keys(env)) {
    if (key.startsWith('EDGE_DATACENTER_') && key !== 'EDGE_DATACENTER_HTTP_TRANSPORT') delete env[key];
  }
  return env;
}

export class ServiceProcess {
  /** How the child ended (its exit code or signal); undefined while it runs. */
  private ended: string | undefined;
  private stopping = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly port: number,
    /** `uws` or `node`, as the service resolved `transport = auto`. */
    readonly transport: string,
    /** The service's last lines of output, for the message when it fails. */
    private readonly tail: string[],
    private readonly exited: Promise<void>,
  ) {
    void exited.then(() => (this.ended = String(child.exitCode ?? child.signalCode)));
  }

  static async start(dir: string, dataDir: string, sync: Sync): Promise<ServiceProcess> {
    if (process.platform !== 'linux') {
      throw new BenchError(`the bench reads the service's CPU time and memory from /proc, which ${process.platform} does not have: run it on the Linux gateway`);
    }
    const ini = join(dir, `bench-${sync}.ini`);
    await writeFile(ini, benchIni(dataDir, sync));
    // A process group of its own: a Ctrl-C in the terminal reaches the bench only, which stops the service
    // with one SIGTERM (a second signal would make it exit without its clean shutdown).
    const child = spawn(process.execPath, [...SERVICE_NODE_FLAGS, CLI, 'serve', '--config', ini], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv(), detached: true });
    const tail: string[] = [];
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const listening = new Promise<{ port: number; transport: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new BenchError(`the service did not listen within ${START_TIMEOUT_MS / 1000} s:\n${tail.join('\n')}`)), START_TIMEOUT_MS);
      const onLine = (line: string): void => {
        tail.push(line);
        if (tail.length > 40) tail.shift();
        const entry = logEntry(line);
        if (entry?.msg === 'listening' && entry.port !== undefined && entry.transport !== undefined) {
          clearTimeout(timer);
          resolve({ port: entry.port, transport: entry.transport });
        }
      };
      lines(child.stdout!, onLine);
      lines(child.stderr!, onLine);
      void exited.then(() => {
        clearTimeout(timer);
        reject(new BenchError(`the service exited with ${child.exitCode ?? child.signalCode} while starting:\n${tail.join('\n')}`));
      });
    });
    try {
      const { port, transport } = await listening;
      return new ServiceProcess(child, port, transport, tail, exited);
    } catch (err) {
      child.kill('SIGKILL');
      await exited;
      throw err;
    }
  }

  /** User and system CPU time of the service, all its threads (the Lua workers too), in ms. */
  async cpuMs(): Promise<number> {
    const stat = await this.proc('stat');
    // The fields after the command name, which is in parentheses and may hold spaces: state is [0].
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * MS_PER_TICK;
  }

  /** Resident set size of the service, in bytes. */
  async rssBytes(): Promise<number> {
    const kb = /^VmRSS:\s+(\d+) kB/m.exec(await this.proc('status'))?.[1];
    if (kb === undefined) throw new BenchError(`/proc/${this.child.pid}/status has no VmRSS line`);
    return Number(kb) * 1024;
  }

  /** Why a call to the service failed when the service is gone; undefined while it runs. */
  failure(): string | undefined {
    if (this.ended === undefined || this.stopping) return undefined;
    return `the service exited with ${this.ended} during the run:\n${this.tail.join('\n')}`;
  }

  /** SIGTERM and the clean shutdown the systemd unit relies on; a shutdown that fails is a finding. */
  async stop(): Promise<void> {
    if (this.ended !== undefined) return;
    this.stopping = true;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await this.exited;
    clearTimeout(timer);
    if (this.child.exitCode !== 0) {
      throw new BenchError(`the service did not stop cleanly (${this.child.exitCode ?? this.child.signalCode}):\n${this.tail.join('\n')}`);
    }
  }

  private async proc(file: 'stat' | 'status'): Promise<string> {
    try {
      return await readFile(`/proc/${this.child.pid}/${file}`, 'utf8');
    } catch {
      throw new BenchError(this.failure() ?? `cannot read /proc/${this.child.pid}/${file}`);
    }
  }
}

/** A JSON log line of the service (pino), or undefined for any other line. */
function logEntry(line: string): { msg?: string; port?: number; transport?: string } | undefined {
  if (!line.startsWith('{"')) return undefined;
  try {
    return JSON.parse(line) as { msg?: string; port?: number; transport?: string };
  } catch {
    return undefined;
  }
}

/** Calls `onLine` with each line of `stream`; reading it also keeps the child from blocking on a full pipe. */
function lines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): void {
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString('utf8')).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) if (line.length > 0) onLine(line);
  });
}
