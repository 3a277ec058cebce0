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

/** Builds a BlockColumns from the payloads of a block's records, in id order (newest frame of each id). */
export class BlockColumnsBuilder {
  private readonly ts: Float64Array;
  private readonly cols: ColumnValues[];
  /** Per stored column up to the highest asked: its slot in `cols`, or -1. */
  private readonly slotOf: Int32Array;
  private count = 0;

  constructor(
    private readonly lastId: number,
    private readonly columns: readonly number[],
    recordsMax: number,
  ) {
    // One backing store for the block: an ArrayBuffer each would be five allocations outside the heap.
    const all = new Float64Array((columns.length + 1) * recordsMax);
    this.ts = all.subarray(0, recordsMax);
    this.cols = columns.map((_, slot) => ({ nums: all.subarray((slot + 1) * recordsMax, (slot + 2) * recordsMax), others: undefined }));
    this.slotOf = new Int32Array(Math.max(-1, ...columns) + 1).fill(-1);
    columns.forEach((c, slot) => (this.slotOf[c] = slot));
  }

  /** Adds a record; `replaces` = it is a newer frame of the record added just before. */
  add(ts: number, buf: Buffer, start: number, end: number, replaces: boolean): void {
    if (!replaces) this.count++;
    if (this.count > this.ts.length) throw new Error(`store invariant violated: more than ${this.ts.length} records in a summary block`);
    const i = this.count - 1;
    this.ts[i] = ts;
    for (const c of this.cols) {
      c.nums[i] = NaN;
      if (c.others !== undefined) c.others[i] = undefined;
    }
    if (this.cols.length > 0 && !this.readFast(buf, start, end, i)) this.readSlow(buf, start, end, i);
  }

  finish(): BlockColumns {
    const columns = new Map<number, ColumnValues>();
    this.columns.forEach((c, slot) => {
      const { nums, others } = this.cols[slot];
      columns.set(c, { nums: nums.subarray(0, this.count), others });
    });
    return { lastId: this.lastId, ts: this.ts.subarray(0, this.count), columns };
  }

  private setOther(slot: number, i: number, v: unknown): void {
    const col = this.cols[slot];
    (col.others ??= [])[i] = v;
  }

  private readSlow(buf: Buffer, start: number, end: number, i: number): void {
    const values = decodeValues(buf.subarray(start, end));
    this.columns.forEach((c, slot) => {
      const v = c < values.length ? values[c] : null;
      if (typeof v === 'number') this.cols[slot].nums[i] = v;
      else this.setOther(slot, i, v ?? null);
    });
  }

  /**
   * Reads the asked columns of one msgpack array payload; false (with nothing of this record kept) when it
   * meets a type it leaves to the full decoder: strings that are asked for, maps, arrays, 64-bit integers.
   */
  private readFast(buf: Buffer, start: number, end: number, i: number): boolean {
    let p = start;
    const h = buf[p];
    let n: number;
    if (h >= 0x90 && h <= 0x9f) {
      n = h & 0x0f;
      p += 1;
    } else if (h === 0xdc) {
      n = buf.readUInt16BE(p + 1);
      p += 3;
    } else return false;
    const slots = this.slotOf;
    const upTo = Math.min(n, slots.length);
    const pending: Array<[number, unknown]> = [];
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
          case 0xcb: num = buf.readDoubleBE(p + 1); p += 9; break;
          case 0xcc: num = buf[p + 1]; p += 2; break;
          case 0xcd: num = buf.readUInt16BE(p + 1); p += 3; break;
          case 0xce: num = buf.readUInt32BE(p + 1); p += 5; break;
          case 0xd0: num = buf.readInt8(p + 1); p += 2; break;
          case 0xd1: num = buf.readInt16BE(p + 1); p += 3; break;
          case 0xd2: num = buf.readInt32BE(p + 1); p += 5; break;
          case 0xc0: other = null; p += 1; break;
          case 0xc2: other = false; p += 1; break;
          case 0xc3: other = true; p += 1; break;
          case 0xd9: if (slot >= 0) return false; p += 2 + buf[p + 1]; break;
          case 0xda: if (slot >= 0) return false; p += 3 + buf.readUInt16BE(p + 1); break;
          case 0xdb: if (slot >= 0) return false; p += 5 + buf.readUInt32BE(p + 1); break;
          default: return false;
        }
      }
      if (p > end) return false;
      if (slot < 0) continue;
      if (other === undefined) this.cols[slot].nums[i] = num;
      else pending.push([slot, other]);
    }
    for (const [slot, v] of pending) this.setOther(slot, i, v);
    for (let c = upTo; c < slots.length; c++) if (slots[c] >= 0) this.setOther(slots[c], i, null);
    return true;
  }
}
