/**
 * Redis 7 (Debian's `redis-server`) as a peer of the HTTP benchmarks: its own server on a free loopback
 * port, pinned to core 0, data in a temp dir, persisted as users who keep data do: append-only file,
 * fsync every second (as our `sync = interval` default), no RDB snapshots. The HTTP front is
 * bench/baselines/redis-stream-server.ts, run by bench/http-target.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RespClient } from '../baselines/resp-client.js';
import { freePort, installed, pinned, stopChild } from '../targets.js';

export interface RedisPeer {
  version: string;
  port: number;
  pid: number;
  dir: string;
  /** INFO memory's used_memory, in bytes. */
  usedMemory(): Promise<number>;
  stop(): Promise<void>;
}

export function redisMissing(): string | undefined {
  return installed('redis-server') ? undefined : 'redis-server is not installed (apt-get install redis-server)';
}

async function connectWithin(port: number, timeoutMs: number): Promise<RespClient> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await RespClient.connect(port);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function startRedis(): Promise<RedisPeer> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-redis-'));
  const port = await freePort();
  const version = /v=(\S+)/.exec(spawnSync('redis-server', ['--version'], { encoding: 'utf8' }).stdout)?.[1] ?? 'unknown';
  const serverArgs = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec'];
  const [cmd, cmdArgs] = pinned(0, 'redis-server', serverArgs);
  const child: ChildProcess = spawn(cmd, cmdArgs, { stdio: ['ignore', 'ignore', 'inherit'] });
  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  let client: RespClient;
  try {
    client = await connectWithin(port, 10_000);
  } catch (err) {
    await stop();
    throw new Error(`redis-server did not start: ${(err as Error).message}`);
  }
  return {
    version,
    port,
    pid: child.pid!,
    dir,
    async usedMemory() {
      const info = (await client.command('INFO', 'memory')) as string;
      return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? 0);
    },
    async stop() {
      client.close();
      await stop();
    },
  };
}
