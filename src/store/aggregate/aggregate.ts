/**
 * Aggregation into time buckets (contract 10) from the segment summaries: a block of records whose
 * create_at all fall into one bucket is merged whole; a block that straddles a bucket edge (or `from` or
 * `to`) is read and its records are placed one by one. So the cost is the number of blocks plus at most
 * one block read per bucket edge, whatever the number of records; and the answer is exact, also after a
 * clock step (placement never assumes sorted timestamps). A segment whose newest create_at is before
 * `from`, or whose summary starts at or after `to`, is skipped.
 */
import { SyncBytesReader, visitFrames, type BufferedBytes, type HeldSegments, type LostFn } from '../read/reader.js';
import type { Segment } from '../segment/segment.js';
import { StatsTable, type FieldStats } from './stats-table.js';
import { COARSE_BLOCKS, SUMMARY_BLOCK_RECORDS, SegmentSummary } from './segment-summary.js';
import type { SummaryBook } from './summaries.js';
import { straddleCache } from './straddle-cache.js';
import { blockIntact } from './block-checksum.js';
import { BlockColumnsBuilder, ColumnPlan, type BlockColumns } from './block-columns.js';
import { InvalidArgumentError } from '../../errors.js';

export const AGGREGATE_BUCKETS_MAX = 10_000;
/**
 * Buckets times fields: what an answer holds (six statistics a cell, 48 bytes, before its JSON). 10,000
 * buckets of 1,024 fields would have allocated 470 MiB before reading a record.
 */
export const AGGREGATE_CELLS_MAX = 200_000;

export interface AggregateQuery {
  /** Inclusive, ms since the epoch. */
  fromMs: number;
  /** Exclusive. */
  toMs: number;
  /** Buckets start at multiples of this since the epoch. */
  intervalMs: number;
  /** Field names (attributes) to aggregate. */
  fields: readonly string[];
}

export interface Bucket {
  startMs: number;
  /** Records in the bucket. */
  count: number;
  /** In the order of `fields`. */
  stats: FieldStats[];
}

export interface NewestRecord {
  id: number;
  ts: number;
  values: readonly unknown[];
}

/** Bucket index range of a query; throws when it is not one. */
export function bucketSpan(q: AggregateQuery): { first: number; count: number } {
  if (!Number.isFinite(q.fromMs) || !Number.isFinite(q.toMs) || q.fromMs >= q.toMs) {
    throw new InvalidArgumentError(`aggregate: fromMs must be before toMs, got ${q.fromMs} and ${q.toMs}`);
  }
  if (!Number.isSafeInteger(q.intervalMs) || q.intervalMs < 1) throw new InvalidArgumentError(`aggregate: intervalMs must be an integer >= 1, got ${q.intervalMs}`);
  const first = Math.floor(q.fromMs / q.intervalMs);
  const count = Math.floor((q.toMs - 1) / q.intervalMs) - first + 1;
  if (count > AGGREGATE_BUCKETS_MAX) {
    throw new InvalidArgumentError(`aggregate: ${count} buckets of ${q.intervalMs} ms, more than ${AGGREGATE_BUCKETS_MAX}`);
  }
  if (count * q.fields.length > AGGREGATE_CELLS_MAX) {
    throw new InvalidArgumentError(`aggregate: ${count} buckets of ${q.fields.length} fields make ${count * q.fields.length} cells, more than ${AGGREGATE_CELLS_MAX}`);
  }
  return { first, count };
}

interface Straddle {
  summary: SegmentSummary;
  seg: Segment;
  block: number;
  /** The block's last id this aggregation reads (a concurrent one may have folded newer ids into it). */
  lastId: number;
}

/** Straddles read per bucket edge before this many yield to the event loop once. */
const SYNC_READS_PER_TURN = 256;

/**
 * The asked columns of a straddling block's records: from the straddle cache, else read. A block is a few
 * KiB, mostly in the page cache: read synchronously it costs a few microseconds, against tens for a round
 * trip through the thread pool, so blocks are read synchronously, SYNC_READS_PER_TURN between turns of the
 * event loop, the part still in memory (active segment) copied from the write buffer as readRange does.
 * Each block is placed before the next is read: holding every decoded straddle of a call until the end
 * took 64 values of every asked column per bucket edge (up to 10,000 edges of 1,024 columns: 5 GiB). So a
 * block the cache does not keep (straddleCache.admit) is decoded into one reused array.
 */
