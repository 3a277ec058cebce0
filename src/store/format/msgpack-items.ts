/**
 * The msgpack items the store writes (scalars of a record's value array), measured without decoding
 * them: shared by the JSON printer of pages (record-json.ts), the chunk codec (chunk-columns.ts) and the
 * readers of payload bytes (block-columns.ts, summary-fold.ts).
 */
export function u16(b: Uint8Array, off: number): number {
  return (b[off] << 8) | b[off + 1];
}

export function u32be(b: Uint8Array, off: number): number {
  return ((b[off] << 24) | (b[off + 1] << 16) | (b[off + 2] << 8) | b[off + 3]) >>> 0;
}

/**
 * Bytes of the msgpack value at `off`, header included, for the types this path prints; -1 for any other
 * type or a value running past `end`.
 */
export function valueBytes(b: Uint8Array, off: number, end: number): number {
  const t = b[off];
  let n: number;
  if (t < 0x80 || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) n = 1;
  else if (t >= 0xa0 && t <= 0xbf) n = 1 + (t - 0xa0);
  else if (t === 0xcc || t === 0xd0) n = 2;
  else if (t === 0xcd || t === 0xd1) n = 3;
  else if (t === 0xce || t === 0xd2) n = 5;
  else if (t === 0xcb) n = 9;
  else if (t === 0xd9) n = off + 1 < end ? 2 + b[off + 1] : -1;
  else if (t === 0xda) n = off + 2 < end ? 3 + u16(b, off + 1) : -1;
  else if (t === 0xdb) n = off + 4 < end ? 5 + u32be(b, off + 1) : -1;
  else return -1;
  return n > 0 && off + n <= end ? n : -1;
}

/** A DataView of the last buffer asked for, made again only when the buffer changes: the frames of a read share one. */
export class BufferView {
  private buf: Uint8Array | undefined;
  private view: DataView | undefined;

  of(buf: Uint8Array): DataView {
    if (this.buf !== buf) {
      this.buf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    }
    return this.view as DataView;
  }
}
