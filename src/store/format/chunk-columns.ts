/**
 * The payload columns of a chunk (chunk-codec.ts): the items of each frame's msgpack array go to one stream
 * per item index, where consecutive values of a field sit together. A column item is a msgpack scalar as
 * it is, or NUMBER_TAG (a tag msgpack never uses), a form byte and the zigzag varint delta of a number
 * against the column's previous number of that form:
 *   FORM_INT          an integer msgpackr writes in its shortest form (fixint, uint8..32, int8..32): a
 *                     counter costs one constant byte before deflate;
 *   FORM_DECIMAL + k  a float64 that is exactly n / 10^k, n an integer (most sensor readings): the delta is
 *                     of n, a byte or two for a slowly varying value where its float64 bits differ in six.
 * Another float64 has its 8 bytes XORed with the column's previous XORed float64, so close values share
 * leading zero bytes.
 */
import { MODEL_FIELDS_MAX } from '../base/constants.js';
import { copyBytes } from './byte-copy.js';
import { ByteSink, VARINT_BYTES_MAX, unzigzag, zigzag } from './chunk-bytes.js';
import { valueBytes } from './msgpack-items.js';

/** Item indexes that get a stream of their own; a longer array is stored as a raw payload. */
export const COLUMNS_MAX = MODEL_FIELDS_MAX;

const NUMBER_TAG = 0xc1;
const FORM_INT = 0;
const FORM_DECIMAL = 1;
const DECIMAL_SCALE_MAX = 9;
const POW10 = Array.from({ length: DECIMAL_SCALE_MAX + 1 }, (_, k) => 10 ** k);
/** A bound on |n| of a decimal: the delta of two then has a zigzag below 2^53, a safe integer. */
const DECIMAL_N_MAX = 2 ** 51;
const FLOAT64 = 0xcb;

/** Item count of the msgpack array of scalars that is exactly b[start, end), or -1 for anything else. */
export function scalarArrayItems(b: Uint8Array, start: number, end: number): number {
  const headBytes = start < end ? arrayHeadBytes(b[start]) : 0;
  if (headBytes === 0 || start + headBytes > end) return -1;
  const count = arrayCount(b, start);
  if (count > COLUMNS_MAX) return -1;
  let p = start + headBytes;
  for (let i = 0; i < count; i++) {
    const n = valueBytes(b, p, end);
    if (n < 0) return -1;
    p += n;
  }
  return p === end ? count : -1;
}

/** Bytes of the msgpack array header starting with `t`, 0 if `t` does not start an array. */
export function arrayHeadBytes(t: number): number {
  if (t >= 0x90 && t <= 0x9f) return 1;
  return t === 0xdc ? 3 : t === 0xdd ? 5 : 0;
}

/** Item count of the array header at b[off] (arrayHeadBytes of it > 0). */
export function arrayCount(b: Uint8Array, off: number): number {
  const t = b[off];
  if (t <= 0x9f) return t & 0x0f;
  return t === 0xdc ? (b[off + 1] << 8) | b[off + 2] : ((b[off + 1] << 24) | (b[off + 2] << 16) | (b[off + 3] << 8) | b[off + 4]) >>> 0;
}

/** A DataView of b: its float64 and u32 reads and writes are far cheaper than byte loops through a typed-array scratch. */
export function viewOf(b: Uint8Array): DataView {
  return new DataView(b.buffer, b.byteOffset, b.byteLength);
}

/** The smallest k such that some integer n gives exactly v as n / 10^k, or -1. */
function decimalScale(v: number): number {
  for (let k = 0; k <= DECIMAL_SCALE_MAX; k++) {
    // + 0 turns -0 into 0, so -0 is not a decimal: the decoder's n / 10^k would give 0.
    const n = Math.round(v * POW10[k]) + 0;
    if (!(Math.abs(n) < DECIMAL_N_MAX)) return -1;
    if (Object.is(n / POW10[k], v)) return k;
  }
  return -1;
}

