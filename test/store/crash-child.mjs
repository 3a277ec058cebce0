// Child of the kill -9 harness (soak-crash.mjs): appends with durability `always` and prints
// "D <id> <ver>" each time everything up to record <id> at version <ver> is durable. Runs until killed.
// Imports the compiled store: run `npx tsc -p tsconfig.json` (npm test does) first.
import { Store, storeOptions } from '../../dist/store/index.js';

const [rootDir, seedArg] = process.argv.slice(2);
let seed = Number(seedArg) >>> 0 || 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

const store = await Store.open(storeOptions({ rootDir, durability: 'always', segmentBytesMax: 16 * 1024 }));
const log = await store.openModel('crash', { fields: ['seq', 'ver', 'tag', 'pad'] });
let ver = log.latest()?.ver ?? 0;
const record = (id, v) => ({ seq: id, ver: v, tag: `${id}:${v}`, pad: 'p'.repeat(id % 50) });

process.stdout.write(`R ${log.stats().lastId}\n`);
for (;;) {
  const n = 1 + Math.floor(rand() * 20);
  let id = 0;
  for (let i = 0; i < n; i++) {
    const next = log.stats().nextId;
    ver = 0;
    id = log.save(record(next, ver));
  }
  if (rand() < 0.4) {
    const updates = 1 + Math.floor(rand() * 5);
    for (let u = 0; u < updates; u++) {
      ver++;
      log.updateLast({ ver, tag: `${id}:${ver}` });
    }
  }
  const v = ver;
  await log.durable(id);
  process.stdout.write(`D ${id} ${v}\n`);
}
