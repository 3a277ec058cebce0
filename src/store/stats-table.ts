/**
 * Per-row, per-field running statistics (count of values, min, max, sum, first, last) in flat Float64Arrays:
 * the rows are blocks of records in a segment summary, or time buckets in an aggregation. Numbers and
 * booleans (as 1/0) are stored inline; any other value (STRING, GEO) counts and is kept for first/last in
 * a side map, its min/max/sum are NaN (contract 10 refuses them for those types). Null values (an
 * attribute the record never received) are not counted.
 */
const N = 0;
const MIN = 1;
const MAX = 2;
const SUM = 3;
const FIRST = 4;
const LAST = 5;
export const STATS_PER_FIELD = 6;

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
  /** Per field: non-numeric first (key 2*row) and last (2*row+1) values. */
  readonly others: Array<Map<number, unknown>>;
  /** Per field: it holds booleans (stored as 1/0). */
  readonly bools: boolean[];

  constructor(
    readonly fieldCount: number,
    public rows: number,
  ) {
    this.stats = Array.from({ length: fieldCount }, () => new Float64Array(rows * STATS_PER_FIELD));
    this.others = Array.from({ length: fieldCount }, () => new Map());
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
    const s = this.stats[field];
    const b = row * STATS_PER_FIELD;
    if (s[b + N] === 0) {
      s[b + FIRST] = num;
      s[b + MIN] = num;
      s[b + MAX] = num;
      s[b + SUM] = 0;
      if (num !== num) this.others[field].set(2 * row, v);
    } else {
      if (num < s[b + MIN]) s[b + MIN] = num;
      if (num > s[b + MAX]) s[b + MAX] = num;
    }
    s[b + N]++;
    s[b + SUM] += num;
    s[b + LAST] = num;
    if (num !== num) this.others[field].set(2 * row + 1, v);
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
      if (f[fb + FIRST] !== f[fb + FIRST]) this.others[field].set(2 * row, from.others[fromField].get(2 * fromRow));
    } else {
      if (f[fb + MIN] < s[b + MIN]) s[b + MIN] = f[fb + MIN];
      if (f[fb + MAX] > s[b + MAX]) s[b + MAX] = f[fb + MAX];
    }
    s[b + N] += n;
    s[b + SUM] += f[fb + SUM];
    s[b + LAST] = f[fb + LAST];
    if (f[fb + LAST] !== f[fb + LAST]) this.others[field].set(2 * row + 1, from.others[fromField].get(2 * fromRow + 1));
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
    if (x !== x) return this.others[field].get(2 * row + (which - FIRST)) ?? null;
    return this.bools[field] ? x === 1 : x;
  }
}
