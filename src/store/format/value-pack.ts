/**
 * A record's value array as the frame's payload holds it: msgpack, written byte for byte as msgpackr
 * (`useRecords: false`, the store's own packer) writes an array of the scalars a record holds. The script
 * workers pack the records they make with it, so the main thread appends those bytes as the payload
 * instead of decoding the values and packing them again (issue 32); `packedArrayFits` is the store's
 * check of such bytes before it frames them.
 *
 * Numbers take the smallest integer form up to 32 bits (-0 as 0) and float64 otherwise (NaN, infinities
 * and fractions included); strings of fewer than 64 UTF-16 units are encoded unit by unit as msgpackr does (a lone
 * surrogate takes three bytes), longer ones by TextEncoder (a lone surrogate becomes U+FFFD), each with
 * the smallest header for its byte length; null and undefined are nil. Anything else is refused.
 */
import { valueBytes } from './msgpack-items.js';

const SHORT_STRING_UNITS = 0x40;
const INITIAL_BYTES = 16 * 1024;
const utf8 = new TextEncoder();

/** Appends packed value arrays to one growing buffer; `take()` copies them out and starts again. */
export class ValuePacker {
  private buf = new Uint8Array(INITIAL_BYTES);
  private view = new DataView(this.buf.buffer);
  private pos = 0;

  /** Bytes written since the last take(). */
  get length(): number {
    return this.pos;
  }

  /** The header of an array of `count` values; the values follow with value(). */
  arrayHeader(count: number): void {
    this.room(5);
    if (count < 0x10) this.buf[this.pos++] = 0x90 | count;
    else if (count < 0x10000) {
      this.buf[this.pos++] = 0xdc;
      this.view.setUint16(this.pos, count);
      this.pos += 2;
    } else {
      this.buf[this.pos++] = 0xdd;
      this.view.setUint32(this.pos, count);
      this.pos += 4;
    }
  }

  value(value: unknown): void {
    if (typeof value === 'number') this.number(value);
    else if (typeof value === 'string') this.string(value);
    else if (typeof value === 'boolean') {
      this.room(1);
      this.buf[this.pos++] = value ? 0xc3 : 0xc2;
    } else if (value === null || value === undefined) {
      this.room(1);
      this.buf[this.pos++] = 0xc0;
    } else throw new TypeError(`a record value is a number, string, boolean or null, got ${typeof value}`);
  }

  /** Drops what was written since the last take(). */
  clear(): void {
    this.pos = 0;
  }

  /** The bytes written since the last take(), copied; the packer starts empty again. */
  take(): Uint8Array {
    const out = this.buf.slice(0, this.pos);
    this.pos = 0;
    return out;
  }

  private number(value: number): void {
    this.room(9);
    const b = this.buf;
    if (value >>> 0 === value) {
      if (value < 0x80) b[this.pos++] = value;
      else if (value < 0x100) {
        b[this.pos++] = 0xcc;
        b[this.pos++] = value;
      } else if (value < 0x10000) {
        b[this.pos++] = 0xcd;
        this.view.setUint16(this.pos, value);
        this.pos += 2;
      } else {
        b[this.pos++] = 0xce;
        this.view.setUint32(this.pos, value);
        this.pos += 4;
      }
    } else if (value >> 0 === value) {
      if (value >= -0x20) b[this.pos++] = 0x100 + value;
      else if (value >= -0x80) {
        b[this.pos++] = 0xd0;
        b[this.pos++] = value + 0x100;
      } else if (value >= -0x8000) {
        b[this.pos++] = 0xd1;
        this.view.setInt16(this.pos, value);
        this.pos += 2;
      } else {
        b[this.pos++] = 0xd2;
        this.view.setInt32(this.pos, value);
        this.pos += 4;
      }
    } else {
      b[this.pos++] = 0xcb;
      this.view.setFloat64(this.pos, value);
      this.pos += 8;
    }
  }

  private string(value: string): void {
    const units = value.length;
    // The header is guessed from the units, then moved when the bytes need a longer one.
    const guessed = units < 0x20 ? 1 : units < 0x100 ? 2 : units < 0x10000 ? 3 : 5;
    this.room(5 + units * 3);
    const start = this.pos + guessed;
    const bytes = units < SHORT_STRING_UNITS ? this.unitsUtf8(value, start) : utf8.encodeInto(value, this.buf.subarray(start)).written;
    const header = bytes < 0x20 ? 1 : bytes < 0x100 ? 2 : bytes < 0x10000 ? 3 : 5;
    const b = this.buf;
    if (header !== guessed) b.copyWithin(this.pos + header, start, start + bytes);
    if (header === 1) b[this.pos] = 0xa0 | bytes;
    else if (header === 2) {
      b[this.pos] = 0xd9;
      b[this.pos + 1] = bytes;
    } else if (header === 3) {
      b[this.pos] = 0xda;
      this.view.setUint16(this.pos + 1, bytes);
    } else {
      b[this.pos] = 0xdb;
      this.view.setUint32(this.pos + 1, bytes);
    }
    this.pos += header + bytes;
  }

  /** msgpackr's encoding of a short string: pairs of surrogates as one code point, a lone one as three bytes. */
  private unitsUtf8(value: string, start: number): number {
    const b = this.buf;
    let p = start;
    for (let i = 0; i < value.length; i++) {
      let c = value.charCodeAt(i);
      let next: number;
      if (c < 0x80) b[p++] = c;
      else if (c < 0x800) {
        b[p++] = (c >> 6) | 0xc0;
        b[p++] = (c & 0x3f) | 0x80;
      } else if ((c & 0xfc00) === 0xd800 && ((next = value.charCodeAt(i + 1)) & 0xfc00) === 0xdc00) {
        c = 0x10000 + ((c & 0x03ff) << 10) + (next & 0x03ff);
        i++;
        b[p++] = (c >> 18) | 0xf0;
        b[p++] = ((c >> 12) & 0x3f) | 0x80;
        b[p++] = ((c >> 6) & 0x3f) | 0x80;
        b[p++] = (c & 0x3f) | 0x80;
      } else {
        b[p++] = (c >> 12) | 0xe0;
        b[p++] = ((c >> 6) & 0x3f) | 0x80;
        b[p++] = (c & 0x3f) | 0x80;
      }
    }
    return p - start;
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = new Uint8Array(Math.max(this.buf.length * 2, this.pos + bytes));
    grown.set(this.buf.subarray(0, this.pos));
    this.buf = grown;
    this.view = new DataView(grown.buffer);
  }
}

/**
 * Whether b[start, end) is exactly one array of `count` values of the kinds a record holds (msgpack-items.ts
 * valueBytes): what the store checks of packed bytes it did not write itself before it frames them.
 */
export function packedArrayFits(b: Uint8Array, start: number, end: number, count: number): boolean {
  let at = start;
  const t = b[at];
  if (count < 0x10) {
    if (t !== (0x90 | count)) return false;
    at += 1;
  } else if (count < 0x10000) {
    if (t !== 0xdc || ((b[at + 1] << 8) | b[at + 2]) !== count) return false;
    at += 3;
  } else return false;
  for (let i = 0; i < count; i++) {
    const n = at < end ? valueBytes(b, at, end) : -1;
    if (n < 0) return false;
    at += n;
  }
  return at === end;
}
