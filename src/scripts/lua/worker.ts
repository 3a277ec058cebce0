/** The piscina entry of a script worker thread (script-worker.ts does the work). */
import { workerData } from 'node:worker_threads';
import type { SandboxLimits } from './lua-sandbox.js';
import { ScriptWorker } from './script-worker.js';
import type { WorkerTask } from '../shared/protocol.js';

/**
 * Piscina awaits a default-exported promise before it sends the first task. Rule errors never leave
 * `handle`; anything that does (a wasm trap, an unexpected exception) leaves the Lua heap suspect, so the
 * thread ends at once, synchronously (a setImmediate would never run: piscina keeps the thread busy with
 * the next task), the task fails with the worker, and piscina starts a fresh thread. So does a task
 * whose unhooked invocation ran past its time limit (it says so in its watch cell): the pool runs it
 * again hooked, in a fresh Lua state (overrun-watch.ts).
 */
export default ScriptWorker.create(workerData as SandboxLimits).then((worker) => (task: WorkerTask) => {
  try {
    return worker.handle(task);
  } catch {
    process.exit(1);
  }
});
