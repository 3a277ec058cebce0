/**
 * The byte writer record-json.ts and record-lines.ts print into: one Buffer, doubled when full, with the
 * few ways a JSON token gets in (copied bytes, fixed texts 4 bytes at a time, ASCII, a JS string as
 * JSON.stringify prints it, integers printed digit by digit, numbers as JavaScript prints them).
 */
import { copyBytes } from '../format/byte-copy.js';

/** A text written many times (a key, an envelope): its bytes as little-endian int32 words, the last one padded. */
export interface Words {
  words: Int32Array;
  bytes: number;
}

export function wordsOf(text: string): Words {
  const bytes = Buffer.byteLength(text);
  const padded = Buffer.alloc(Math.ceil(bytes / 4) * 4);
  padded.write(text);
  const words = new Int32Array(padded.length / 4);
  for (let i = 0; i < words.length; i++) words[i] = padded.readInt32LE(4 * i);
  return { words, bytes };
}

/** A growing byte buffer that JSON text is written into. */
export class JsonOut {
  buf: Buffer;
  pos = 0;
  /** The same memory as `buf`, for writes of 4 bytes at once. */
  private view: DataView;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, bytes));
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.length);
  }

  /** Makes room for `bytes` more and returns the buffer to write them to (it may be a new one). */
  room(bytes: number): Buffer {
    if (this.pos + bytes > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
      this.buf.copy(next, 0, 0, this.pos);
      this.buf = next;
      this.view = new DataView(next.buffer, next.byteOffset, next.length);
    }
    return this.buf;
  }

  /**
   * A text made by wordsOf, 4 bytes a write: a few times faster than a loop over its bytes for the short
   * keys of a record. The last word's padding lands past the text, where the next write goes.
   */
  words(w: Words): void {
    this.room(w.bytes + 3);
    const { view } = this;
    const { words } = w;
    for (let i = 0, p = this.pos; i < words.length; i++, p += 4) view.setInt32(p, words[i], true);
    this.pos += w.bytes;
  }

  bytes(src: Buffer, start: number, end: number): void {
    this.pos = copyBytes(src, start, end, this.room(end - start), this.pos);
  }

  /** Text known to be ASCII. */
  ascii(s: string): void {
    const b = this.room(s.length);
    let p = this.pos;
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  utf8(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A JS string as JSON.stringify prints it. */
  string(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(s));
    }
    const b = this.room(s.length + 2);
    let p = this.pos;
    b[p++] = 0x22;
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
    b[p++] = 0x22;
    this.pos = p;
  }

  /** A non-negative safe integer, in int32 parts (a millisecond time has 13 digits). */
  uint(v: number): void {
    if (v < 1e9) return this.int32Digits(v, decimalDigits(v));
    const high = Math.floor(v / 1e9);
    this.uint(high);
    this.int32Digits(v - high * 1e9, 9);
  }

  /** The last `count` digits of `n` (0 <= n < 1e9), zero-padded. */
  private int32Digits(n: number, count: number): void {
    const b = this.room(count);
    let p = this.pos + count;
    this.pos = p;
    let t = n | 0;
    for (let k = 0; k < count; k++) {
      const q = (t / 10) | 0;
      b[--p] = 0x30 + t - q * 10;
      t = q;
    }
  }

  int(v: number): void {
    if (v < 0) {
      this.room(1)[this.pos++] = 0x2d;
      v = -v;
    }
    this.uint(v);
  }

  /** A number as JSON.stringify prints it: NaN and the infinities are `null`. */
  number(v: number): void {
    if (Number.isSafeInteger(v)) this.int(v);
    else if (Number.isFinite(v)) this.ascii(String(v));
    else this.ascii('null');
  }

  /**
   * `v` as `number` prints it when it is below SCALED_MAX with at most FRACTION_DIGITS_MAX decimals (most
   * sensor values), digit by digit, without the table's memory (false: any other value). Such a decimal's
   * spacing (1e-4) is over 100 times a double's spacing there (2^-20), so it is the only short decimal that
   * reads back as `v`, and JavaScript prints a number as its shortest such decimal.
   */
  private shortDecimal(v: number): boolean {
    const a = Math.abs(v);
    if (!(a < SCALED_MAX)) return false;
    for (let k = 0; k <= FRACTION_DIGITS_MAX; k++) {
      const scaled = a * POW10[k];
      if (!Number.isInteger(scaled) || scaled / POW10[k] !== a) continue;
      if (v < 0) this.room(1)[this.pos++] = 0x2d;
      if (k === 0) this.uint(scaled);
      else this.decimal(scaled, k);
      return true;
    }
    return false;
  }

  /** `scaled` / 10^k (not an integer) with its trailing zeros dropped. */
  private decimal(scaled: number, k: number): void {
    let m = scaled;
    let fraction = k;
    while (m % 10 === 0) {
      m /= 10;
      fraction--;
    }
    const unit = POW10[fraction];
    const whole = Math.floor(m / unit);
    this.uint(whole);
    this.room(1)[this.pos++] = 0x2e;
    this.int32Digits(m - whole * unit, fraction);
  }

  /**
   * The msgpack float64 at `off` (8 big-endian bytes) as `number` prints it. Printing a double is the
   * dearest step of a page (V8 takes 30 to 90 ns, and sensor values repeat), so the text of each is kept
   * in a table indexed by its bits; the text is a function of the bits alone, so any model may share it.
   * A slot (bits, length, text) is 32 bytes in one cache line: the table is mostly out of the cache when
   * the writers run between two reads.
   */
  float64(src: Uint8Array, off: number): void {
    for (let i = 0; i < 8; i++) F64_BYTES[7 - i] = src[off + i];
    if (this.shortDecimal(F64[0])) return;
    const t = (floatTable ??= newFloatTable());
    const hi = (src[off] << 24) | (src[off + 1] << 16) | (src[off + 2] << 8) | src[off + 3];
    const lo = (src[off + 4] << 24) | (src[off + 5] << 16) | (src[off + 6] << 8) | src[off + 7];
    const slot = Math.imul(hi ^ Math.imul(lo, 0x9e3779b1), 0x85ebca6b) >>> FLOAT_SLOT_SHIFT;
    const word = slot * (FLOAT_SLOT_BYTES / 4);
    const at = slot * FLOAT_SLOT_BYTES;
    const len = t.bytes[at + FLOAT_LENGTH_AT];
    if (len > 0 && t.words[word] === hi && t.words[word + 1] === lo) {
      const b = this.room(len);
      let p = this.pos;
      const texts = t.bytes;
      for (let i = at + FLOAT_TEXT_AT, end = i + len; i < end; i++) b[p++] = texts[i];
      this.pos = p;
      return;
    }
    const v = F64[0];
    if (!Number.isFinite(v)) return this.ascii('null');
    const start = this.pos;
    this.number(v);
    const n = this.pos - start;
    if (n > FLOAT_SLOT_BYTES - FLOAT_TEXT_AT) return;
    t.bytes.set(this.buf.subarray(start, this.pos), at + FLOAT_TEXT_AT);
    t.words[word] = hi;
    t.words[word + 1] = lo;
    t.bytes[at + FLOAT_LENGTH_AT] = n;
  }
}

