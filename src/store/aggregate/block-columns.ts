/**
 * The records of one summary block, decoded column by column and only for the columns an aggregation asks
 * for. A block across a bucket edge is placed record by record; decoding every value of every record into
 * arrays (msgpackr) made each edge cost about 1 µs a record, most of it garbage collection of values kept in
 * the straddle cache. Here numbers go straight from the payload bytes into a Float64Array; a value that is
 * not a number (null, a boolean, a string, GEO) is kept in `others` at its record's index. Any msgpack type
 * this reader does not decode itself sends that record through the full decoder, so the values are exactly
 * what decodeValues gives.
 */
import { decodeValues } from '../read/reader.js';
import { FRAME_HEADER_BYTES, FRAME_ID_OFFSET, FRAME_SAVE, FRAME_SUPERSEDE, FRAME_TS_OFFSET, checkFrame, mayFollowFrame } from '../format/frame.js';
import type { ChunkFrameSink } from '../format/chunk-codec.js';
import { BufferView } from '../format/msgpack-items.js';

export interface BlockColumns {
  /** Last id covered when decoded (the straddle cache keys on it). */
  lastId: number;
  /** Records decoded. */
  count: number;
  /** The stored column index of each slot. */
  columns: readonly number[];
  /**
   * create_at of record i at [i], in id order; slot s's value of record i at [(s + 1) * count + i] when it
   * is a number (NaN otherwise). One array for the block: a Map and a typed-array view per column made the
   * objects of the edge blocks (kept by the straddle cache) a good part of a new interval's garbage.
   */
  values: Float64Array;
  /** Per slot: record i's value when it is not a number; null also stands for a record stored before the column. */
  others: ReadonlyArray<unknown[] | undefined>;
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
  /** Laid out as BlockColumns.values with `recordsMax` rows; finish() compacts it when fewer came. */
  private readonly values: Float64Array;
  private readonly others: Array<unknown[] | undefined>;
  private count = 0;
  /** The records of a block share one DataView. */
  private readonly views = new BufferView();

  /** `allocate` gives the zeroed array of `values` (the straddle cache takes it from a slab). */
  constructor(
    private readonly lastId: number,
    private readonly plan: ColumnPlan,
    private readonly recordsMax: number,
    allocate: (doubles: number) => Float64Array = (doubles) => new Float64Array(doubles),
  ) {
    const slots = plan.columns.length;
    this.values = allocate((slots + 1) * recordsMax).fill(NaN, recordsMax);
    this.others = new Array<unknown[] | undefined>(slots).fill(undefined);
  }

  /**
   * Adds the record of the checked frame buf[frameStart, frameEnd); `replaces` = it is a newer frame of the
   * record added just before. create_at is read through the block's DataView (frameTs copies bytes).
   */
  add(buf: Buffer, frameStart: number, frameEnd: number, replaces: boolean): void {
    this.addRecord(buf, frameStart, frameEnd, this.views.of(buf).getFloat64(frameStart + FRAME_TS_OFFSET, true), replaces);
  }

  /** add() with create_at already read. */
  private addRecord(buf: Buffer, frameStart: number, frameEnd: number, ts: number, replaces: boolean): void {
    const i = this.addRow(ts, replaces);
    const start = frameStart + FRAME_HEADER_BYTES;
    if (this.plan.columns.length > 0 && !this.readFast(buf, start, frameEnd, i)) this.readSlow(buf, start, frameEnd, i);
  }

