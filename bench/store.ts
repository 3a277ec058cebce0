/**
 * Storage engine against better-sqlite3 on the same records, in one run: append rate per durability
 * mode, update-last, latest read, a page of 1000 at depth 0 and 1M, restart time and index memory.
 * Usage: npm run bench:store [-- --records 1000000]
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Bench } from 'tinybench';
import { Store } from '../src/store/index.js';
import type { Durability, StoreOptions } from '../src/store/base/types.js';
import { SqliteBaseline, type Row } from './baselines/sqlite-store.js';
import { FIELDS, sensorRecord } from './records.js';
import { printTable, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '1000000' },
    sqliteRecords: { type: 'string', default: '200000' },
  },
});
const deepRecords = Number(args.records);
const sqliteRecords = Number(args.sqliteRecords);
const YIELD_EVERY = 10_000;

function progress(message: string): void {
  process.stderr.write(`[bench:store] ${message}\n`);
}

function storeOptions(rootDir: string, durability: Durability, compactSealed = true): StoreOptions {
  return {
    rootDir,
    durability,
    compactSealed,
    syncIntervalMs: 1000,
    segmentBytesMax: 32 * 1024 * 1024,
    segmentAgeMsMax: 24 * 3600 * 1000,
    retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
  };
}

async function withDir<T>(prefix: string, fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Sustained append rate: `count` records, yielding to the event loop every YIELD_EVERY so the writer
 * flushes as it would under a real producer; timed until the last record is accepted (the write
 * queue limit would refuse records if the writer could not keep up). Then waits for durability,
 * outside the timing: under `interval` that is the next timer tick, not a cost per record.
 */
async function appendRate(durability: Durability, count: number): Promise<number> {
  return withDir('bench-append-', async (dir) => {
    const store = await Store.open(storeOptions(dir, durability));
    const log = await store.openModel('BENCH', { fields: FIELDS });
    const records = Array.from({ length: 1024 }, (_, i) => sensorRecord(i));
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      log.save(records[i & 1023]);
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise(setImmediate);
    }
    const elapsedMs = performance.now() - started;
    await log.durable();
    if (log.stats().total !== count) throw new Error(`appended ${log.stats().total} of ${count}`);
    await store.close();
    return (count / elapsedMs) * 1000;
  });
}

/** `always`: `writers` concurrent loops, each awaiting durability of its own write before the next. */
async function groupCommitRate(writers: number, durationMs: number): Promise<number> {
  return withDir('bench-always-', async (dir) => {
    const store = await Store.open(storeOptions(dir, 'always'));
    const log = await store.openModel('BENCH', { fields: FIELDS });
    const deadline = performance.now() + durationMs;
    let written = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: writers }, async (_, w) => {
        while (performance.now() < deadline) {
          const id = log.save(sensorRecord(w));
          await log.durable(id);
          written++;
        }
      }),
    );
    const elapsedMs = performance.now() - started;
    await store.close();
    return (written / elapsedMs) * 1000;
  });
}

async function updateLastRate(count: number): Promise<number> {
  return withDir('bench-update-', async (dir) => {
    const store = await Store.open(storeOptions(dir, 'interval'));
    const log = await store.openModel('BENCH', { fields: FIELDS });
    log.save(sensorRecord(0));
    const patches = Array.from({ length: 1024 }, (_, i) => ({ temperature: 20 + i / 100, status: 'ok' }));
    const started = performance.now();
    for (let i = 0; i < count; i++) {
      log.updateLast(patches[i & 1023]);
      if (i % YIELD_EVERY === YIELD_EVERY - 1) await new Promise(setImmediate);
    }
    const elapsedMs = performance.now() - started;
    await log.durable();
    await store.close();
    return (count / elapsedMs) * 1000;
  });
}

function sqliteRate(dir: string, synchronous: 'NORMAL' | 'FULL', count: number, op: 'insert' | 'update'): number {
  const db = new SqliteBaseline({ file: join(dir, `${synchronous}-${op}.db`), synchronous, fields: FIELDS });
  db.insert(sensorRecord(0));
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    if (op === 'insert') db.insert(sensorRecord(i));
    else db.updateLast(sensorRecord(i));
  }
  const elapsedMs = performance.now() - started;
  db.close();
  return (count / elapsedMs) * 1000;
}

async function meanNs(name: string, fn: () => unknown | Promise<unknown>): Promise<number> {
  const bench = new Bench({ time: 1000, warmupTime: 200 });
  bench.add(name, fn);
  await bench.run();
  const result = bench.tasks[0]?.result;
  if (!result || !('latency' in result)) throw new Error(`benchmark ${name} produced no result`);
  return result.latency.mean * 1e6;
}

function heapUsed(): number {
  globalThis.gc?.();
  globalThis.gc?.();
  return process.memoryUsage().heapUsed;
}

