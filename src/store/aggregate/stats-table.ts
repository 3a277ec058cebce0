/**
 * Per-row, per-field running statistics (count of values, min, max, sum, first, last) in flat Float64Arrays:
 * the rows are blocks of records in a segment summary, or time buckets in an aggregation. Numbers and
 * booleans (as 1/0) are stored inline; any other value (STRING, GEO) counts and is kept for first/last as
 * an index into the table's dictionary of such values, its min/max/sum are NaN (contract 10 refuses them
 * for those types). The dictionary keeps each distinct value once: a year of summaries holds millions of
 * first/last strings of a few distinct device names, which one Map entry and one string each made the
 * largest part of the summaries' memory. Null values (an attribute the record never received) are not
 * counted.
 */
import { assert } from '../base/constants.js';
const N = 0;
const MIN = 1;
const MAX = 2;
const SUM = 3;
const FIRST = 4;
const LAST = 5;
export const STATS_PER_FIELD = 6;
/** A dictionary entry's own cost in bytes (array slot, map entry, string header), an estimate. */
const DICT_ENTRY_BYTES = 32;

export interface FieldStats {
  n: number;
  min: number;
  max: number;
  sum: number;
  first: unknown;
  last: unknown;
}

export class StatsTable {
  /** Per field: STATS_PER_FIELD doubles per row. */
  stats: Float64Array[];
  /** Per field, made on its first non-numeric value: first (key 2*row) and last (2*row+1) as dictionary indexes, -1 for none. */
  private readonly refs: Array<Int32Array | undefined>;
  private readonly dict: unknown[] = [];
  private readonly dictIndex = new Map<unknown, number>();
  /** Per field: it holds booleans (stored as 1/0). */
  readonly bools: boolean[];

  constructor(
    readonly fieldCount: number,
    public rows: number,
  ) {
    this.stats = Array.from({ length: fieldCount }, () => new Float64Array(rows * STATS_PER_FIELD));
    this.refs = new Array<Int32Array | undefined>(fieldCount).fill(undefined);
    this.bools = new Array<boolean>(fieldCount).fill(false);
  }

  /** Room for `rows` rows (new rows are empty). */
  grow(rows: number): void {
    if (rows <= this.rows) return;
    this.stats = this.stats.map((s) => {
      const g = new Float64Array(rows * STATS_PER_FIELD);
      g.set(s);
      return g;
    });
    this.refs.forEach((r, field) => {
      if (r === undefined) return;
      const g = new Int32Array(2 * rows).fill(-1);
      g.set(r);
      this.refs[field] = g;
    });
    this.rows = rows;
  }

  add(row: number, field: number, v: unknown): void {
    if (v === null || v === undefined) return;
    let num: number;
    if (typeof v === 'number') num = v;
    else if (typeof v === 'boolean') {
      num = v ? 1 : 0;
      this.bools[field] = true;
    } else num = NaN;
    const first = placeNumber(this.stats[field], row * STATS_PER_FIELD, num);
    if (num !== num) {
      if (first) this.setOther(field, 2 * row, v);
      this.setOther(field, 2 * row + 1, v);
    }
  }

  /** add() of a number. */
  addNumber(row: number, field: number, num: number): void {
    if (num !== num) this.add(row, field, num);
    else placeNumber(this.stats[field], row * STATS_PER_FIELD, num);
  }

  /**
   * add() of a value that is not a number or boolean, after the row's first value, without keeping it as
   * the row's last: the caller sets that with setOther once it knows which value came last (summary-fold.ts).
   */
  countOther(row: number, field: number): void {
    assert(this.count(row, field) > 0, 'a value counted without being kept follows the first value of its row');
    placeNumber(this.stats[field], row * STATS_PER_FIELD, NaN);
  }

  /**
   * add(rows[i], field, value i) for i < count in order, skipping rows[i] < 0; value i is others[i] when that
   * is set, else nums[numsStart + i]. This runs for every record of a block across an edge, whose records
   * mostly fall into one or two rows: a run of numbers in one row is folded in locals and stored once, in
   * the same order of additions as one add() per value.
   */
  addColumn(field: number, rows: Int32Array, nums: Float64Array, numsStart: number, others: readonly unknown[] | undefined, count: number): void {
    const s = this.stats[field];
    let i = 0;
    while (i < count) {
      const row = rows[i];
      if (row < 0) {
        i++;
        continue;
      }
      const other = others === undefined ? undefined : others[i];
      const num = nums[numsStart + i];
      if (other !== undefined || num !== num) {
        this.add(row, field, other === undefined ? num : other);
        i++;
        continue;
      }
      const b = row * STATS_PER_FIELD;
      placeNumber(s, b, num);
      let n = s[b + N];
      let min = s[b + MIN];
      let max = s[b + MAX];
      let sum = s[b + SUM];
      let last = num;
      for (i++; i < count && rows[i] === row && (others === undefined || others[i] === undefined); i++) {
        const v = nums[numsStart + i];
        if (v !== v) break;
        if (v < min) min = v;
        if (v > max) max = v;
        n++;
        sum += v;
        last = v;
      }
      storeRun(s, b, n, min, max, sum, last);
    }
  }