/** The value of the integer item at b[p] when it is in msgpackr's shortest form, else undefined. */
function shortestInt(b: Uint8Array, p: number): number | undefined {
  const t = b[p];
  let v: number;
  if (t < 0x80) return t;
  if (t >= 0xe0) return t - 0x100;
  if (t === 0xcc) v = b[p + 1];
  else if (t === 0xcd) v = (b[p + 1] << 8) | b[p + 2];
  else if (t === 0xce) v = ((b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4]) >>> 0;
  else if (t === 0xd0) v = (b[p + 1] << 24) >> 24;
  else if (t === 0xd1) v = ((b[p + 1] << 24) >> 16) | b[p + 2];
  else if (t === 0xd2) v = (b[p + 1] << 24) | (b[p + 2] << 16) | (b[p + 3] << 8) | b[p + 4];
  else return undefined;
  return intTag(v) === t ? v : undefined;
}

/** The tag msgpackr writes an integer in [-2^31, 2^32) with (the value itself for a fixint). */
function intTag(v: number): number {
  if (v >= 0) return v < 0x80 ? v : v < 0x100 ? 0xcc : v < 0x10000 ? 0xcd : 0xce;
  return v >= -0x20 ? v + 0x100 : v >= -0x80 ? 0xd0 : v >= -0x8000 ? 0xd1 : 0xd2;
}

/** Per tag from intTag: bytes after it. */
const INT_BYTES = new Uint8Array(256);
for (const [t, n] of [[0xcc, 1], [0xcd, 2], [0xce, 4], [0xd0, 1], [0xd1, 2], [0xd2, 4]]) INT_BYTES[t] = n;

/** One column of the frames in `b` being encoded. */
export class ColumnWriter {
  readonly sink = new ByteSink();
  /** Offset in b of the previous XORed float64's 8 bytes, or -1. */
  private prevFloat = -1;
  private prevInt = 0;
  private prevDecimal = 0;

  constructor(
    private readonly b: Uint8Array,
    private readonly view: DataView,
  ) {}

  /** Writes the msgpack scalar of `n` bytes at b[p]. */
  item(p: number, n: number): void {
    const { b, sink: s } = this;
    const int = shortestInt(b, p);
    if (int !== undefined) {
      s.byte(NUMBER_TAG);
      s.byte(FORM_INT);
      s.varint(zigzag(int - this.prevInt));
      this.prevInt = int;
      return;
    }
    if (b[p] !== FLOAT64) return s.bytes(b, p, p + n);
    const v = this.view.getFloat64(p + 1);
    const k = decimalScale(v);
    if (k >= 0) {
      const decimal = Math.round(v * POW10[k]) + 0;
      s.byte(NUMBER_TAG);
      s.byte(FORM_DECIMAL + k);
      s.varint(zigzag(decimal - this.prevDecimal));
      this.prevDecimal = decimal;
      return;
    }
    s.byte(FLOAT64);
    for (let i = 1; i <= 8; i++) s.byte(b[p + i] ^ (this.prevFloat < 0 ? 0 : b[this.prevFloat + i - 1]));
    this.prevFloat = p + 1;
  }
}

/**
 * Some column streams of one chunk being read, each from src[start, start + length): the state the two
 * readers share (stream positions, the previous number of each form) and the number items they decode
 * alike. Every read checks its stream's end.
 */
class ColumnStreams {
  protected readonly pos: Int32Array;
  protected readonly end: Int32Array;
  private readonly prevInt: Float64Array;
  private readonly prevDecimal: Float64Array;
  /** The form of the number `number` read last: FORM_INT, or FORM_DECIMAL + k. */
  protected numberForm = FORM_INT;
  protected readonly srcView: DataView;

  constructor(
    protected readonly src: Buffer,
    starts: readonly number[],
    lengths: readonly number[],
  ) {
    const count = starts.length;
    this.pos = new Int32Array(count);
    this.end = new Int32Array(count);
    for (let s = 0; s < count; s++) {
      this.pos[s] = starts[s];
      this.end[s] = starts[s] + lengths[s];
    }
    this.prevInt = new Float64Array(count);
    this.prevDecimal = new Float64Array(count);
    this.srcView = viewOf(src);
  }