  /**
   * Adds the records of ids [a, b] from `buf`, the frames of a block's byte range, by visitFrames's rules
   * (each frame checked, ids in order, a newer frame of an id replacing it); false at the first frame that
   * breaks them, having reported nothing: the caller then builds the block again through visitFrames, which
   * resyncs and reports what is lost. One pass, reading each header once through the block's DataView.
   * `intact`: the bytes match the block's checksum (block-checksum.ts), taken when every one of these
   * frames passed checkFrame, so only their lengths are read.
   */
  addFrames(buf: Buffer, a: number, b: number, intact: boolean): boolean {
    const view = this.views.of(buf);
    const end = buf.length;
    let lastSeen = a - 1;
    let prevId = 0;
    for (let off = 0; off < end; ) {
      const n = intact ? view.getUint32(off, true) + 8 : checkFrame(buf, off, end);
      if (n <= 0 || off + n > end) return false;
      const id = view.getFloat64(off + FRAME_ID_OFFSET, true);
      if (prevId > 0 && !mayFollowFrame(prevId, buf[off + 8], id)) return false;
      if (id >= a && id <= b) {
        this.addRecord(buf, off, off + n, view.getFloat64(off + FRAME_TS_OFFSET, true), id === lastSeen);
        lastSeen = id;
      }
      prevId = id;
      off += n;
    }
    return true;
  }

  /**
   * A sink for the frames of a compacted segment's chunks (readChunkColumns) that keeps those of ids [a, b]
   * by visitFrames's rules: ids in order, a newer frame of an id replacing it. A frame out of that order
   * throws, so the caller reads the block the full way, which resyncs and reports what is lost.
   */
  chunkSink(a: number, b: number): ChunkFrameSink {
    let lastSeen = a - 1;
    let prevId = 0;
    const stride = this.recordsMax;
    return {
      frame: (id, ts, supersede) => {
        if (prevId > 0 && !mayFollowFrame(prevId, supersede ? FRAME_SUPERSEDE : FRAME_SAVE, id)) throw new Error(`chunk: frame of id ${id} after ${prevId}`);
        prevId = id;
        if (id < a || id > b) return -1;
        const row = this.addRow(ts, id === lastSeen);
        lastSeen = id;
        return row;
      },
      setNumber: (slot, row, v) => {
        this.values[(slot + 1) * stride + row] = v;
      },
      setOther: (slot, row, v) => this.setOther(slot, row, v),
    };
  }

  /** Starts the row of the next record (or clears the last one, which a newer frame `replaces`); returns it. */
  private addRow(ts: number, replaces: boolean): number {
    if (!replaces) this.count++;
    if (this.count > this.recordsMax) throw new Error(`store invariant violated: more than ${this.recordsMax} records in a summary block`);
    const i = this.count - 1;
    this.values[i] = ts;
    if (replaces) this.clearRow(i);
    return i;
  }

  finish(): BlockColumns {
    const { count, recordsMax, plan } = this;
    let values = this.values;
    if (count < recordsMax) {
      values = new Float64Array((plan.columns.length + 1) * count);
      for (let row = 0; row <= plan.columns.length; row++) values.set(this.values.subarray(row * recordsMax, row * recordsMax + count), row * count);
    }
    return { lastId: this.lastId, count, columns: plan.columns, values, others: this.others };
  }

  private clearRow(i: number): void {
    for (let slot = 0; slot < this.others.length; slot++) {
      this.values[(slot + 1) * this.recordsMax + i] = NaN;
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
      if (typeof v === 'number') this.values[(slot + 1) * this.recordsMax + i] = v;
      else this.setOther(slot, i, v ?? null);
    });
  }

  /**
   * Reads the asked columns of one msgpack array payload; false when it meets a type it leaves to the full
   * decoder (strings that are asked for, maps, arrays, 64-bit integers), which then sets every column of
   * the record again, so what was set here before is overwritten with the same values.
   */
  private readFast(buf: Buffer, start: number, end: number, i: number): boolean {
    const view = this.views.of(buf);
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
    const values = this.values;
    const stride = this.recordsMax;
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
      if (other === undefined) values[(slot + 1) * stride + i] = num;
      else this.setOther(slot, i, other);
    }
    for (let c = upTo; c < slots.length; c++) if (slots[c] >= 0) this.setOther(slots[c], i, null);
    return true;
  }
}
