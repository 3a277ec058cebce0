/**
 * A real part started through spawnTied ends when the process that started it is killed with SIGKILL (no
 * exit hook runs); one started with a plain spawn outlives it, which is what this guards against.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../inputs/support.js';
import { isRunning, tiedCommand } from './tied-spawn.js';

const PARENT_SCRIPT = `
const { spawn } = require('node:child_process');
const [cmd, args] = JSON.parse(process.argv[1]);
const child = spawn(cmd, args, { stdio: 'ignore' });
process.stdout.write(child.pid + '\\n');
setInterval(() => {}, 1 << 30);
`;
/** How long a killed parent's child may take to go: generous, a busy machine must not fail the test. */
const END_WAIT_MS = 30_000;
const hasMosquitto = spawnSync('sh', ['-c', 'command -v mosquitto']).status === 0;
const strays: number[] = [];

afterAll(() => {
  for (const pid of strays) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
});

/** The name the kernel shows for `pid` (its program once it has exec'ed), or '' once it is gone. */
function programOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  } catch {
    return '';
  }
}

/**
 * Starts a node process that spawns [cmd, args], waits until the grandchild runs `program` (setpriv sets
 * the death signal before it execs that: a parent killed earlier leaves the child untied, a race of the
 * test, not of the tests' real parts, which are waited for), kills the node process with SIGKILL, and
 * returns the grandchild's pid.
 */
async function orphanOf(command: [string, string[]], program: string): Promise<number> {
  const parent = spawn(process.execPath, ['-e', PARENT_SCRIPT, JSON.stringify(command)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const pid = await new Promise<number>((resolve, reject) => {
    let out = '';
    parent.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('\n')) resolve(Number(out.trim()));
    });
    parent.once('exit', (code) => reject(new Error(`parent exited (${code}) before it spawned`)));
  });
  strays.push(pid);
  const until = Date.now() + END_WAIT_MS;
  while (programOf(pid) !== program && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
  expect(programOf(pid)).toBe(program);
  expect(isRunning(pid)).toBe(true);
  const gone = new Promise((resolve) => parent.once('exit', resolve));
  parent.kill('SIGKILL');
  await gone;
  return pid;
}

async function endsWithin(pid: number, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (!isRunning(pid)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return !isRunning(pid);
}

describe('spawnTied', () => {
  it('a tied child ends when its parent is killed', async () => {
    const pid = await orphanOf(tiedCommand('sleep', ['600']), 'sleep');
    expect(await endsWithin(pid, END_WAIT_MS)).toBe(true);
  });

  it('a plain child outlives its killed parent (what the tie prevents)', async () => {
    const pid = await orphanOf(['sleep', ['600']], 'sleep');
    expect(await endsWithin(pid, 500)).toBe(false);
    process.kill(pid, 'SIGKILL');
  });

  it.skipIf(!hasMosquitto)('a tied mosquitto, configured as the tests configure it, ends with its parent', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edc-tied-'));
    try {
      const conf = join(dir, 'mosquitto.conf');
      writeFileSync(conf, [`user ${userInfo().username}`, `listener ${await freePort('tcp')} 127.0.0.1`, 'allow_anonymous true', 'log_type error', ''].join('\n'));
      const pid = await orphanOf(tiedCommand('mosquitto', ['-c', conf]), 'mosquitto');
      expect(await endsWithin(pid, END_WAIT_MS)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