  /** The value of the NUMBER_TAG item at stream s's position; moves past it. */
  protected number(s: number): number {
    const p = this.pos[s];
    if (p + 2 > this.end[s]) throw new Error(`chunk: column stream ${s} ends early`);
    const form = this.src[p + 1];
    this.pos[s] = p + 2;
    const delta = unzigzag(this.varint(s));
    this.numberForm = form;
    if (form === FORM_INT) {
      const v = this.prevInt[s] + delta;
      this.prevInt[s] = v;
      if (!(v >= -0x80000000 && v <= 0xffffffff)) throw new Error(`chunk: column stream ${s} has integer ${v}`);
      return v;
    }
    const k = form - FORM_DECIMAL;
    if (k > DECIMAL_SCALE_MAX) throw new Error(`chunk: column stream ${s} has number form ${form}`);
    const decimal = this.prevDecimal[s] + delta;
    this.prevDecimal[s] = decimal;
    return decimal / POW10[k];
  }

  private varint(s: number): number {
    const src = this.src;
    let p = this.pos[s];
    const end = this.end[s];
    let v = 0;
    let scale = 1;
    for (let i = 0; i < VARINT_BYTES_MAX && p < end; i++) {
      const b = src[p++];
      v += (b & 0x7f) * scale;
      if (b < 0x80) {
        this.pos[s] = p;
        return v;
      }
      scale *= 0x80;
    }
    throw new Error(`chunk: bad varint in column stream ${s}`);
  }

  expectEnd(): void {
    for (let s = 0; s < this.pos.length; s++) {
      if (this.pos[s] !== this.end[s]) throw new Error(`chunk: ${this.end[s] - this.pos[s]} bytes left in column stream ${s}`);
    }
  }
}

/** Every column stream of one chunk decoded back into frame bytes, the mirror of ColumnWriter; writes also check the output's end. */
export class ColumnReader extends ColumnStreams {
  /** Offset in the output of the previous XORed float64's 8 bytes, or -1. */
  private readonly prevFloat: Int32Array;
  private readonly outView: DataView;

  /** The `lengths.length` columns whose streams follow each other in src from `start`, decoded into out. */
  constructor(src: Buffer, private readonly out: Buffer, start: number, lengths: readonly number[]) {
    let at = start;
    super(src, lengths.map((n) => (at += n) - n), lengths);
    this.prevFloat = new Int32Array(lengths.length).fill(-1);
    this.outView = viewOf(out);
  }

  /** Writes column `col`'s next item at out[w]; returns the offset after it. */
  itemTo(w: number, col: number): number {
    const { src, out } = this;
    const p = this.pos[col];
    const end = this.end[col];
    if (p >= end) throw new Error(`chunk: column ${col} ends early`);
    const t = src[p];
    if (t === NUMBER_TAG) return this.numberTo(w, col);
    const n = valueBytes(src, p, end);
    if (n < 0) throw new Error(`chunk: column ${col} holds no scalar at ${p}`);
    if (w + n > out.length) throw new Error(`chunk: column ${col} runs past the logical length`);
    if (t === FLOAT64) {
      const prev = this.prevFloat[col];
      const { srcView, outView } = this;
      out[w] = FLOAT64;
      outView.setInt32(w + 1, srcView.getInt32(p + 1) ^ (prev < 0 ? 0 : outView.getInt32(prev)));
      outView.setInt32(w + 5, srcView.getInt32(p + 5) ^ (prev < 0 ? 0 : outView.getInt32(prev + 4)));
      this.prevFloat[col] = w + 1;
    } else copyBytes(src, p, p + n, out, w);
    this.pos[col] = p + n;
    return w + n;
  }

