/**
 * `npm start` and `npm run serve` (scripts/start.mjs, issue 34): they serve from a checkout and from a
 * production install (the `npm pack` tarball, unpacked, `npm ci --omit=dev`: no TypeScript; with the files
 * docs/getting-started.md links to), with the V8 flag and the malloc setting of docs/deploy.md, and a stop signal sent to the npm process alone stops the service
 * cleanly: npm exits only once the service has, the port is free and the data lock released. Real npm
 * processes; the data in temp directories.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ROOT } from '../support/install-copy.js';

let dir: string | undefined;
afterEach(async () => {
  if (dir === undefined) return;
  // A service left running by a failed case still names itself in the data lock.
  const lock = await readFile(join(dir, 'data', 'store', '.lock'), 'utf8').catch(() => undefined);
  if (lock !== undefined) {
    try {
      process.kill((JSON.parse(lock) as { pid: number }).pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

interface NpmRun {
  npm: ChildProcess;
  port: number;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** npm's output has ended: every process that shared it is gone. */
  closed: Promise<void>;
}

/** `npm run <script> -- --config <dir>/gw.ini` in `cwd`, in a process group of its own, once it listens. */
async function npmServe(script: string, cwd: string): Promise<NpmRun> {
  const root = dir as string;
  const ini = join(root, 'gw.ini');
  await writeFile(ini, `[main]\ndata_dir = ${join(root, 'data')}\nlog_level = info\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n`);
  const npm = spawn('npm', ['run', script, '--', '--config', ini], { cwd, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  npm.stdout.on('data', (c: Buffer) => (out += c.toString()));
  npm.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise<number>((resolve, reject) => {
    npm.stdout.on('data', () => {
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(({ code }) => reject(new Error(`npm run ${script} exited with ${code} before listening:\n${out}`)));
  });
  const closed = new Promise<void>((resolve) => npm.once('close', () => resolve()));
  return { npm, port, output: () => out, exited, closed };
}

/** `cmd args` in `cwd` to its end (not spawnSync: the test's timeout must still be able to fire). */
function run(cmd: string, args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * True when nothing listens on 127.0.0.1:port any more: a connection is refused. (Not a bind: the test's
 * request leaves the service's side of its connection in TIME_WAIT, and a bind of the port then fails.)
 */
function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/** npm exited 0 once the service had stopped cleanly: port free, data lock gone, the clean-stop lines written. */
async function expectStoppedCleanly(served: NpmRun, signal: string): Promise<void> {
  const { code } = await served.exited;
  expect(code, served.output()).toBe(0);
  expect(await portFree(served.port)).toBe(true);
  expect(existsSync(join(dir as string, 'data', 'store', '.lock'))).toBe(false);
  await served.closed;
  expect(served.output()).toContain(`"signal":"${signal}","msg":"stopping: flushing and closing the store"`);
  expect(served.output()).toContain('"msg":"stopped cleanly"');
  expect(served.output()).not.toContain('second signal');
}

describe('npm start and npm run serve', () => {
  it('npm run serve: a SIGTERM to the npm process alone stops the service cleanly', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-start-'));
    const served = await npmServe('serve', ROOT);
    expect((await fetch(`http://127.0.0.1:${served.port}/healthz`)).status).toBe(200);
    // The service (the data lock's pid) runs with the start script's flags and environment.
    const pid = (JSON.parse(await readFile(join(dir, 'data', 'store', '.lock'), 'utf8')) as { pid: number }).pid;
    expect((await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0')).toContain('--max-semi-space-size=1');
    const environ = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0');
    expect(environ).toContain(`MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? '2'}`);
    process.kill(served.npm.pid as number, 'SIGTERM');
    await expectStoppedCleanly(served, 'SIGTERM');
  }, 60_000);

  it('npm start: a Ctrl-C (SIGINT to the whole process group, npm relaying it too) stops the service cleanly', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-start-'));
    const served = await npmServe('start', ROOT);
    process.kill(-(served.npm.pid as number), 'SIGINT');
    await expectStoppedCleanly(served, 'SIGINT');
  }, 60_000);

  it('npm start serves from a production install (the packed tarball, npm ci --omit=dev) and stops on SIGTERM; the getting-started files are there', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-start-'));
    // The tarball as `npm pack` makes it: prepack's build is the shared dist/ (fresh: the global setup),
    // and its copy of the lock is added here, so the checkout is not written to.
    const pack = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT);
    expect(pack.code, pack.stderr).toBe(0);
    const release = join(dir, 'release');
    await mkdir(release);
    const tarball = join(dir, (JSON.parse(pack.stdout) as Array<{ filename: string }>)[0].filename);
    expect((await run('tar', ['xzf', tarball, '-C', release, '--strip-components=1'], dir)).code).toBe(0);
    await copyFile(join(ROOT, 'package-lock.json'), join(release, 'npm-shrinkwrap.json'));
    // docs/deploy.md's install; --prefer-offline takes the packages from npm's cache when it has them.
    const ci = await run('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline'], release);
    expect(ci.code, ci.stderr).toBe(0);
    expect(existsSync(join(release, 'node_modules', 'typescript'))).toBe(false);
    // docs/getting-started.md is followed on such an install too: the files it links to are there.
    const guide = await readFile(join(release, 'docs', 'getting-started.md'), 'utf8');
    const linked = [...guide.matchAll(/\]\(((?!https?:)[^)#]+)/g)].map((m) => join(release, 'docs', m[1]));
    expect(linked.length).toBeGreaterThan(0);
    expect(linked.filter((file) => !existsSync(file))).toEqual([]);

    const served = await npmServe('start', release);
    expect((await fetch(`http://127.0.0.1:${served.port}/healthz`)).status).toBe(200);
    process.kill(served.npm.pid as number, 'SIGTERM');
    await expectStoppedCleanly(served, 'SIGTERM');
  }, 600_000);
});
