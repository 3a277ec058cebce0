/**
 * The records of one summary block, decoded column by column and only for the columns an aggregation asks
 * for. A block across a bucket edge is placed record by record; decoding every value of every record into
 * arrays (msgpackr) made each edge cost about 1 µs a record, most of it garbage collection of values kept in
 * the straddle cache. Here numbers go straight from the payload bytes into a Float64Array; a value that is
 * not a number (null, a boolean, a string, GEO) is kept in `others` at its record's index. Any msgpack type
 * this reader does not decode itself sends that record through the full decoder, so the values are exactly
 * what decodeValues gives.
 */
import { decodeValues } from './reader.js';

export interface ColumnValues {
  /** The value of record i when it is a number (NaN otherwise). */
  nums: Float64Array;
  /** Record i's value when it is not a number; null also stands for a record stored before the column. */
  others: unknown[] | undefined;
}

export interface BlockColumns {
  /** Last id covered when decoded (the straddle cache keys on it). */
  lastId: number;
  /** create_at of each record, in id order. */
  ts: Float64Array;
  /** By stored column index. */
  columns: Map<number, ColumnValues>;
}

/** The columns an aggregation asks for, with the slot of each stored column: made once, shared by its blocks. */
export class ColumnPlan {
  /** Per stored column up to the highest asked: its slot in `columns`, or -1. */
  readonly slotOf: Int32Array;

  constructor(readonly columns: readonly number[]) {
    this.slotOf = new Int32Array(Math.max(-1, ...columns) + 1).fill(-1);
    columns.forEach((c, slot) => (this.slotOf[c] = slot));
  }
}

/** Builds a BlockColumns from the payloads of a block's records, in id order (newest frame of each id). */
export class BlockColumnsBuilder {
  private readonly ts: Float64Array;
  /** Per slot of the plan: the values that are numbers (NaN until set). */
  private readonly nums: Float64Array[];
  private readonly others: Array<unknown[] | undefined>;
  private count = 0;
  private viewBuf: Buffer | undefined;
  private view: DataView | undefined;

  constructor(
    private readonly lastId: number,
    private readonly plan: ColumnPlan,
    recordsMax: number,
  ) {
    // One backing store for the block: an ArrayBuffer each would be five allocations outside the heap.
    const slots = plan.columns.length;
    const all = new Float64Array((slots + 1) * recordsMax).fill(NaN, recordsMax);
    this.ts = all.subarray(0, recordsMax);
    this.nums = [];
    for (let slot = 0; slot < slots; slot++) this.nums.push(all.subarray((slot + 1) * recordsMax, (slot + 2) * recordsMax));
    this.others = new Array<unknown[] | undefined>(slots).fill(undefined);
  }

  /** Adds a record; `replaces` = it is a newer frame of the record added just before. */
  add(ts: number, buf: Buffer, start: number, end: number, replaces: boolean): void {
    if (!replaces) this.count++;
    if (this.count > this.ts.length) throw new Error(`store invariant violated: more than ${this.ts.length} records in a summary block`);
    const i = this.count - 1;
    this.ts[i] = ts;
    if (replaces) this.clearRow(i);
    if (this.nums.length > 0 && !this.readFast(buf, start, end, i)) this.readSlow(buf, start, end, i);
  }

  finish(): BlockColumns {
    const columns = new Map<number, ColumnValues>();
    this.plan.columns.forEach((c, slot) => columns.set(c, { nums: this.nums[slot].subarray(0, this.count), others: this.others[slot] }));
    return { lastId: this.lastId, ts: this.ts.subarray(0, this.count), columns };
  }

  private clearRow(i: number): void {
    for (let slot = 0; slot < this.nums.length; slot++) {
      this.nums[slot][i] = NaN;
      const o = this.others[slot];
      if (o !== undefined) o[i] = undefined;
    }
  }

  private setOther(slot: number, i: number, v: unknown): void {
    (this.others[slot] ??= [])[i] = v;
  }

  private readSlow(buf: Buffer, start: number, end: number, i: number): void {
    const values = decodeValues(buf.subarray(start, end));
    this.plan.columns.forEach((c, slot) => {
      const v = c < values.length ? values[c] : null;
      if (typeof v === 'number') this.nums[slot][i] = v;
      else this.setOther(slot, i, v ?? null);
    });
  }

  /**
   * Reads the asked columns of one msgpack array payload; false when it meets a type it leaves to the full
   * decoder (strings that are asked for, maps, arrays, 64-bit integers), which then sets every column of
   * the record again, so what was set here before is overwritten with the same values.
   */
  private readFast(buf: Buffer, start: number, end: number, i: number): boolean {
    const view = this.viewOf(buf);
    let p = start;
    const h = buf[p];
    let n: number;
    if (h >= 0x90 && h <= 0x9f) {
      n = h & 0x0f;
      p += 1;
    } else if (h === 0xdc) {
      n = view.getUint16(p + 1);
      p += 3;
    } else return false;
    const slots = this.plan.slotOf;
    const nums = this.nums;
    const upTo = Math.min(n, slots.length);
    for (let c = 0; c < upTo; c++) {
      const slot = slots[c];
      const b = buf[p];
      let num = NaN;
      let other: unknown;
      if (b <= 0x7f) {
        num = b;
        p += 1;
      } else if (b >= 0xe0) {
        num = b - 0x100;
        p += 1;
      } else if (b >= 0xa0 && b <= 0xbf) {
        if (slot >= 0) return false;
        p += 1 + (b & 0x1f);
      } else {
        switch (b) {
          case 0xcb: num = view.getFloat64(p + 1); p += 9; break;
          case 0xcc: num = buf[p + 1]; p += 2; break;
          case 0xcd: num = view.getUint16(p + 1); p += 3; break;
          case 0xce: num = view.getUint32(p + 1); p += 5; break;
          case 0xd0: num = view.getInt8(p + 1); p += 2; break;
          case 0xd1: num = view.getInt16(p + 1); p += 3; break;
          case 0xd2: num = view.getInt32(p + 1); p += 5; break;
          case 0xc0: other = null; p += 1; break;
          case 0xc2: other = false; p += 1; break;
          case 0xc3: other = true; p += 1; break;
          case 0xd9: if (slot >= 0) return false; p += 2 + buf[p + 1]; break;
          case 0xda: if (slot >= 0) return false; p += 3 + view.getUint16(p + 1); break;
          case 0xdb: if (slot >= 0) return false; p += 5 + view.getUint32(p + 1); break;
          default: return false;
        }
      }
      if (p > end) return false;
      if (slot < 0) continue;
      if (other === undefined) nums[slot][i] = num;
      else this.setOther(slot, i, other);
    }
    for (let c = upTo; c < slots.length; c++) if (slots[c] >= 0) this.setOther(slots[c], i, null);
    return true;
  }

  /** A DataView of `buf`, made once per buffer: the records of a block share one. */
  private viewOf(buf: Buffer): DataView {
    if (this.viewBuf !== buf) {
      this.viewBuf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.view as DataView;
  }
}
