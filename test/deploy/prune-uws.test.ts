/**
 * scripts/prune-uws.mjs (issue 15): it keeps only the uWS binary the running Node loads and removes
 * the others, refuses when that binary is missing, and the service still starts afterwards. Real
 * processes on copies in temp directories: the shared node_modules is never touched.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { copyInstall, HOST_UWS_BINARY as HOST, ROOT } from '../support/install-copy.js';
import { tiedCommand } from '../support/tied-spawn.js';

const SCRIPT = join(ROOT, 'scripts', 'prune-uws.mjs');
const OTHERS = ['uws_darwin_arm64_127.node', `uws_${process.platform}_${process.arch}_999.node`, 'uws_win32_x64_115.node'];

let dir: string;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** A node_modules with a uWebSockets.js whose bin/ holds `names` (fake contents). */
async function fakeTree(names: string[]): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), 'edc-prune-'));
  const bin = join(dir, 'node_modules', 'uWebSockets.js', 'dist', 'bin');
  await mkdir(bin, { recursive: true });
  for (const name of names) await writeFile(join(bin, name), 'x'.repeat(1000));
  return join(dir, 'node_modules');
}

function prune(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('prune-uws', () => {
  it('keeps the binary of this platform, CPU and Node ABI and removes the others', async () => {
    const nodeModules = await fakeTree([HOST, ...OTHERS]);
    const r = prune('--dir', nodeModules);
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(`kept ${HOST}; removed 3 other binaries`);
    expect(await readdir(join(nodeModules, 'uWebSockets.js', 'dist', 'bin'))).toEqual([HOST]);
  });

  it('--dry-run removes nothing', async () => {
    const nodeModules = await fakeTree([HOST, ...OTHERS]);
    const r = prune('--dir', nodeModules, '--dry-run');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('would remove 3 other binaries');
    expect((await readdir(join(nodeModules, 'uWebSockets.js', 'dist', 'bin'))).sort()).toEqual([HOST, ...OTHERS].sort());
  });

  it('refuses, removing nothing, when the binary this Node needs is not there', async () => {
    const nodeModules = await fakeTree(OTHERS);
    const r = prune('--dir', nodeModules);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`${HOST} is missing`);
    expect(r.stderr).toContain('nothing removed');
    expect((await readdir(join(nodeModules, 'uWebSockets.js', 'dist', 'bin'))).sort()).toEqual([...OTHERS].sort());
  });

  it('the service starts and answers /healthz on a pruned copy of the install', async () => {
    // A copy of the install with the host uWS binary and two foreign ones.
    dir = await mkdtemp(join(tmpdir(), 'edc-prune-'));
    const copy = await copyInstall(dir);
    const foreign = (await readdir(copy.sharedBinDir)).filter((f) => f !== HOST).slice(0, 2);
    for (const file of [HOST, ...foreign]) await cp(join(copy.sharedBinDir, file), join(copy.binDir, file));

    const r = prune('--dir', join(dir, 'node_modules'));
    expect(r.status).toBe(0);
    expect(await readdir(copy.binDir)).toEqual([HOST]);

    await writeFile(join(dir, 'gw.ini'), `[main]\ndata_dir = ${join(dir, 'data')}\nlog_level = warn\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n`);
    const child = spawn(...tiedCommand(process.execPath, [join(dir, 'dist', 'cli.js'), 'serve', '--config', join(dir, 'gw.ini')]), { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
          if (m) resolve(Number(m[1]));
        });
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        child.once('exit', (code) => reject(new Error(`exited with ${code}: ${out}`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(res.status).toBe(200);
      // The copy's own uWS loaded, not the shared one.
      const maps = await readFile(`/proc/${child.pid}/maps`, 'utf8');
      expect(maps).toContain(join(copy.binDir, HOST));
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
  });
});
