/**
 * queryAggregate in process (ModelLog.aggregate): a day of 10 records/s (864,000) and a year of 1 record/s
 * (31,536,000) into 1,000 buckets, every function on four numeric attributes. Reports the first call
 * after a restart (summaries read from .sum files, the active segment summarised), warm calls, and the
 * heap and disk the summaries cost.
 * Usage: npm run bench:aggregate [-- --year-records 31536000 --skip-year --skip-day]
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Store } from '../src/store/index.js';
import type { ModelLog } from '../src/store/index.js';
import type { StoreOptions } from '../src/store/base/types.js';
import { FIELDS, sensorRecord } from './records.js';
import { printTable, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    'year-records': { type: 'string', default: String(365 * 86_400) },
    'skip-year': { type: 'boolean', default: false },
    'skip-day': { type: 'boolean', default: false },
    runs: { type: 'string', default: '20' },
  },
});
const RUNS = Number(args.runs);
/** Calls with an interval not asked before; the first few also pay the JIT of the edge-block path (slowest row). */
const NEW_INTERVALS = 15;
const AGG_FIELDS = ['temperature', 'humidity', 'pressure', 'battery'];
const T0 = Date.parse('2026-01-01T00:00:00Z');
const realNow = Date.now;

function progress(message: string): void {
  process.stderr.write(`[bench:aggregate] ${message}\n`);
}

/** Compacted scenarios: small segments, so all but the newest two are compacted; the others keep their `.log`s. */
const COMPACTED_SEGMENT_BYTES = 1024 * 1024;

function options(rootDir: string, compacted: boolean): StoreOptions {
  return {
    rootDir,
    durability: 'none',
    compactSealed: compacted,
    syncIntervalMs: 1000,
    segmentBytesMax: compacted ? COMPACTED_SEGMENT_BYTES : 32 * 1024 * 1024,
    segmentAgeMsMax: 24 * 3600 * 1000,
    retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
  };
}

/** Writes `records` records stamped T0 + i * stepMs (the clock is set per record). */
async function fill(log: ModelLog, records: number, stepMs: number): Promise<void> {
  let t = T0;
  Date.now = () => t;
  try {
    for (let i = 0; i < records; i++) {
      t = T0 + i * stepMs;
      log.save(sensorRecord(i));
      if (i % 20_000 === 19_999) {
        await log.durable();
        if (i % 2_000_000 === 1_999_999) progress(`${i + 1} records written`);
      }
    }
    await log.durable();
  } finally {
    Date.now = realNow;
  }
}

