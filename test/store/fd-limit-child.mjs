// Child of fd-limit.test.ts, started under a low open-file limit (prlimit --nofile). One model with tiny
// segments (256 bytes, a handful of records each):
//   create <root> <segments>   writes until the model has that many segments
//   reopen <root> [crash]      opens what is there (recovery), checks it, writes more; `crash` exits
//                              without closing (the next open is unclean)
// Both read every record back (pages of 1000 across all segments, and an export), write more records,
// and print one JSON line: {segments, total, lastId, openFdsMax}. Any failure (EMFILE) exits 1 with the error.
// Imports the compiled store: run `npx tsc -p tsconfig.json` (npm test does) first.
import fs from 'node:fs';
import { Store, storeOptions } from '../../dist/store/index.js';

const [phase, rootDir, arg] = process.argv.slice(2);
const FIELDS = ['seq', 'tag'];
const record = (id) => ({ seq: id, tag: `t${id % 97}` });
let openFdsMax = 0;
const countOpenFds = () => (openFdsMax = Math.max(openFdsMax, fs.readdirSync('/proc/self/fd').length));

function check(cond, what) {
  if (!cond) throw new Error(`check failed: ${what}`);
}

/** Every record, by pages over all segments and by an export: ids 1..lastId, each holding its own values. */
async function readAll(log) {
  const { firstId, lastId } = log.stats();
  check(firstId === 1, `first id 1, got ${firstId}`);
  let next = 1;
  for (let current = 1; next <= lastId; current++) {
    const page = await log.page({ current, size: 1000, order: 'asc' });
    check(page.total === lastId, `total ${page.total} = ${lastId}`);
    check(page.records.length > 0, `page ${current} holds records`);
    for (const r of page.records) {
      check(r.id === next && r.seq === next && r.tag === record(next).tag, `page ${current}: record ${next}, got ${JSON.stringify(r)}`);
      next++;
    }
    countOpenFds();
  }
  const desc = await log.page({ current: 1, size: 10, order: 'desc' });
  check(desc.records[0]?.id === lastId, 'desc page starts at the newest record');
  let exported = 0;
  for await (const r of log.iterate({ select: ['id', 'seq'] })) {
    check(r.id === ++exported && r.seq === exported, `export: record ${exported}`);
    if (exported % 1000 === 0) countOpenFds();
  }
  check(exported === lastId, `export of ${lastId} records, got ${exported}`);
}

async function writeMore(log, n) {
  for (let i = 0; i < n; i++) log.save(record(log.stats().nextId));
  await log.durable(undefined, { rejectWhenReadOnly: true });
  countOpenFds();
}

const store = await Store.open(storeOptions({ rootDir, durability: 'interval', syncIntervalMs: 5, segmentBytesMax: 256 }));
const log = await store.openModel('many', { fields: FIELDS });
countOpenFds();
if (phase === 'create') {
  const segments = Number(arg);
  while (log.stats().segments < segments) await writeMore(log, 200);
} else {
  check(log.recovery.lostRanges.length === 0, `nothing lost at open: ${JSON.stringify(log.recovery)}`);
}
await readAll(log);
await writeMore(log, 50);
const st = log.stats();
const summary = { segments: st.segments, total: st.total, lastId: st.lastId, clean: log.recovery.clean, openFdsMax };
if (arg === 'crash') {
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exit(0);
}
await store.close();
process.stdout.write(`${JSON.stringify(summary)}\n`);