  /** Folds row `fromRow` of `from` (field `fromField`) into `row`, as if its values came after the row's. */
  merge(row: number, field: number, from: StatsTable, fromRow: number, fromField: number): void {
    const f = from.stats[fromField];
    const fb = fromRow * STATS_PER_FIELD;
    const n = f[fb + N];
    if (n === 0) return;
    if (from.bools[fromField]) this.bools[field] = true;
    const s = this.stats[field];
    const b = row * STATS_PER_FIELD;
    if (s[b + N] === 0) {
      s[b + FIRST] = f[fb + FIRST];
      s[b + MIN] = f[fb + MIN];
      s[b + MAX] = f[fb + MAX];
      s[b + SUM] = 0;
      if (f[fb + FIRST] !== f[fb + FIRST]) this.setOther(field, 2 * row, from.other(fromField, 2 * fromRow));
    } else {
      if (f[fb + MIN] < s[b + MIN]) s[b + MIN] = f[fb + MIN];
      if (f[fb + MAX] > s[b + MAX]) s[b + MAX] = f[fb + MAX];
    }
    s[b + N] += n;
    s[b + SUM] += f[fb + SUM];
    s[b + LAST] = f[fb + LAST];
    if (f[fb + LAST] !== f[fb + LAST]) this.setOther(field, 2 * row + 1, from.other(fromField, 2 * fromRow + 1));
  }

  /**
   * merge() of rows [fromStart, fromEnd) of `from`, in that order, into `row`: a bucket's whole blocks. Rows
   * with numbers only are folded in locals and stored once; the others go through merge().
   */
  mergeRows(row: number, field: number, from: StatsTable, fromStart: number, fromEnd: number, fromField: number): void {
    const f = from.stats[fromField];
    const s = this.stats[field];
    const b = row * STATS_PER_FIELD;
    let r = fromStart;
    while (r < fromEnd) {
      const head = r * STATS_PER_FIELD;
      if (s[b + N] === 0 || f[head + LAST] !== f[head + LAST]) {
        this.merge(row, field, from, r, fromField);
        r++;
        continue;
      }
      const nBefore = s[b + N];
      let n = nBefore;
      let min = s[b + MIN];
      let max = s[b + MAX];
      let sum = s[b + SUM];
      let last = s[b + LAST];
      for (; r < fromEnd; r++) {
        const fb = r * STATS_PER_FIELD;
        const fn = f[fb + N];
        if (fn === 0) continue;
        const fl = f[fb + LAST];
        if (fl !== fl) break;
        if (f[fb + MIN] < min) min = f[fb + MIN];
        if (f[fb + MAX] > max) max = f[fb + MAX];
        n += fn;
        sum += f[fb + SUM];
        last = fl;
      }
      storeRun(s, b, n, min, max, sum, last);
      if (n > nBefore && from.bools[fromField]) this.bools[field] = true;
    }
  }

  get(row: number, field: number): FieldStats {
    const s = this.stats[field];
    const b = row * STATS_PER_FIELD;
    return {
      n: s[b + N],
      min: s[b + MIN],
      max: s[b + MAX],
      sum: s[b + SUM],
      first: this.valueAt(row, field, FIRST),
      last: this.valueAt(row, field, LAST),
    };
  }

  count(row: number, field: number): number {
    return this.stats[field][row * STATS_PER_FIELD + N];
  }

  private valueAt(row: number, field: number, which: typeof FIRST | typeof LAST): unknown {
    const x = this.stats[field][row * STATS_PER_FIELD + which];
    if (x !== x) return this.other(field, 2 * row + (which - FIRST)) ?? null;
    return this.bools[field] ? x === 1 : x;
  }

  /** Bytes of its arrays, and of its dictionary estimated (a string's characters at 2 bytes, 32 bytes an entry). */
  bytes(): number {
    let n = 0;
    for (const s of this.stats) n += s.byteLength;
    for (const r of this.refs) n += r?.byteLength ?? 0;
    for (const v of this.dict) n += DICT_ENTRY_BYTES + (typeof v === 'string' ? 2 * v.length : 0);
    return n;
  }

  /** The non-numeric first (key 2*row) or last (2*row+1) value of a field; undefined when there is none. */
  other(field: number, key: number): unknown {
    const r = this.refs[field];
    const i = r === undefined ? -1 : r[key];
    return i < 0 ? undefined : this.dict[i];
  }

  setOther(field: number, key: number, v: unknown): void {
    const r = (this.refs[field] ??= new Int32Array(2 * this.rows).fill(-1));
    let i = this.dictIndex.get(v);
    if (i === undefined) {
      i = this.dict.push(v) - 1;
      this.dictIndex.set(v, i);
    }
    r[key] = i;
  }

  /** Every non-numeric first/last value kept, with its field and key. */
  forEachOther(visit: (field: number, key: number, v: unknown) => void): void {
    this.refs.forEach((r, field) => {
      if (r === undefined) return;
      for (let key = 0; key < r.length; key++) if (r[key] >= 0) visit(field, key, this.dict[r[key]]);
    });
  }
}

/** Stores at s[b..] the statistics a run of values folded in locals (first is set already). */
function storeRun(s: Float64Array, b: number, n: number, min: number, max: number, sum: number, last: number): void {
  s[b + N] = n;
  s[b + MIN] = min;
  s[b + MAX] = max;
  s[b + SUM] = sum;
  s[b + LAST] = last;
}

/** Folds `num` into the statistics at s[b..]; true when it is the first value there. */
function placeNumber(s: Float64Array, b: number, num: number): boolean {
  const first = s[b + N] === 0;
  if (first) {
    s[b + FIRST] = num;
    s[b + MIN] = num;
    s[b + MAX] = num;
    s[b + SUM] = 0;
  } else {
    if (num < s[b + MIN]) s[b + MIN] = num;
    if (num > s[b + MAX]) s[b + MAX] = num;
  }
  s[b + N]++;
  s[b + SUM] += num;
  s[b + LAST] = num;
  return first;
}
