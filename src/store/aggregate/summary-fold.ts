/**
 * Folds the frames a read keeps into a SegmentSummary straight from their payload bytes. Decoding each
 * record into an array of values (msgpackr) and then folding it was most of a summary's first build: the
 * decode itself and the garbage collection of its arrays, boxed numbers and strings were about half of the
 * first aggregation after a restart. Here numbers, booleans and nil go from the bytes into the
 * statistics. A string only counts until its block is done: the summary keeps the first and the last
 * string of a block, so only those two are made, and only from ASCII bytes (where latin1 and UTF-8 give
 * the same string). A record holding anything else (a non-ASCII string, a float32, a 64-bit integer, a
 * map, an array) is decoded the full way, so the summary is exactly what fold(decodeValues(payload)) gives.
 */
import { FRAME_HEADER_BYTES, frameTs } from '../format/frame.js';
import { decodeValues, type KeepFrame } from '../read/reader.js';
import { BufferView, u16, u32be, valueBytes } from '../format/msgpack-items.js';
import { SUMMARY_BLOCK_RECORDS, type SegmentSummary } from './segment-summary.js';
import { blockChecksum } from './block-checksum.js';

const KIND_NONE = 0;
const KIND_NUMBER = 1;
const KIND_FALSE = 2;
const KIND_TRUE = 3;
const KIND_STRING = 4;

export class SummaryFolder {
  /** Per field of the record being folded: what its value is; the number, or where the string's text lies. */
  private readonly kinds: Uint8Array;
  private readonly numbers: Float64Array;
  private readonly textStart: Int32Array;
  private readonly textEnd: Int32Array;
  private readonly views = new BufferView();
  /** The frame kept last, folded once the next frame shows it was not replaced (update-last). */
  private pendingBuf: Buffer | undefined;
  private pendingOff = 0;
  private pendingBytes = 0;
  private pendingId = 0;
  /**
   * Per field: the text of the last value folded into block `lastsBlock` when it is a string not made yet
   * (its buffer, undefined for none), made once the block is done or a later value of the field replaces it.
   */
  private readonly lastBuf: Array<Buffer | undefined>;
  private readonly lastStart: Int32Array;
  private readonly lastEnd: Int32Array;
  private lastsBlock = -1;
  /** The block whose frames the read is in, and its bytes so far in spanBuf (undefined: not all of them there). */
  private spanBlock = -1;
  private spanBuf: Buffer | undefined;
  private spanStart = 0;
  private spanEnd = 0;
  private spanLastId = 0;

  constructor(private readonly summary: SegmentSummary) {
    const fields = summary.table.fieldCount;
    this.kinds = new Uint8Array(fields);
    this.numbers = new Float64Array(fields);
    this.textStart = new Int32Array(fields);
    this.textEnd = new Int32Array(fields);
    this.lastBuf = new Array<Buffer | undefined>(fields).fill(undefined);
    this.lastStart = new Int32Array(fields);
    this.lastEnd = new Int32Array(fields);
  }

  /** For readPlannedFrames: a frame that replaces the one kept before (`again`) takes its place. */
  readonly keep: KeepFrame = (buf, off, bytes, id, again) => {
    this.extendSpan(buf, off, bytes, id);
    if (!again) this.foldPending();
    this.pendingBuf = buf;
    this.pendingOff = off;
    this.pendingBytes = bytes;
    this.pendingId = id;
  };

  /** Folds what is still held; call once the reads have ended, before the summary is used. */
  finish(): void {
    this.closeSpan();
    this.foldPending();
    this.makeLasts();
  }

  /**
   * Follows the bytes of the block being read: while its frames come one right after the other from its
   * first id on, each checked by the read (visitFrames), they are the block's bytes, and a block read to its
   * last id gets its checksum from them (block-checksum.ts) instead of a second read and check.
   */
  private extendSpan(buf: Buffer, off: number, bytes: number, id: number): void {
    const k = Math.floor((id - this.summary.firstId) / SUMMARY_BLOCK_RECORDS);
    if (k === this.spanBlock && buf === this.spanBuf) {
      if (off !== this.spanEnd) this.spanBuf = undefined;
      this.spanEnd = off + bytes;
      this.spanLastId = id;
      return;
    }
    this.closeSpan();
    this.spanBlock = k;
    this.spanBuf = id === this.summary.blockFirstId(k) ? buf : undefined;
    this.spanStart = off;
    this.spanEnd = off + bytes;
    this.spanLastId = id;
  }

  private closeSpan(): void {
    const buf = this.spanBuf;
    this.spanBuf = undefined;
    const k = this.spanBlock;
    if (buf === undefined || this.spanLastId !== this.summary.blockFirstId(k + 1) - 1) return;
    this.summary.blockCrc[k] = blockChecksum(buf.subarray(this.spanStart, this.spanEnd));
    this.summary.blockBytes[k] = this.spanEnd - this.spanStart;
  }

