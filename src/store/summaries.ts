/**
 * Per-segment summaries for aggregation (contract 10): for every block of SUMMARY_BLOCK_RECORDS ids (the
 * sparse index's groups, so a block is one contiguous byte range) the records' min/max create_at, their
 * number, and per field count/min/max/sum/first/last (stats-table.ts).
 *
 * A summary is derived data. It is built from reads of the log, never from the write path: the first
 * aggregation that needs a segment reads it once (a sealed segment: from its `seg-N.sum` file when that
 * describes it, else from the segment, then the file is written; the active segment: from the segment),
 * and each later aggregation folds only the records written since. Only ids below the model's newest
 * record are folded, because update-last may still change the newest one (the aggregation takes it from
 * memory). Records lost to corruption are not in a summary, as they are not in a page. A summary
 * belongs to its Segment object, so retention, clear and close drop it with the segment; retention also
 * removes the file (retention.ts), and files of segments that are gone otherwise are removed when a
 * model's summaries are first used.
 */
import fs from 'node:fs';
import { HeldSegments, decodeValues, fitRange, readRange, type LostFn } from './reader.js';
import type { Segment } from './segment.js';
import type { FileIo } from './file-io.js';
import { StatsTable } from './stats-table.js';
import { decodeSummary, encodeSummary, parseSummaryName, summaryName } from './summary-file.js';
import { PAGE_BYTES_MAX, SPARSE_STRIDE } from './constants.js';
import { SerialQueue } from '../util/atomic-file.js';

export const SUMMARY_BLOCK_RECORDS = SPARSE_STRIDE;
/** Blocks per row of the coarse level (4,096 records), so a long bucket merges a few rows, not hundreds. */
export const COARSE_BLOCKS = 64;
const INITIAL_BLOCKS = 16;

export class SegmentSummary {
  /** Ids [firstId, coveredTo] are folded. */
  coveredTo: number;
  blocks = 0;
  minTs: Float64Array;
  maxTs: Float64Array;
  records: Float64Array;
  /** The smallest create_at folded (a clock step can put it after the first record). */
  tsMin = Infinity;
  readonly table: StatsTable;
  /** The `.sum` file holds this summary. */
  persisted = false;
  /** Coarse level: row j merges blocks [j * COARSE_BLOCKS, (j + 1) * COARSE_BLOCKS), built on demand from the blocks (never stored). */
  coarseRows = 0;
  coarseMinTs: Float64Array = new Float64Array(0);
  coarseMaxTs: Float64Array = new Float64Array(0);
  coarseRecords: Float64Array = new Float64Array(0);
  coarseTable: StatsTable;

  constructor(
    readonly firstId: number,
    fieldCount: number,
    capacity = INITIAL_BLOCKS,
  ) {
    this.coveredTo = firstId - 1;
    this.minTs = new Float64Array(capacity);
    this.maxTs = new Float64Array(capacity);
    this.records = new Float64Array(capacity);
    this.table = new StatsTable(fieldCount, capacity);
    this.coarseTable = new StatsTable(fieldCount, 0);
  }

  /** Builds the coarse rows of every group of blocks that is complete (all its ids folded); returns their number. */
  coarse(): number {
    const complete = Math.floor((this.coveredTo - this.firstId + 1) / (SUMMARY_BLOCK_RECORDS * COARSE_BLOCKS));
    if (complete <= this.coarseRows) return this.coarseRows;
    if (complete > this.coarseMinTs.length) {
      const cap = Math.max(complete, this.coarseMinTs.length * 2);
      this.coarseMinTs = grown(this.coarseMinTs, cap);
      this.coarseMaxTs = grown(this.coarseMaxTs, cap);
      this.coarseRecords = grown(this.coarseRecords, cap);
      this.coarseTable.grow(cap);
    }
    const t = this.table;
    for (let j = this.coarseRows; j < complete; j++) {
      let lo = Infinity;
      let hi = -Infinity;
      let n = 0;
      for (let k = j * COARSE_BLOCKS; k < (j + 1) * COARSE_BLOCKS; k++) {
        if (this.records[k] === 0) continue;
        if (this.minTs[k] < lo) lo = this.minTs[k];
        if (this.maxTs[k] > hi) hi = this.maxTs[k];
        n += this.records[k];
        for (let f = 0; f < t.fieldCount; f++) this.coarseTable.merge(j, f, t, k, f);
      }
      this.coarseMinTs[j] = lo;
      this.coarseMaxTs[j] = hi;
      this.coarseRecords[j] = n;
    }
    this.coarseRows = complete;
    return complete;
  }

