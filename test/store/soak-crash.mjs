// kill -9 harness: a child (crash-child.mjs) appends with durability `always`; the parent SIGKILLs it at a
// random moment, reopens the store and checks: every durable id is there, ids have no gaps except ids
// reported lost (handed out, never durable, and then never handed out again), each record is one the
// child wrote, and the newest record is at least as new as the last durable one. Then it starts the next round on the same directory.
//   node test/store/soak-crash.mjs [--rounds N] [--seconds S]      (needs `npx tsc -p tsconfig.json` first)
// Prints one line per round and a JSON summary last; exits 1 on the first failed check.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Store, storeOptions } from '../../dist/store/index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const rounds = arg('rounds', 1000);
const seconds = arg('seconds', 3600);
const quiet = process.argv.includes('--quiet');
const rootDir = fs.mkdtempSync(path.join(os.tmpdir(), 'store-crash-'));

function runChild(seed) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(here, 'crash-child.mjs'), rootDir, String(seed)], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let buf = '';
    let last = { id: 0, ver: 0 };
    let durableLines = 0;
    let timer;
    child.stdout.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const [kind, a, b] = buf.slice(0, nl).split(' ');
        buf = buf.slice(nl + 1);
        if (kind === 'R' && !timer) timer = setTimeout(() => child.kill('SIGKILL'), 20 + Math.random() * 250);
        if (kind === 'D') {
          durableLines++;
          last = { id: Number(a), ver: Number(b) };
        }
      }
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal !== 'SIGKILL') reject(new Error(`child exited with ${code ?? signal} before the kill`));
      else resolve({ last, durableLines });
    });
  });
}

async function verify(round, last) {
  const store = await Store.open(storeOptions({ rootDir, segmentBytesMax: 16 * 1024 }));
  const log = await store.openModel('crash', { fields: ['seq', 'ver', 'tag', 'pad'] });
  const fail = (msg) => {
    throw new Error(`round ${round}: ${msg} (durable ${last.id}:${last.ver}, recovery ${JSON.stringify(log.recovery)})`);
  };
  // Ids handed out but never durable are reported lost and stay unused (recovery); no other gap may exist.
  const news = log.findingsAtOpen().lostRanges;
  for (const r of news) if (r.fromId <= last.id) fail(`ids ${r.fromId}-${r.toId} lost although ${last.id} was durable`);
  const known = log.findings()?.lostRanges ?? [];
  const isLost = (id) => known.some((r) => r.fromId <= id && id <= r.toId);
  let expectId = 1;
  let newest;
  for await (const r of log.iterate()) {
    while (expectId < r.id && isLost(expectId)) expectId++;
    if (r.id !== expectId) fail(`gap: expected id ${expectId}, got ${r.id}`);
    if (r.seq !== r.id || r.tag !== `${r.id}:${r.ver}`) fail(`record ${r.id} is not one the child wrote: ${JSON.stringify(r)}`);
    expectId++;
    newest = r;
  }
  const lastId = newest?.id ?? 0;
  if (lastId < last.id) fail(`durable id ${last.id} missing, last id ${lastId}`);
  const latest = log.latest();
  if (lastId > 0 && (latest?.id !== newest.id || latest.ver !== newest.ver)) fail(`latest ${JSON.stringify(latest)} is not the newest record`);
  if (latest?.id === last.id && latest.ver < last.ver) fail(`durable update ${last.id}:${last.ver} lost, have ver ${latest.ver}`);
  const report = log.recovery;
  await store.close();
  return { lastId, truncatedBytes: report.truncatedBytes, scannedBytes: report.scannedBytes };
}

const t0 = Date.now();
const summary = { rounds: 0, records: 0, durableAcks: 0, truncatedBytes: 0, tornTails: 0, failures: 0 };
try {
  for (let round = 1; round <= rounds && Date.now() - t0 < seconds * 1000; round++) {
    const { last, durableLines } = await runChild(round * 7919);
    const v = await verify(round, last);
    summary.rounds = round;
    summary.records = v.lastId;
    summary.durableAcks += durableLines;
    summary.truncatedBytes += v.truncatedBytes;
    if (v.truncatedBytes > 0) summary.tornTails++;
    if (!quiet) console.log(`round ${round}: durable ${last.id}:${last.ver}, stored ${v.lastId}, cut ${v.truncatedBytes} B, scanned ${v.scannedBytes} B`);
  }
} catch (e) {
  summary.failures++;
  console.error(e.message);
  process.exitCode = 1;
} finally {
  fs.rmSync(rootDir, { recursive: true, force: true });
}
summary.seconds = (Date.now() - t0) / 1000;
console.log(JSON.stringify(summary));
