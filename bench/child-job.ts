/**
 * A load generator in a child process of the bench (so the client does not share the measured process):
 * the bench forks its own module with `flag`, sends the job and awaits the result; the child answers one
 * job and exits.
 */
import { fork } from 'node:child_process';

type Answer<R> = { ok: true; result: R } | { ok: false; error: string };

/** Forks `moduleFile` with `flag`, sends `job`, resolves with what `serveChildJob` in the child returned. */
export function runInChild<J, R>(moduleFile: string, flag: string, job: J): Promise<R> {
  return new Promise((resolve, reject) => {
    const child = fork(moduleFile, [flag], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    child.once('message', (message) => {
      const m = message as Answer<R>;
      if (m.ok) resolve(m.result);
      else reject(new Error(m.error));
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`load generator exited with ${code}`));
    });
    child.send(job as object);
  });
}

/** In the child: runs the one job the parent sends, answers, exits (1 when it failed). */
export function serveChildJob<J, R>(run: (job: J) => Promise<R>): void {
  process.once('message', (job) => {
    run(job as J).then(
      (result) => process.send!({ ok: true, result } satisfies Answer<R>, undefined, undefined, () => process.exit(0)),
      (err: Error) => process.send!({ ok: false, error: err.stack ?? err.message } satisfies Answer<R>, undefined, undefined, () => process.exit(1)),
    );
  });
}
