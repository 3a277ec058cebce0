/**
 * The real parts tests start (mosquitto, nats-server), and the services and stand-in processes they spawn
 * (`dist/cli.js serve`), die with the test process that started them, also when that process is killed
 * (a vitest run stopped with ^C or by CI's timeout runs no exit hook). Not tied: processes run under
 * strace (a forked tracee loses the death signal) and npm's scripts (it forks the service).
 * `setpriv --pdeathsig KILL` (util-linux, in every Debian) sets the parent-death signal and execs the
 * command, so the pid is the command's own and stopping it works as before. vitest runs the test files in
 * forks, on their main thread: the thread the signal is tied to lives as long as the file's process.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';

const hasSetpriv = spawnSync('setpriv', ['--help'], { encoding: 'utf8' }).stdout?.includes('--pdeathsig') === true;

/** The command and arguments that run `command` tied to the calling process (plain when setpriv is missing). */
export function tiedCommand(command: string, args: readonly string[]): [string, string[]] {
  return hasSetpriv ? ['setpriv', ['--pdeathsig', 'KILL', '--', command, ...args]] : [command, [...args]];
}

export function spawnTied(command: string, args: readonly string[], options: SpawnOptions): ChildProcess {
  const [cmd, cmdArgs] = tiedCommand(command, args);
  return spawn(cmd, cmdArgs, options);
}

/** Whether `pid` is a live process: a zombie nobody has reaped yet (no init in a container) counts as ended. */
export function isRunning(pid: number): boolean {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return false;
  }
  const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  return state !== 'Z' && state !== 'X';
}