/** Segment size of the compaction figures: 1M records fill about 16 of them, and all but the newest two are compacted. */
const COMPACTED_SEGMENT_BYTES = 4 * 1024 * 1024;

/**
 * Compacted sealed segments: `deepRecords` written with compaction off, a deep page read from the `.log`s, then
 * reopened with compaction on: the bytes a record of the `.zlog`s against their `.log`s, the CPU compaction took,
 * and the same deep page read from the `.zlog`s.
 */
async function compactedFigures(dir: string): Promise<Figure[]> {
  progress(`compaction: ${deepRecords.toLocaleString()} records in 4 MiB segments`);
  const options = (compactSealed: boolean): StoreOptions => ({ ...storeOptions(dir, 'none', compactSealed), segmentBytesMax: COMPACTED_SEGMENT_BYTES });
  const deepPage = Math.floor(deepRecords / 1000) - 100;
  let store = await Store.open(options(false));
  let log = await store.openModel('BENCH', { fields: FIELDS });
  for (let i = 0; i < deepRecords; i++) log.save(sensorRecord(i));
  await log.durable();
  const rawPage = await meanNs('page deep, .log', () => log.page({ current: deepPage, size: 1000, order: 'desc' }));
  await store.close();
  const cpu0 = process.cpuUsage();
  store = await Store.open(options(true));
  log = await store.openModel('BENCH', { fields: FIELDS });
  await log.compactionIdle();
  const cpu = process.cpuUsage(cpu0);
  const mdir = join(dir, 'BENCH');
  let zlogBytes = 0;
  let logicalBytes = 0;
  let records = 0;
  for (const name of readdirSync(mdir).filter((n) => n.endsWith('.zlog'))) {
    zlogBytes += statSync(join(mdir, name)).size;
    logicalBytes += readFileSync(join(mdir, name)).readUInt32LE(40);
    const idx = readFileSync(join(mdir, name.replace('.zlog', '.idx')));
    records += idx.readDoubleLE(24) - idx.readDoubleLE(16) + 1;
  }
  if (records === 0) throw new Error('no segment was compacted');
  const packedPage = await meanNs('page deep, compacted', () => log.page({ current: deepPage, size: 1000, order: 'desc' }));
  await store.close();
  const depth = `${((deepPage * 1000) / 1e6).toFixed(1)}M`;
  return [
    { name: 'sealed data per record, .log', value: logicalBytes / records, unit: 'B' },
    { name: 'sealed data per record, compacted (.zlog)', value: zlogBytes / records, unit: 'B', target: '<= 16 B' },
    { name: 'compaction CPU per record', value: ((cpu.user + cpu.system) / records) * 1000, unit: 'ns' },
    { name: `page 1000 at depth ${depth}, .log (4 MiB segments)`, value: rawPage / 1000, unit: 'µs' },
    { name: `page 1000 at depth ${depth}, compacted`, value: packedPage / 1000, unit: 'µs' },
    { name: 'page deep, compacted / .log', value: packedPage / rawPage, unit: 'x' },
  ];
}

