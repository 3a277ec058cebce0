/**
 * Directories the service creates survive a power loss: every new directory's name is fsync'ed into its
 * parent before anything is written inside it. Checked on the real CLI under strace: each successful
 * mkdir is followed by an fsync of its parent directory.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const hasStrace = spawnSync('strace', ['-V']).status === 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-dirs-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('data directories', () => {
  it.runIf(hasStrace)('every directory the service creates is fsync-ed into its parent', async () => {
    const dataDir = path.join(tmp, 'gateway', 'var', 'data');
    const ini = path.join(tmp, 'service.ini');
    fs.writeFileSync(ini, `[main]\ndata_dir = ${dataDir}\nlog_level = warn\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n[scripts]\nworkers = 1\n`);
    const trace = path.join(tmp, 'trace.txt');
    const child = spawn('strace', ['-f', '-y', '-qq', '-e', 'trace=mkdir,mkdirat,fsync', '-o', trace, process.execPath, CLI, 'serve', '--config', ini], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('listening on')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`service exited ${code} before listening`)));
    });
    // SIGTERM to the service itself (strace would only detach); strace exits with it.
    const servicePid = Number(fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(' ')[0]);
    const exited = new Promise((r) => child.once('exit', r));
    process.kill(servicePid, 'SIGTERM');
    await exited;

    const lines = fs.readFileSync(trace, 'utf8').split('\n');
    const created: Array<{ dir: string; line: number }> = [];
    lines.forEach((l, i) => {
      const m = /mkdir(?:at)?\((?:[^,]*, )?"([^"]+)", [0-7]+\)\s+= 0/.exec(l);
      if (m) created.push({ dir: path.resolve(m[1]), line: i });
    });
    expect(created.map((c) => c.dir)).toEqual(expect.arrayContaining([path.join(tmp, 'gateway'), dataDir, path.join(dataDir, 'store')]));
    for (const c of created) {
      const parent = path.dirname(c.dir);
      const synced = lines.slice(c.line + 1).some((l) => l.includes(`fsync(`) && l.includes(`<${parent}>`) && /= 0$/.test(l.trim()));
      expect(synced, `${c.dir} is fsync-ed into ${parent}`).toBe(true);
    }
  }, 30_000);
});