  private numberTo(w: number, col: number): number {
    const { out } = this;
    const v = this.number(col);
    if (this.numberForm === FORM_INT) {
      const t = intTag(v);
      const n = INT_BYTES[t];
      if (w + 1 + n > out.length) throw new Error(`chunk: column ${col} runs past the logical length`);
      out[w] = t;
      // The low n bytes of the two's complement, big-endian.
      const bits = v >>> 0;
      for (let i = 1; i <= n; i++) out[w + i] = (bits >>> (8 * (n - i))) & 0xff;
      return w + 1 + n;
    }
    if (w + 9 > out.length) throw new Error(`chunk: column ${col} runs past the logical length`);
    out[w] = FLOAT64;
    this.outView.setFloat64(w + 1, v);
    return w + 9;
  }
}

/** Turns the two halves of an XORed float64 back into its value: one for the process, used synchronously. */
const FLOAT_BITS = new DataView(new ArrayBuffer(8));

/** Where the values of a chunk's asked columns go, by slot (the asked column's index) and row. */
export interface ColumnValueSink {
  setNumber(slot: number, row: number, v: number): void;
  /** A value that is not a number: null, false or true. */
  setOther(slot: number, row: number, v: unknown): void;
}

/**
 * The values of some columns of one chunk, read straight from their streams without rebuilding frames
 * (an aggregation's edge blocks want a few numbers of each record, not its bytes): a number comes out as
 * the float64 msgpackr decodes from the bytes ColumnReader would write. An item it does not read itself
 * (a string, a float32, a 64-bit integer) throws, and the caller reads the chunk the full way.
 */
export class ColumnValueReader extends ColumnStreams {
  /** The previous XORed float64 of each slot, as big-endian int32 halves, and whether there was one. */
  private readonly prevFloatHi: Int32Array;
  private readonly prevFloatLo: Int32Array;
  private readonly hasPrevFloat: Uint8Array;

  /** Slot s reads the stream src[starts[s], starts[s] + lengths[s]). */
  constructor(src: Buffer, starts: readonly number[], lengths: readonly number[]) {
    super(src, starts, lengths);
    this.prevFloatHi = new Int32Array(starts.length);
    this.prevFloatLo = new Int32Array(starts.length);
    this.hasPrevFloat = new Uint8Array(starts.length);
  }

  /** Reads slot's next item; hands it to `sink` at `row` unless row < 0. */
  next(slot: number, row: number, sink: ColumnValueSink): void {
    const p = this.pos[slot];
    if (p >= this.end[slot]) throw new Error(`chunk: column slot ${slot} ends early`);
    const t = this.src[p];
    if (t === NUMBER_TAG) {
      const v = this.number(slot);
      if (row >= 0) sink.setNumber(slot, row, v);
    } else if (t === FLOAT64) {
      const v = this.xorFloat(slot, p);
      if (row >= 0) sink.setNumber(slot, row, v);
    } else {
      const other = t === 0xc0 ? null : t === 0xc2 ? false : t === 0xc3 ? true : undefined;
      if (other === undefined) throw new Error(`chunk: column slot ${slot} holds an item of type ${t} that only the full decode reads`);
      this.pos[slot] = p + 1;
      if (row >= 0) sink.setOther(slot, row, other);
    }
  }

  private xorFloat(slot: number, p: number): number {
    if (p + 9 > this.end[slot]) throw new Error(`chunk: column slot ${slot} ends early`);
    const had = this.hasPrevFloat[slot] === 1;
    const hi = this.srcView.getInt32(p + 1) ^ (had ? this.prevFloatHi[slot] : 0);
    const lo = this.srcView.getInt32(p + 5) ^ (had ? this.prevFloatLo[slot] : 0);
    this.prevFloatHi[slot] = hi;
    this.prevFloatLo[slot] = lo;
    this.hasPrevFloat[slot] = 1;
    this.pos[slot] = p + 9;
    FLOAT_BITS.setInt32(0, hi);
    FLOAT_BITS.setInt32(4, lo);
    return FLOAT_BITS.getFloat64(0);
  }
}
