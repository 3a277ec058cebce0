/**
 * `[plugin.http_server] transport` (issue 15) with real processes. Where no uWS binary loads (no binary
 * for this Node's ABI, as on Node 24; or one that dlopen refuses, as a glibc build on musl), `auto` serves
 * on node:http and says why in one start-up line, and `uws` stops the start with one line. `node` never
 * loads uWS. The copies of the install live in temp directories; the shared node_modules is not touched.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyInstall, HOST_UWS_BINARY, ROOT } from '../support/install-copy.js';
import { TRANSPORT_ENV } from '../support/transport.js';
import { tiedCommand } from '../support/tied-spawn.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

interface Run {
  /** The port once it listens; undefined when it exited first. */
  port: number | undefined;
  code: number | null;
  stderr: string;
  logs: LogLine[];
  pid: number;
  stop(): Promise<void>;
}

/** `serve` with `transport`, the environment without the tests' own transport override. */
async function serve(cli: string, transport: string): Promise<Run> {
  const ini = join(dir as string, 'gw.ini');
  await writeFile(ini, `[main]\ndata_dir = ${join(dir as string, 'data')}\nlog_level = info\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\ntransport = ${transport}\n`);
  const env = { ...process.env };
  delete env[TRANSPORT_ENV];
  const child = spawn(...tiedCommand(process.execPath, [cli, 'serve', '--config', ini]), { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number | undefined>((resolve) => {
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stdout);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => resolve(undefined));
  });
  const logs = (): LogLine[] => stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine);
  // The 'listening' log line follows the stdout line that announced the port.
  if (port !== undefined) while (!logs().some((l) => l.msg === 'listening')) await new Promise((r) => setTimeout(r, 20));
  return {
    port,
    code: port === undefined ? await exited : null,
    stderr,
    logs: logs(),
    pid: child.pid as number,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** The uWS binaries mapped into the process. */
async function uwsMapped(pid: number): Promise<string[]> {
  return (await readFile(`/proc/${pid}/maps`, 'utf8')).split('\n').filter((l) => /uws_\w+\.node/.test(l));
}

const FALLBACK = /^serving HTTP with node:http \(transport = node\): uWebSockets\.js does not load here: /;

describe('transport where uWS does not load', () => {
  const cases: Array<[string, (binDir: string) => Promise<void>, string]> = [
    ['no binary for this Node (as on Node 24)', async () => {}, HOST_UWS_BINARY],
    ['a binary dlopen refuses (as a glibc build on musl)', (binDir) => writeFile(join(binDir, HOST_UWS_BINARY), 'not a shared object\n'.repeat(256)), 'invalid ELF header'],
  ];

  it.each(cases)('%s: auto serves on node:http and says why in one start-up line', async (_name, prepare, reason) => {
    dir = await mkdtemp(join(tmpdir(), 'edc-transport-'));
    const copy = await copyInstall(dir);
    await prepare(copy.binDir);
    const run = await serve(copy.cli, 'auto');
    try {
      expect(run.port, run.stderr).toBeDefined();
      const fallback = run.logs.filter((l) => FALLBACK.test(l.msg));
      expect(fallback).toHaveLength(1);
      expect(fallback[0].level).toBe(40);
      expect(fallback[0].msg).toContain(reason);
      expect(fallback[0].msg).toContain('WebSocket live reads are off; SSE works');
      expect(fallback[0].msg).not.toContain('\n');
      expect(run.logs.find((l) => l.msg === 'listening')).toMatchObject({ transport: 'node' });
      const health = await fetch(`http://127.0.0.1:${run.port}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ code: 200 });
      expect(await uwsMapped(run.pid)).toEqual([]);
    } finally {
      await run.stop();
    }
  }, 30_000);

  it.each(cases)('%s: transport = uws stops the start with one line naming the key and the reason', async (_name, prepare, reason) => {
    dir = await mkdtemp(join(tmpdir(), 'edc-transport-'));
    const copy = await copyInstall(dir);
    await prepare(copy.binDir);
    const run = await serve(copy.cli, 'uws');
    await run.stop();
    expect(run.port).toBeUndefined();
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^edge-datacenter: \[plugin\.http_server\] transport = uws, but uWebSockets\.js does not load here: /);
    expect(lines[0]).toContain(reason);
    expect(lines[0]).toContain('Set transport = node or auto');
  }, 30_000);
});

describe('transport where uWS loads', () => {
  it('auto serves on uWS without a fallback line; node never loads uWS', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-transport-'));
    const cli = join(ROOT, 'dist', 'cli.js');
    const auto = await serve(cli, 'auto');
    try {
      expect(auto.logs.find((l) => l.msg === 'listening')).toMatchObject({ transport: 'uws' });
      expect(auto.logs.filter((l) => FALLBACK.test(l.msg))).toEqual([]);
      expect((await uwsMapped(auto.pid)).join('\n')).toContain(HOST_UWS_BINARY);
    } finally {
      await auto.stop();
    }
    const node = await serve(cli, 'node');
    try {
      expect(node.logs.find((l) => l.msg === 'listening')).toMatchObject({ transport: 'node' });
      expect(node.logs.filter((l) => FALLBACK.test(l.msg))).toEqual([]);
      expect((await fetch(`http://127.0.0.1:${node.port}/healthz`)).status).toBe(200);
      expect(await uwsMapped(node.pid)).toEqual([]);
    } finally {
      await node.stop();
    }
  }, 30_000);
});

describe('where auto falls back, as the defaults file and docs/configuration.md say', () => {
  it('names the Node versions after the newest one uws-pack ships binaries for', async () => {
    // uws-pack's loader names the Node majors it has binaries for ("… versions 18, 20, 21 and 22 on …").
    const loader = await readFile(join(ROOT, 'node_modules', 'uWebSockets.js', 'dist', 'uws.mjs'), 'utf8');
    const versions = /supports only Node\.js versions ([\d, and]+) on/.exec(loader)?.[1].match(/\d+/g)?.map(Number) ?? [];
    expect(versions.length).toBeGreaterThan(0);
    const unsupported = `Node ${Math.max(...versions) + 1} and later`;
    const defaults = spawnSync(process.execPath, [join(ROOT, 'dist', 'cli.js'), 'config', '--print-defaults'], { encoding: 'utf8' });
    expect(defaults.status).toBe(0);
    expect(defaults.stdout.replace(/\n; /g, ' ')).toContain(`(musl, ${unsupported};`);
    expect(await readFile(join(ROOT, 'docs', 'configuration.md'), 'utf8')).toContain(`musl such as Alpine or OpenWrt, ${unsupported},`);
  });
});