class StraddleReader {
  /** Blocks are read into one buffer: the builder copies out what it keeps. */
  private readonly bytes: SyncBytesReader;
  private readonly plan: ColumnPlan;
  private syncReads = 0;
  private readonly allocate = (doubles: number): Float64Array => straddleCache.allocate(doubles);
  /** Values of the blocks not kept, each placed before the next is read. */
  private scratchValues = new Float64Array(0);
  private readonly allocateScratch = (doubles: number): Float64Array => {
    if (this.scratchValues.length < doubles) this.scratchValues = new Float64Array(Math.max(doubles, 2 * this.scratchValues.length));
    return this.scratchValues.subarray(0, doubles).fill(0);
  };

  constructor(
    buffered: BufferedBytes,
    private readonly columns: readonly number[],
    /** The aggregation's: a block is kept once read twice for the same interval (straddleCache.admit). */
    private readonly intervalMs: number,
    private readonly lost: LostFn,
  ) {
    this.plan = new ColumnPlan(columns);
    this.bytes = new SyncBytesReader(buffered);
  }

  /** Whether the caller should yield to the event loop before the next read(). */
  get turnDue(): boolean {
    return this.syncReads >= SYNC_READS_PER_TURN;
  }

  turnTaken(): void {
    this.syncReads = 0;
  }

  read({ summary, seg, block, lastId: b }: Straddle): readonly BlockColumns[] {
    const { columns, plan } = this;
    const cached = straddleCache.get(summary, block, b, columns);
    if (cached) return cached;
    this.syncReads++;
    const keep = straddleCache.admit(summary, block, this.intervalMs);
    const a = summary.blockFirstId(block);
    const [start, end] = seg.byteRange(a, b);
    const fresh = (): BlockColumnsBuilder => new BlockColumnsBuilder(b, plan, b - a + 1, keep ? this.allocate : this.allocateScratch);
    let builder = fresh();
    // A compacted block's values come straight from its chunk's column streams; else (or when that read
    // gives up) from the frames, which also reports what is lost.
    const compacted = seg.file.isCompacted;
    if (!compacted || !seg.file.readColumnsSync(start, end - start, columns, builder.chunkSink(a, b))) {
      if (compacted) builder = fresh();
      const buf = this.bytes.read(seg, start, end);
      if (!builder.addFrames(buf, a, b, blockIntact(summary, block, buf))) {
        builder = fresh();
        visitFrames(buf, a, b, (frames, off, bytes, _id, again) => builder.add(frames, off, off + bytes, again), this.lost);
      }
    }
    const decoded = builder.finish();
    if (keep) straddleCache.put(summary, block, decoded);
    return [decoded];
  }
}