/** Integers below this with at most FRACTION_DIGITS_MAX decimals are printed by shortDecimal. */
const SCALED_MAX = 2 ** 33;
const FRACTION_DIGITS_MAX = 4;
const POW10 = [1, 10, 100, 1000, 10_000];

/** Digits of `n` (0 <= n < 1e9). */
function decimalDigits(n: number): number {
  if (n < 1e4) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : 4;
  if (n < 1e6) return n < 1e5 ? 5 : 6;
  return n < 1e7 ? 7 : n < 1e8 ? 8 : 9;
}

const F64 = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64.buffer);

/** Texts of doubles kept: 512 KiB, made on the first page printed. */
const FLOAT_SLOT_SHIFT = 18;
const FLOAT_SLOTS = 2 ** (32 - FLOAT_SLOT_SHIFT);
/** A slot: the high and low word of the bits, the text's length, the text (up to 23 characters; longer ones are not kept). */
const FLOAT_SLOT_BYTES = 32;
const FLOAT_LENGTH_AT = 8;
const FLOAT_TEXT_AT = 9;

interface FloatTable {
  /** The slots; a length of 0: the slot is empty. */
  bytes: Uint8Array;
  /** The same memory, for the bits. */
  words: Int32Array;
}

let floatTable: FloatTable | undefined;

function newFloatTable(): FloatTable {
  const memory = new ArrayBuffer(FLOAT_SLOTS * FLOAT_SLOT_BYTES);
  return { bytes: new Uint8Array(memory), words: new Int32Array(memory) };
}