async function diskBytes(dir: string, suffix: string): Promise<number> {
  let n = 0;
  for (const name of await readdir(dir)) if (name.endsWith(suffix)) n += (await stat(join(dir, name))).size;
  return n;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function scenario(label: string, records: number, stepMs: number, target: string, compacted = false): Promise<Figure[]> {
  const root = await mkdtemp(join(tmpdir(), 'bench-agg-'));
  try {
    let store = await Store.open(options(root, compacted));
    let log = await store.openModel('m', { fields: [...FIELDS] });
    progress(`${label}: writing ${records} records`);
    await fill(log, records, stepMs);
    await store.close();

    store = await Store.open(options(root, compacted));
    log = await store.openModel('m', { fields: [...FIELDS] });
    if (compacted) {
      progress(`${label}: compacting`);
      await log.compactionIdle();
    }
    // 7 ms over span/1000, so bucket edges fall inside blocks (with a round width they would all meet block
    // boundaries of this evenly spaced data, which real data does not do): each edge reads one block.
    const q = { fromMs: T0, toMs: T0 + records * stepMs, intervalMs: Math.ceil((records * stepMs) / 1000) + 7, fields: AGG_FIELDS };
    let t = performance.now();
    const first = await log.aggregate(q);
    const buildMs = performance.now() - t;
    progress(`${label}: first call ${buildMs.toFixed(0)} ms, ${first.length} buckets`);
    await store.close(); // the .sum files of every sealed segment are on disk now

    store = await Store.open(options(root, compacted));
    log = await store.openModel('m', { fields: [...FIELDS] });
    t = performance.now();
    await log.aggregate(q);
    const restartMs = performance.now() - t;
    const summaryMiB = log.stats().summaryBytes / 2 ** 20;
    const times: number[] = [];
    const cpuTimes: number[] = [];
    for (let r = 0; r < RUNS; r++) {
      t = performance.now();
      const cpu = process.cpuUsage();
      const b = await log.aggregate(q);
      times.push(performance.now() - t);
      const used = process.cpuUsage(cpu);
      cpuTimes.push((used.user + used.system) / 1000);
      if (b.length < 1000 || b.length > 1001) throw new Error(`expected 1000 buckets (1001 when not aligned to the epoch), got ${b.length}`);
    }
    // Another interval moves every bucket edge to other blocks: nothing is in the straddle cache.
    const coldTimes: number[] = [];
    const coldCpuTimes: number[] = [];
    for (let r = 1; r <= NEW_INTERVALS; r++) {
      t = performance.now();
      const cpu = process.cpuUsage();
      await log.aggregate({ ...q, intervalMs: q.intervalMs + r * 13 });
      coldTimes.push(performance.now() - t);
      const used = process.cpuUsage(cpu);
      coldCpuTimes.push((used.user + used.system) / 1000);
    }
    const dir = join(root, 'm');
    const sumBytes = await diskBytes(dir, '.sum');
    const logBytes = (await diskBytes(dir, '.log')) + (await diskBytes(dir, '.zlog'));
    await store.close();
    return [
      { name: `${label}: 1000 buckets, warm (median of ${RUNS})`, value: median(times), unit: 'ms', better: 'lower', target },
      { name: `${label}: 1000 buckets, warm, CPU time (median)`, value: median(cpuTimes), unit: 'ms', better: 'lower', target },
      { name: `${label}: 1000 buckets, slowest warm call`, value: Math.max(...times), unit: 'ms', better: 'lower' },
      { name: `${label}: ~1000 buckets, new interval (edge blocks not cached, median of ${NEW_INTERVALS})`, value: median(coldTimes), unit: 'ms', better: 'lower', target },
      { name: `${label}: ~1000 buckets, new interval, CPU time (median)`, value: median(coldCpuTimes), unit: 'ms', better: 'lower', target },
      { name: `${label}: ~1000 buckets, new interval, slowest call`, value: Math.max(...coldTimes), unit: 'ms', better: 'lower' },
      { name: `${label}: first call, nothing summarised yet`, value: buildMs, unit: 'ms', better: 'lower' },
      { name: `${label}: first call after a restart (.sum files)`, value: restartMs, unit: 'ms', better: 'lower' },
      { name: `${label}: summaries in memory`, value: summaryMiB, unit: 'MiB', better: 'lower' },
      { name: `${label}: summary files on disk`, value: sumBytes / 2 ** 20, unit: 'MiB', better: 'lower' },
      { name: `${label}: .sum bytes per stored byte`, value: sumBytes / logBytes, unit: '', better: 'lower' },
    ];
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const figures = args['skip-day'] ? [] : await scenario('day of 10/s (864k)', 864_000, 100, '< 20 ms');
  if (!args['skip-day']) figures.push(...(await scenario('day of 10/s, compacted', 864_000, 100, '< 20 ms', true)));
  if (!args['skip-year']) {
    const n = Number(args['year-records']);
    figures.push(...(await scenario(`year of 1/s (${(n / 1e6).toFixed(1)}M)`, n, 1000, '< 100 ms')));
  }
  printTable('queryAggregate in process', figures);
  await writeResults(
    'aggregate',
    'Aggregation into time buckets (`npm run bench:aggregate`)',
    '–',
    figures,
    [
      'ModelLog.aggregate in process, 1,000 buckets over the whole span, min/max/sum/count/first/last of four numeric',
      'attributes of the 6-attribute sensor record (bench/records.ts). Summaries hold per block of 64 ids the min/max',
      'create_at, the record count and per attribute count/min/max/sum/first/last (8 bytes each); a block inside one',
      'bucket is merged whole, a block across a bucket edge is read and decoded (at most one per edge). "First call,',
      'nothing summarised yet" reads every record once; after that sealed segments keep their summary in seg-N.sum',
      'and the active one is folded incrementally. Memory is what the summaries hold after the first call after a restart',
      '(ModelLog.stats().summaryBytes: their Float64Arrays, both levels, and the dictionary of non-numeric values).',
      'Blocks across an edge are kept decoded once read a second time for the same interval (straddle-cache.ts, 2,048',
      'blocks for the process): buckets are aligned to the epoch, so a chart refreshing the same interval meets the same',
      'edges and reads nothing from its third call on ("warm"; the warm calls follow one call of that interval); a new',
      'interval reads its edges and keeps none ("new interval"). CPU time is the process CPU per call, less disturbed by',
      'other load on the machine.',
      'The plain scenarios keep their sealed segments as written (compact_sealed off, 32 MiB segments); "compacted" writes',
      'the same day in 1 MiB segments with compaction on and waits until every segment but the newest sealed one and the',
      'active one is a .zlog, so an edge block costs a chunk decode instead of a pread.',
    ].join('\n'),
  );
}

await main();
