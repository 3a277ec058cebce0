// A Lua worker (dist/scripts/lua/worker.js) whose cold start takes SLOW_START_MS longer: piscina awaits the
// default export before it sends the worker its first task, as it awaits the real worker's isolate and wasm
// compile. test/scripts/pool-idle.test.ts uses it to make a cold start far longer than the hard time limit
// on any machine, loaded or not, instead of relying on how long a real start happens to take.
import ready from '../../dist/scripts/lua/worker.js';

export const SLOW_START_MS = 3000;

export default Promise.all([ready, new Promise((resolve) => setTimeout(resolve, SLOW_START_MS))]).then(([handle]) => handle);
