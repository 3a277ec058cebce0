/**
 * InfluxDB 1.x (Debian's `influxdb` package) as a peer of the HTTP benchmarks: its own `influxd` with a
 * temporary config (data, meta and WAL under a temp dir, free ports, reporting, monitoring and logging
 * off, no auth) pinned to core 0, one database, and the sensor records as line protocol.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Row } from '../baselines/sqlite-store.js';
import { freePort, installed, pinned, stopChild, waitForHttp } from '../targets.js';

export const INFLUX_DB = 'bench';
export const INFLUX_MEASUREMENT = 'sensor';

export interface InfluxPeer {
  version: string;
  port: number;
  pid: number;
  /** The data and WAL directories, the disk use of the records. */
  storeDirs: string[];
  url(path: string): string;
  /** POSTs line protocol to /write (ms precision); throws unless 204. */
  write(lines: string): Promise<void>;
  stop(): Promise<void>;
}

/** Why InfluxDB cannot be measured here, or undefined when it can. */
export function influxMissing(): string | undefined {
  return installed('influxd') ? undefined : 'influxd is not installed (apt-get install influxdb)';
}

/**
 * One record as a line: `device_id` is a tag (how Influx users store a device), the other five are
 * fields, `battery` an integer; the timestamp is `timeMs`, distinct per record (same series and time
 * would overwrite a point).
 */
export function lineOf(row: Row, timeMs: number): string {
  return (
    `${INFLUX_MEASUREMENT},device_id=${row.device_id as string} temperature=${row.temperature as number},humidity=${row.humidity as number},` +
    `pressure=${row.pressure as number},battery=${row.battery as number}i,status="${row.status as string}" ${timeMs}`
  );
}

function configText(dir: string, httpPort: number, rpcPort: number): string {
  return [
    'reporting-enabled = false',
    `bind-address = "127.0.0.1:${rpcPort}"`,
    '[meta]',
    `  dir = "${join(dir, 'meta')}"`,
    '  logging-enabled = false',
    '[data]',
    `  dir = "${join(dir, 'data')}"`,
    `  wal-dir = "${join(dir, 'wal')}"`,
    '  query-log-enabled = false',
    // Snapshot the cache to TSM and compact soon after the writes stop, so the disk use read after the
    // ingest is the compacted one, not the WAL.
    '  cache-snapshot-write-cold-duration = "1s"',
    '  compact-full-write-cold-duration = "2s"',
    '[monitor]',
    '  store-enabled = false',
    '[subscriber]',
    '  enabled = false',
    '[continuous_queries]',
    '  enabled = false',
    '[http]',
    `  bind-address = "127.0.0.1:${httpPort}"`,
    '  auth-enabled = false',
    '  log-enabled = false',
    '  pprof-enabled = false',
    '',
  ].join('\n');
}

export async function startInflux(): Promise<InfluxPeer> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-influx-'));
  const port = await freePort();
  const configFile = join(dir, 'influxdb.conf');
  await writeFile(configFile, configText(dir, port, await freePort()));
  const version = spawnSync('influxd', ['version'], { encoding: 'utf8' }).stdout.trim().split(' (')[0];
  const [cmd, cmdArgs] = pinned(0, 'influxd', ['run', '-config', configFile]);
  const child: ChildProcess = spawn(cmd, cmdArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const base = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(child);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await waitForHttp(`${base}/ping`, 20_000, (status) => status === 204);
    const created = await fetch(`${base}/query?q=${encodeURIComponent(`CREATE DATABASE ${INFLUX_DB}`)}`, { method: 'POST' });
    if (created.status !== 200) throw new Error(`CREATE DATABASE answered ${created.status}: ${await created.text()}`);
  } catch (err) {
    await stop();
    throw new Error(`influxd did not start: ${(err as Error).message}\n${stderr}`);
  }
  return {
    version,
    port,
    pid: child.pid!,
    storeDirs: [join(dir, 'data'), join(dir, 'wal')],
    url: (path) => `${base}${path}`,
    async write(lines) {
      const res = await fetch(`${base}/write?db=${INFLUX_DB}&precision=ms`, { method: 'POST', body: lines });
      if (res.status !== 204) throw new Error(`influx /write answered ${res.status}: ${await res.text()}`);
    },
    stop,
  };
}
