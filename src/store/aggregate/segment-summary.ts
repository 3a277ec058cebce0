/**
 * The summary of one segment (see summaries.ts): per block of SUMMARY_BLOCK_RECORDS ids the records'
 * min/max create_at, their number and per field count/min/max/sum/first/last, the checksum of the block's
 * bytes (block-checksum.ts), plus a coarse level.
 * Its own module so the file format (summary-file.ts) and the book (summaries.ts) both build on it.
 */
import { StatsTable } from './stats-table.js';
import { SPARSE_STRIDE } from '../base/constants.js';

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
  /** Per block: CRC-32 of its bytes, taken once each of its frames passed its own CRC; valid where blockBytes > 0. */
  blockCrc: Int32Array;
  /** Per block: how many bytes blockCrc covers; 0 while not taken (a block not complete yet, or damaged). */
  blockBytes: Uint32Array;
  /** Blocks [0, checkedBlocks) have been through the checksum pass, whatever it found. */
  checkedBlocks = 0;
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
    this.blockCrc = new Int32Array(capacity);
    this.blockBytes = new Uint32Array(capacity);
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
    const k = this.placeRecord(id, ts);
    const t = this.table;
    for (let i = 0; i < t.fieldCount; i++) t.add(k, i, values[i]);
  }

  /**
   * Counts record `id` (created at `ts`) in its block and returns the block, whose table row the caller
   * then adds the record's values to (fold, or summary-fold.ts from the payload bytes).
   */
  placeRecord(id: number, ts: number): number {
    const k = Math.floor((id - this.firstId) / SUMMARY_BLOCK_RECORDS);
    while (this.blocks <= k) this.startBlock();
    if (this.records[k] === 0) {
      this.minTs[k] = ts;
      this.maxTs[k] = ts;
    } else if (ts < this.minTs[k]) this.minTs[k] = ts;
    else if (ts > this.maxTs[k]) this.maxTs[k] = ts;
    if (ts < this.tsMin) this.tsMin = ts;
    this.records[k]++;
    this.coveredTo = id;
    return k;
  }

  /** Last id of block k (ids past coveredTo are not in it). */
  blockLastId(k: number): number {
    return Math.min(this.coveredTo, this.firstId + (k + 1) * SUMMARY_BLOCK_RECORDS - 1);
  }

  blockFirstId(k: number): number {
    return this.firstId + k * SUMMARY_BLOCK_RECORDS;
  }

  /** Bytes of its arrays, both levels, and an estimate of its dictionary of non-numeric values. */
  bytes(): number {
    const arrays = [this.minTs, this.maxTs, this.records, this.blockCrc, this.blockBytes, this.coarseMinTs, this.coarseMaxTs, this.coarseRecords];
    return arrays.reduce((n, a) => n + a.byteLength, 0) + this.table.bytes() + this.coarseTable.bytes();
  }

  private startBlock(): void {
    if (this.blocks === this.minTs.length) {
      const cap = this.blocks * 2;
      this.minTs = grown(this.minTs, cap);
      this.maxTs = grown(this.maxTs, cap);
      this.records = grown(this.records, cap);
      this.blockCrc = grown(this.blockCrc, cap);
      this.blockBytes = grown(this.blockBytes, cap);
      this.table.grow(cap);
    }
    this.blocks++;
  }
}

function grown<A extends Float64Array | Int32Array | Uint32Array>(a: A, length: number): A {
  const g = new (a.constructor as new (n: number) => A)(length);
  g.set(a);
  return g;
}
