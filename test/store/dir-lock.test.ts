/**
 * The store directory's lock (src/store/base/dir-lock.ts) against holders in other processes: a live
 * holder is refused even when its start time reads differently from the one in the lock file (qemu user
 * emulation: a process's own /proc/<pid>/stat is qemu's answer, others read the kernel's), a killed one
 * is taken over, and so is a recycled pid, which does not have the lock file open. Runs on x64 and,
 * through `npm run test:arm`, under emulation, where the start times really differ.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { DirLock } from '../../src/store/base/dir-lock.js';
import { StateError } from '../../src/errors.js';
import { tiedCommand } from '../support/tied-spawn.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = path.join(here, '../../dist/store/base/dir-lock.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-dir-lock-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

let n = 0;
function newDir(): string {
  const dir = path.join(tmp, `d${n++}`);
  fs.mkdirSync(dir);
  return dir;
}

/** A node process (this one's binary: emulated under test:arm) that takes the lock on `dir` and keeps it. */
async function holderProcess(dir: string): Promise<ChildProcess> {
  const code = `import { DirLock } from ${JSON.stringify(compiled)}; DirLock.acquire(${JSON.stringify(dir)}); console.log('held'); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('held') && resolve());
    child.once('exit', (c) => reject(new Error(`the holder exited (${c}) before taking the lock: ${err}`)));
  });
  return child;
}

/** A process that is not an edge-datacenter: what a recycled pid looks like. */
function otherProcess(): ChildProcess {
  const child = spawn(...tiedCommand('sleep', ['60']), { stdio: 'ignore' });
  children.push(child);
  return child;
}

function startTime(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

describe('DirLock across processes', () => {
  it('a live holder is refused, naming its pid; after its kill -9 the lock is taken over', async () => {
    expect(fs.existsSync(compiled), 'dist/ missing: run `npx tsc -p tsconfig.json` (npm test does)').toBe(true);
    const dir = newDir();
    const holder = await holderProcess(dir);
    expect(() => DirLock.acquire(dir)).toThrow(StateError);
    expect(() => DirLock.acquire(dir)).toThrow(`data directory ${dir} is in use by process ${holder.pid}`);
    holder.kill('SIGKILL');
    await exited(holder);
    const lock = DirLock.acquire(dir);
    expect(JSON.parse(fs.readFileSync(path.join(dir, '.lock'), 'utf8')).pid).toBe(process.pid);
    lock.release();
    expect(fs.existsSync(path.join(dir, '.lock'))).toBe(false);
  }, 60_000);

  it('a live holder whose start time reads differently from the one in the lock file (as under qemu) is still refused', async () => {
    const dir = newDir();
    const holder = await holderProcess(dir);
    const file = path.join(dir, '.lock');
    const written = JSON.parse(fs.readFileSync(file, 'utf8')) as { pid: number; start: string };
    expect(written.pid).toBe(holder.pid);
    // In place (same inode, still open in the holder): the start time qemu made up for the holder's own read.
    fs.writeFileSync(file, JSON.stringify({ pid: written.pid, start: String(Number(startTime(written.pid)) + 5) }));
    expect(() => DirLock.acquire(dir)).toThrow(`data directory ${dir} is in use by process ${holder.pid}`);
    expect(JSON.parse(fs.readFileSync(file, 'utf8')).pid).toBe(holder.pid);
  }, 60_000);

  it("the start time a holder writes is the kernel's, as other processes read it", async () => {
    const dir = newDir();
    const holder = await holderProcess(dir);
    const written = JSON.parse(fs.readFileSync(path.join(dir, '.lock'), 'utf8')) as { pid: number; start: string };
    expect(written.pid).toBe(holder.pid);
    expect(written.start).toBe(startTime(written.pid));
  }, 60_000);

  it('a recycled pid (alive, another start time, not holding the file) is taken over', async () => {
    const dir = newDir();
    const other = otherProcess();
    fs.writeFileSync(path.join(dir, '.lock'), JSON.stringify({ pid: other.pid, start: '1' }));
    const lock = DirLock.acquire(dir);
    expect(JSON.parse(fs.readFileSync(path.join(dir, '.lock'), 'utf8')).pid).toBe(process.pid);
    lock.release();
  });

  it('a lock file of a holder that keeps no file open (an older version) is refused while its pid and start time match', async () => {
    const dir = newDir();
    const other = otherProcess();
    await new Promise((r) => setTimeout(r, 100));
    fs.writeFileSync(path.join(dir, '.lock'), JSON.stringify({ pid: other.pid, start: startTime(other.pid!) }));
    expect(() => DirLock.acquire(dir)).toThrow(`in use by process ${other.pid}`);
    other.kill('SIGKILL');
    await exited(other);
    DirLock.acquire(dir).release();
  });

  it('in one process: refused while held, free after release, and release closes the file', () => {
    const dir = newDir();
    const file = path.join(dir, '.lock');
    const lock = DirLock.acquire(dir);
    // By inode: the fd was opened under the temp name the lock file was linked from.
    const { ino, dev } = fs.statSync(file);
    const openOnLock = () =>
      fs.readdirSync('/proc/self/fd').filter((fd) => {
        try {
          const s = fs.statSync(`/proc/self/fd/${fd}`);
          return s.ino === ino && s.dev === dev;
        } catch {
          return false;
        }
      }).length;
    expect(openOnLock()).toBe(1);
    expect(() => DirLock.acquire(dir)).toThrow(`in use by process ${process.pid}`);
    expect(openOnLock()).toBe(1); // the refused attempt closed what it opened
    lock.release();
    expect(openOnLock()).toBe(0);
    expect(fs.readdirSync(dir)).toEqual([]);
    DirLock.acquire(dir).release();
  });
});