async function main(): Promise<void> {
  const figures: Figure[] = [];
  await withDir('bench-sqlite-', async (sqliteDir) => {
    // The first mode measured would otherwise also pay for JIT warm-up and the first heap growth.
    progress('warm-up: 200,000 appends (not measured)');
    await appendRate('none', 200_000);
    progress(`append, interval: ${deepRecords.toLocaleString()} records`);
    const interval = await appendRate('interval', deepRecords);
    progress(`append, none: ${deepRecords.toLocaleString()} records`);
    const none = await appendRate('none', deepRecords);
    progress(`sqlite autocommit inserts (WAL, NORMAL): ${sqliteRecords.toLocaleString()}`);
    const sqliteNormal = sqliteRate(sqliteDir, 'NORMAL', sqliteRecords, 'insert');
    figures.push(
      { name: 'append interval', value: interval, unit: 'rec/s', baseline: sqliteNormal, better: 'higher', target: '>= 1,000,000 rec/s and >= 10x' },
      { name: 'append none', value: none, unit: 'rec/s', baseline: sqliteNormal, better: 'higher' },
    );

    progress('append, always, 64 concurrent writers: 5 s');
    const always = await groupCommitRate(64, 5000);
    progress('sqlite autocommit inserts (WAL, FULL): 3,000');
    const sqliteFull = sqliteRate(sqliteDir, 'FULL', 3000, 'insert');
    figures.push({ name: 'append always, 64 writers', value: always, unit: 'rec/s', baseline: sqliteFull, better: 'higher', target: '>= 50x' });

    progress(`update-last: ${deepRecords.toLocaleString()}`);
    const update = await updateLastRate(deepRecords);
    const sqliteUpdate = sqliteRate(sqliteDir, 'NORMAL', sqliteRecords, 'update');
    figures.push({ name: 'update-last interval', value: update, unit: 'rec/s', baseline: sqliteUpdate, better: 'higher' });

    await withDir('bench-deep-', async (dir) => {
      progress(`loading ${deepRecords.toLocaleString()} records into both engines`);
      // Loaded without compaction, like the figures of earlier runs: compacted segments have their own below.
      const store = await Store.open(storeOptions(dir, 'none', false));
      const log = await store.openModel('BENCH', { fields: FIELDS });
      for (let i = 0; i < deepRecords; i++) log.save(sensorRecord(i));
      await log.durable();
      const db = new SqliteBaseline({ file: join(sqliteDir, 'deep.db'), synchronous: 'NORMAL', fields: FIELDS });
      const batch: Row[] = [];
      for (let i = 0; i < deepRecords; i++) {
        batch.push(sensorRecord(i));
        if (batch.length === 10_000) db.insertMany(batch.splice(0));
        if (i % 250_000 === 0) progress(`  sqlite ${i.toLocaleString()}`);
      }
      db.insertMany(batch);

      progress('latest read');
      const latest = await meanNs('latest', () => log.latest());
      const sqliteLatest = await meanNs('sqlite latest', () => db.latest());
      figures.push({ name: 'latest read', value: latest, unit: 'ns', baseline: sqliteLatest, better: 'lower', target: '< 1,000 ns' });

      const deepPage = Math.floor(deepRecords / 1000);
      progress(`page of 1000 at depth 0 and at page ${deepPage}`);
      const page0 = await meanNs('page 0', () => log.page({ current: 1, size: 1000, order: 'desc' }));
      const pageDeep = await meanNs('page deep', () => log.page({ current: deepPage, size: 1000, order: 'desc' }));
      const sqlitePage0 = await meanNs('sqlite page 0', () => db.page(1, 1000));
      const sqlitePageDeep = await meanNs('sqlite page deep', () => db.page(deepPage, 1000));
      figures.push(
        { name: 'page 1000 at depth 0', value: page0 / 1000, unit: 'µs', baseline: sqlitePage0 / 1000, better: 'lower' },
        { name: `page 1000 at depth ${(deepRecords / 1e6).toFixed(1)}M`, value: pageDeep / 1000, unit: 'µs', baseline: sqlitePageDeep / 1000, better: 'lower' },
        { name: 'page depth cost (deep / depth 0)', value: pageDeep / page0, unit: 'x', target: '<= 1.5x' },
      );
      db.close();
      await store.close();

      progress('restart with a clean shutdown');
      const heapBefore = heapUsed();
      const started = performance.now();
      const reopened = await Store.open(storeOptions(dir, 'none'));
      const relog = await reopened.openModel('BENCH', { fields: FIELDS });
      const restartMs = performance.now() - started;
      const heapAfter = heapUsed();
      if (relog.stats().total !== deepRecords) throw new Error(`restart lost records: ${relog.stats().total}`);
      figures.push(
        { name: `clean restart, ${(deepRecords / 1e6).toFixed(1)}M records`, value: restartMs, unit: 'ms', target: '< 100 ms' },
        { name: 'heap per record after restart', value: (heapAfter - heapBefore) / deepRecords, unit: 'B', target: '<= 1 B sealed' },
      );
      await reopened.close();
    });
  });

  figures.push(...(await withDir('bench-compacted-', (dir) => compactedFigures(dir))));
  printTable('storage engine vs better-sqlite3', figures);
  await writeResults(
    'store',
    'Storage engine vs better-sqlite3 (`npm run bench:store`)',
    'better-sqlite3 (WAL)',
    figures,
    [
      'Records: 6 attributes (a string id, four numbers, a status string), about 100 bytes.',
      'Append and update-last rates are sustained rates: the producer yields every 10,000 records so the writer',
      'flushes alongside, timed until the last record is accepted; durability is awaited after the timing (for',
      '`interval` that is the next 1 s tick). `always` times each write until its own group-commit fdatasync.',
      'Baselines: appends compare with autocommit inserts under `synchronous=NORMAL`; `always` compares with',
      '`synchronous=FULL` autocommit inserts (one WAL fsync per commit); pages use `ORDER BY id DESC LIMIT 1000',
      'OFFSET n` as RHILEX does. Heap per record is measured on a reopened store (active segment dense, sealed sparse).',
      'Compaction: the same 1M records in 4 MiB segments, written with compaction off (the deep page is read from the',
      '`.log`s), then reopened with compaction on and timed until every segment but the newest sealed one and the',
      'active one is a `.zlog` (process CPU over that time); bytes a record over the compacted segments only.',
    ].join('\n'),
  );
}

await main();