  /** Folds one record; ids come in ascending order (lost ones skipped). */
  fold(id: number, ts: number, values: readonly unknown[]): void {
    const k = Math.floor((id - this.firstId) / SUMMARY_BLOCK_RECORDS);
    while (this.blocks <= k) this.startBlock();
    if (this.records[k] === 0) {
      this.minTs[k] = ts;
      this.maxTs[k] = ts;
    } else if (ts < this.minTs[k]) this.minTs[k] = ts;
    else if (ts > this.maxTs[k]) this.maxTs[k] = ts;
    if (ts < this.tsMin) this.tsMin = ts;
    this.records[k]++;
    const t = this.table;
    for (let i = 0; i < t.fieldCount; i++) t.add(k, i, values[i]);
    this.coveredTo = id;
  }

  /** Last id of block k (ids past coveredTo are not in it). */
  blockLastId(k: number): number {
    return Math.min(this.coveredTo, this.firstId + (k + 1) * SUMMARY_BLOCK_RECORDS - 1);
  }

  blockFirstId(k: number): number {
    return this.firstId + k * SUMMARY_BLOCK_RECORDS;
  }

  /** Bytes held in memory, for the figures in docs/performance.md. */

  private startBlock(): void {
    if (this.blocks === this.minTs.length) {
      const cap = this.blocks * 2;
      this.minTs = grown(this.minTs, cap);
      this.maxTs = grown(this.maxTs, cap);
      this.records = grown(this.records, cap);
      this.table.grow(cap);
    }
    this.blocks++;
  }
}

function grown(a: Float64Array, length: number): Float64Array {
  const g = new Float64Array(length);
  g.set(a);
  return g;
}

/** The last id a segment's summary covers: its last id not shadowed by the next segment (update-last roll). */
export function effectiveEnd(segments: readonly Segment[], i: number): number {
  const seg = segments[i];
  return i + 1 < segments.length ? Math.min(seg.lastId, segments[i + 1].firstId - 1) : seg.lastId;
}

/** One model generation's summaries. */
export class SummaryBook {
  private readonly bySegment = new WeakMap<Segment, SegmentSummary>();
  /** Catch-ups run one at a time, so two aggregations never fold the same records twice. */
  private readonly queue = new SerialQueue();
  private swept = false;

  constructor(
    private readonly io: FileIo,
    private readonly dir: string,
    private readonly fieldCount: number,
    private readonly lost: LostFn,
    /** False once the generation is replaced (clear): its files must not be written into the new directory. */
    private readonly current: () => boolean,
  ) {}

  /** Summaries of `segments[i]` for each i in `which`, covering every id below `newestId` (exclusive). */
  ensure(held: HeldSegments, which: readonly number[], newestId: number): Promise<SegmentSummary[]> {
    return this.queue.run(async () => {
      if (!this.swept) await this.sweep(held.segments);
      const out: SegmentSummary[] = [];
      for (const i of which) out.push(await this.ensureOne(held.segments, i, newestId));
      return out;
    });
  }

  private async ensureOne(segments: readonly Segment[], i: number, newestId: number): Promise<SegmentSummary> {
    const seg = segments[i];
    const end = effectiveEnd(segments, i);
    let s = this.bySegment.get(seg);
    if (!s && seg.sealedOnDisk) s = await this.load(seg, end);
    s ??= new SegmentSummary(seg.firstId, this.fieldCount);
    this.bySegment.set(seg, s);
    const target = Math.min(end, newestId - 1);
    for (let lo = s.coveredTo + 1; lo <= target; ) {
      const hi = fitRange(segments, lo, target, PAGE_BYTES_MAX);
      for (const r of await readRange(this.io, segments, lo, hi, this.lost)) s.fold(r.id, r.ts, decodeValues(r.payload));
      s.coveredTo = hi;
      lo = hi + 1;
    }
    if (!s.persisted && seg.sealedOnDisk && s.coveredTo === end && this.current()) {
      s.persisted = true;
      // Not awaited: a failed write only means the next open builds it again.
      this.io.replaceFile(`${this.dir}/${summaryName(seg.segNo)}`, encodeSummary(s, seg)).catch(() => (s.persisted = false));
    }
    return s;
  }

  private async load(seg: Segment, end: number): Promise<SegmentSummary | undefined> {
    let b: Buffer;
    try {
      b = await fs.promises.readFile(`${this.dir}/${summaryName(seg.segNo)}`);
    } catch {
      return undefined;
    }
    const s = decodeSummary(b, seg, end, this.fieldCount);
    if (s) s.persisted = true;
    return s;
  }

  /** Summary files of segments that retention, recovery or a crash removed. */
  private async sweep(segments: readonly Segment[]): Promise<void> {
    this.swept = true;
    const live = new Set(segments.map((s) => s.segNo));
    let names: string[];
    try {
      names = await fs.promises.readdir(this.dir);
    } catch {
      return;
    }
    for (const n of names) {
      const no = parseSummaryName(n);
      if (no !== undefined && !live.has(no) && this.current()) await this.io.remove(`${this.dir}/${n}`);
    }
  }
}
