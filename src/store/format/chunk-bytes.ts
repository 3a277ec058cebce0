/**
 * The byte streams of a chunk (chunk-codec.ts): written by a growing sink, read by a source that checks its
 * end on every read, so that corrupt input throws instead of running on. Varints are unsigned LEB128 of
 * values up to 2^53; signed values are zigzagged first.
 */
import { assert } from '../base/constants.js';
import { copyBytes } from './byte-copy.js';

/** Varint bytes of a value up to 2^53. */
export const VARINT_BYTES_MAX = 8;

export function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1;
}

export function unzigzag(z: number): number {
  // Integer ops where they are exact: a float modulo is slow.
  if (z <= 0x7fffffff) return (z >>> 1) ^ -(z & 1);
  const half = Math.floor(z / 2);
  return z === half * 2 ? half : -half - 1;
}

/** A growing byte buffer: one stream being encoded. */
export class ByteSink {
  private buf = Buffer.allocUnsafe(256);
  length = 0;

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  byte(v: number): void {
    this.room(1);
    this.buf[this.length++] = v;
  }

  /** Copies byte by byte: these are a value's few bytes, and a subarray per value was most of compaction's garbage. */
  bytes(src: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    const buf = this.buf;
    let at = this.length;
    for (let i = start; i < end; i++) buf[at++] = src[i];
    this.length = at;
  }

  varint(v: number): void {
    assert(Number.isSafeInteger(v) && v >= 0, `varint of ${v}`);
    while (v >= 0x80) {
      this.byte((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(v);
  }

  view(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** One stream being decoded: src[pos, end). */
export class ByteSource {
  constructor(
    private readonly src: Buffer,
    public pos: number,
    private readonly end: number,
    private readonly name: string,
  ) {}

  private need(n: number): void {
    if (this.pos + n > this.end) throw new Error(`chunk: the ${this.name} stream ends early`);
  }

  byte(): number {
    this.need(1);
    return this.src[this.pos++];
  }

  peek(): number {
    this.need(1);
    return this.src[this.pos];
  }

  varint(): number {
    let v = 0;
    let scale = 1;
    for (let i = 0; i < VARINT_BYTES_MAX; i++) {
      const b = this.byte();
      v += (b & 0x7f) * scale;
      if (b < 0x80) return v;
      scale *= 0x80;
    }
    throw new Error(`chunk: bad varint in the ${this.name} stream`);
  }

  float64(): number {
    this.need(8);
    const v = this.src.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Copies n bytes to out[w]; returns the offset after them. */
  copyTo(out: Buffer, w: number, n: number): number {
    this.need(n);
    if (w + n > out.length) throw new Error(`chunk: the ${this.name} stream runs past the logical length`);
    copyBytes(this.src, this.pos, this.pos + n, out, w);
    this.pos += n;
    return w + n;
  }

  expectEnd(): void {
    if (this.pos !== this.end) throw new Error(`chunk: ${this.end - this.pos} bytes left in the ${this.name} stream`);
  }
}
