/**
 * The real CLI's `serve` as a child process, for the tests that look at what the process does on its
 * own (the modules it loads, what V8 optimizes): started with `nodeArgs` before dist/cli.js, resolved
 * once it prints that it listens (port undefined: it exited first; `output().err` says why).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

export interface ServeChild {
  child: ChildProcess;
  port: number | undefined;
  exited: Promise<void>;
  /** What it printed so far. */
  output(): { out: string; err: string };
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
}

export async function spawnServe(nodeArgs: string[], ini: string, env: NodeJS.ProcessEnv = process.env): Promise<ServeChild> {
  const child = spawn(process.execPath, [...nodeArgs, CLI, 'serve', '--config', ini], { stdio: ['ignore', 'pipe', 'pipe'], env });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const port = await new Promise<number | undefined>((resolve) => {
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    void exited.then(() => resolve(undefined));
  });
  return {
    child,
    port,
    exited,
    output: () => ({ out, err }),
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