export async function aggregate(
  buffered: BufferedBytes,
  held: HeldSegments,
  book: SummaryBook,
  fieldIndexes: readonly number[],
  q: AggregateQuery,
  newest: NewestRecord | undefined,
  lost: LostFn,
): Promise<Bucket[]> {
  const span = bucketSpan(q);
  const segments = held.segments;
  const which: number[] = [];
  for (let i = 0; i < segments.length; i++) if (segments[i].count > 0 && segments[i].maxTs >= q.fromMs) which.push(i);
  const newestId = newest?.id ?? Number.MAX_SAFE_INTEGER;
  const summaries = await book.ensure(held, which, newestId);

  const { fromMs, toMs, intervalMs } = q;
  // Summaries are shared: an aggregation called later may fold records written after this one was called
  // into them while this one waits. Only ids below this call's newest record are taken from them.
  const lastOwnId = newestId - 1;
  // What to merge, in id order: per unit its summary, the unit (a block k >= 0, or coarse row j as
  // -1 - j), and its bucket row when it lies whole in one bucket, else -1 - (its index in `straddles`).
  // Typed and sized once: grown element by element, three arrays of a unit each were a third of a call's garbage.
  const unitsMax = summaries.reduce((n, s) => n + s.coarse() + s.blocks, 0);
  const bySummary = new Int32Array(unitsMax);
  const units = new Int32Array(unitsMax);
  const rows = new Int32Array(unitsMax);
  let unitCount = 0;
  const push = (si: number, unit: number, row: number): void => {
    bySummary[unitCount] = si;
    units[unitCount] = unit;
    rows[unitCount++] = row;
  };
  const straddles: Straddle[] = [];
  const whole = (lo: number, hi: number): number => {
    const bucket = Math.floor(lo / intervalMs);
    return lo >= fromMs && hi < toMs && bucket === Math.floor(hi / intervalMs) ? bucket - span.first : -1;
  };
  summaries.forEach((s, si) => {
    if (s.tsMin >= toMs) return;
    const { minTs, maxTs, records } = s;
    const addBlocks = (from: number, to: number): void => {
      for (let k = from; k < to && s.blockFirstId(k) <= lastOwnId; k++) {
        if (records[k] === 0 || maxTs[k] < fromMs || minTs[k] >= toMs) continue;
        const lastId = Math.min(s.blockLastId(k), lastOwnId);
        const row = lastId === s.blockLastId(k) ? whole(minTs[k], maxTs[k]) : -1;
        if (row < 0) straddles.push({ summary: s, seg: segments[which[si]], block: k, lastId });
        push(si, k, row >= 0 ? row : -straddles.length);
      }
    };
    const coarseRows = s.coarse();
    for (let j = 0; j < coarseRows; j++) {
      const lo = s.coarseMinTs[j];
      const hi = s.coarseMaxTs[j];
      if (s.coarseRecords[j] === 0 || hi < fromMs || lo >= toMs) continue;
      const ours = s.blockLastId((j + 1) * COARSE_BLOCKS - 1) <= lastOwnId;
      const row = ours ? whole(lo, hi) : -1;
      if (row < 0) {
        addBlocks(j * COARSE_BLOCKS, (j + 1) * COARSE_BLOCKS);
        continue;
      }
      push(si, -1 - j, row);
    }
    addBlocks(coarseRows * COARSE_BLOCKS, s.blocks);
  });

  const acc = new StatsTable(fieldIndexes.length, span.count);
  const counts = new Float64Array(span.count);
  const place = (ts: number, values: readonly unknown[]): void => {
    if (ts < fromMs || ts >= toMs) return;
    const row = Math.floor(ts / intervalMs) - span.first;
    counts[row]++;
    for (let f = 0; f < fieldIndexes.length; f++) acc.add(row, f, values[fieldIndexes[f]]);
  };
  /** Bucket row of each record of the block being placed, -1 outside [fromMs, toMs): one array for all blocks. */
  let rowOf = new Int32Array(SUMMARY_BLOCK_RECORDS);
  // Field by field, so each column is one tight loop over numbers; a cell still sees its values in id order.
  const placeBlock = (parts: readonly BlockColumns[]): void => {
    const { count: n, values: ts } = parts[0];
    if (rowOf.length < n) rowOf = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const row = ts[i] < fromMs || ts[i] >= toMs ? -1 : Math.floor(ts[i] / intervalMs) - span.first;
      rowOf[i] = row;
      if (row >= 0) counts[row]++;
    }
    for (let f = 0; f < fieldIndexes.length; f++) {
      let p = 0;
      let slot = parts[0].columns.indexOf(fieldIndexes[f]);
      while (slot < 0) slot = parts[++p].columns.indexOf(fieldIndexes[f]);
      acc.addColumn(f, rowOf, parts[p].values, (slot + 1) * n, parts[p].others[slot], n);
    }
  };
  const straddleReader = new StraddleReader(buffered, fieldIndexes, intervalMs, lost);
  for (let b = 0; b < unitCount; b++) {
    const row = rows[b];
    if (row < 0) {
      if (straddleReader.turnDue) {
        await new Promise((resolve) => setImmediate(resolve));
        straddleReader.turnTaken();
      }
      placeBlock(straddleReader.read(straddles[-1 - row]));
      continue;
    }
    const s = summaries[bySummary[b]];
    const k = units[b];
    if (k < 0) {
      counts[row] += s.coarseRecords[-1 - k];
      for (let f = 0; f < fieldIndexes.length; f++) acc.merge(row, f, s.coarseTable, -1 - k, fieldIndexes[f]);
      continue;
    }
    // The blocks of a bucket come one after another: merged as one run of rows of the summary's table.
    let end = b + 1;
    while (end < unitCount && rows[end] === row && bySummary[end] === bySummary[b] && units[end] === k + (end - b)) end++;
    for (let x = k; x < k + (end - b); x++) counts[row] += s.records[x];
    for (let f = 0; f < fieldIndexes.length; f++) acc.mergeRows(row, f, s.table, k, k + (end - b), fieldIndexes[f]);
    b = end - 1;
  }
  // Never taken from the summaries (see lastOwnId): update-last may still change it.
  if (newest !== undefined) place(newest.ts, newest.values);

  const out: Bucket[] = [];
  for (let row = 0; row < span.count; row++) {
    if (counts[row] === 0) continue;
    const stats: FieldStats[] = [];
    for (let f = 0; f < fieldIndexes.length; f++) stats.push(acc.get(row, f));
    out.push({ startMs: (span.first + row) * intervalMs, count: counts[row], stats });
  }
  return out;
}