  private foldPending(): void {
    const buf = this.pendingBuf;
    if (buf === undefined) return;
    this.pendingBuf = undefined;
    const off = this.pendingOff;
    const ts = frameTs(buf, off);
    const start = off + FRAME_HEADER_BYTES;
    const end = off + this.pendingBytes;
    if (!this.parse(buf, start, end)) {
      this.makeLasts();
      this.summary.fold(this.pendingId, ts, decodeValues(buf.subarray(start, end)));
      return;
    }
    const k = this.summary.placeRecord(this.pendingId, ts);
    if (k !== this.lastsBlock) {
      this.makeLasts();
      this.lastsBlock = k;
    }
    const { kinds, numbers } = this;
    const table = this.summary.table;
    for (let f = 0; f < kinds.length; f++) {
      const kind = kinds[f];
      if (kind === KIND_NONE) continue;
      if (kind === KIND_STRING && table.count(k, f) > 0) {
        // Counted now; its text is made only if it is still the block's last value when the block is done.
        table.countOther(k, f);
        this.lastBuf[f] = buf;
        this.lastStart[f] = this.textStart[f];
        this.lastEnd[f] = this.textEnd[f];
        continue;
      }
      this.lastBuf[f] = undefined;
      if (kind === KIND_NUMBER) table.addNumber(k, f, numbers[f]);
      else if (kind === KIND_STRING) table.add(k, f, buf.toString('latin1', this.textStart[f], this.textEnd[f]));
      else table.add(k, f, kind === KIND_TRUE);
    }
  }

  /** Gives block `lastsBlock` the last strings still held as bytes. */
  private makeLasts(): void {
    const table = this.summary.table;
    for (let f = 0; f < this.lastBuf.length; f++) {
      const buf = this.lastBuf[f];
      if (buf === undefined) continue;
      this.lastBuf[f] = undefined;
      table.setOther(f, 2 * this.lastsBlock + 1, buf.toString('latin1', this.lastStart[f], this.lastEnd[f]));
    }
  }

  /** Reads the record's fields into kinds/numbers/text bounds; false at an item it leaves to decodeValues. */
  private parse(buf: Buffer, start: number, end: number): boolean {
    const { kinds, numbers } = this;
    if (start >= end) return false;
    const view = this.views.of(buf);
    const h = buf[start];
    let n: number;
    let p: number;
    if (h >= 0x90 && h <= 0x9f) {
      n = h & 0x0f;
      p = start + 1;
    } else if (h === 0xdc && start + 3 <= end) {
      n = view.getUint16(start + 1);
      p = start + 3;
    } else if (h === 0xdd && start + 5 <= end) {
      n = view.getUint32(start + 1);
      p = start + 5;
    } else return false;
    for (let f = 0; f < kinds.length; f++) {
      if (f >= n) {
        kinds[f] = KIND_NONE;
        continue;
      }
      const size = valueBytes(buf, p, end);
      if (size < 0) return false;
      const b = buf[p];
      let kind = KIND_NUMBER;
      if (b <= 0x7f) numbers[f] = b;
      else if (b >= 0xe0) numbers[f] = b - 0x100;
      else if (b >= 0xa0 && b <= 0xbf) kind = KIND_STRING;
      else {
        switch (b) {
          case 0xcb: numbers[f] = view.getFloat64(p + 1); break;
          case 0xcc: numbers[f] = buf[p + 1]; break;
          case 0xcd: numbers[f] = view.getUint16(p + 1); break;
          case 0xce: numbers[f] = view.getUint32(p + 1); break;
          case 0xd0: numbers[f] = view.getInt8(p + 1); break;
          case 0xd1: numbers[f] = view.getInt16(p + 1); break;
          case 0xd2: numbers[f] = view.getInt32(p + 1); break;
          case 0xc0: kind = KIND_NONE; break;
          case 0xc2: kind = KIND_FALSE; break;
          case 0xc3: kind = KIND_TRUE; break;
          default: kind = KIND_STRING; // str8/16/32: valueBytes takes no other type
        }
      }
      if (kind === KIND_STRING) {
        const textStart = p + size - stringBytes(buf, p);
        if (!isAscii(buf, textStart, p + size)) return false;
        this.textStart[f] = textStart;
        this.textEnd[f] = p + size;
      }
      kinds[f] = kind;
      p += size;
    }
    return true;
  }
}

/** Bytes of the text of the string item at buf[p], whose whole size valueBytes has checked. */
function stringBytes(buf: Buffer, p: number): number {
  const b = buf[p];
  if (b >= 0xa0 && b <= 0xbf) return b & 0x1f;
  if (b === 0xd9) return buf[p + 1];
  if (b === 0xda) return u16(buf, p + 1);
  return u32be(buf, p + 1);
}

function isAscii(buf: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buf[i] > 0x7f) return false;
  return true;
}

