/**
 * The codec of one chunk of a compressed sealed segment (issue 11): the exact bytes of consecutive frames
 * in, a smaller form out, and back byte for byte. Plain deflate of a 4 KiB chunk of sensor records leaves
 * about 24 B a record: the CRCs and the low bytes of the float64 values look random to it. Here what
 * sealFrame can recompute (length, CRC, flags) is not stored at all, ids and timestamps become deltas, and
 * each msgpack payload array is cut into one stream per item index, where a float64 is XORed with the
 * column's previous float64 so that slowly varying values share their leading bytes. Deflate of those
 * streams is what makes the figure.
 *
 * Compressed form: a mode byte, then
 *   MODE_RAW      the logical bytes as they are (input that is not whole valid frames, or that the
 *                 transform does not make smaller);
 *   MODE_COLUMNS  deflateRaw of: varint frame count, varint column count, a varint length per stream
 *                 (the STREAM_* ones, then one per column), the streams back to back.
 * Varints are unsigned LEB128 of values up to 2^53.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { MODEL_FIELDS_MAX, SPARSE_STRIDE, assert } from './constants.js';
import { FRAME_BYTES_MAX, FRAME_HEADER_BYTES, FRAME_SAVE, FRAME_SUPERSEDE, checkFrame, frameBytes, frameId, frameTs, frameType, sealFrame } from './frame.js';

/** Logical bytes of one chunk: one sparse-index group of the largest frames. The caller cuts chunks below it. */
export const CHUNK_LOGICAL_BYTES_MAX = SPARSE_STRIDE * FRAME_BYTES_MAX;

const MODE_RAW = 0;
const MODE_COLUMNS = 1;
const DEFLATE_LEVEL = 6;

/** Item indexes that get a stream of their own; a longer array is stored as a raw payload. */
const COLUMNS_MAX = MODEL_FIELDS_MAX;

/** Bits of a frame's head byte. */
const HEAD_SUPERSEDE = 1;
/** ts is 8 raw bytes in STREAM_TS_RAW instead of a delta-of-delta in STREAM_TS. */
const HEAD_TS_RAW = 2;
/** The id is lower than the previous frame's: stored whole, not as a delta. */
const HEAD_ID_WHOLE = 4;
/** The payload is not an array of msgpack scalars: its length in STREAM_RAW_LENS, its bytes in STREAM_RAW. */
const HEAD_PAYLOAD_RAW = 8;
const HEAD_BITS = HEAD_SUPERSEDE | HEAD_TS_RAW | HEAD_ID_WHOLE | HEAD_PAYLOAD_RAW;

const STREAM_HEADS = 0;
const STREAM_IDS = 1;
const STREAM_TS = 2;
const STREAM_TS_RAW = 3;
const STREAM_ARRAY_HEADS = 4;
const STREAM_RAW_LENS = 5;
const STREAM_RAW = 6;
const FIXED_STREAMS = 7;

/** A delta-of-delta beyond this goes raw, so that its zigzag stays a safe integer. */
const TS_DOD_MAX = 2 ** 52;
/** Varint bytes of a value up to 2^53. */
const VARINT_BYTES_MAX = 8;
/** The inflated streams never exceed the logical bytes by more than their table (see encodeColumns). */
const TABLE_BYTES_MAX = 2 * VARINT_BYTES_MAX + (FIXED_STREAMS + COLUMNS_MAX) * VARINT_BYTES_MAX;

/** Compressed form of `logical` (the exact bytes of whole, valid frames back to back). */
export function encodeChunk(logical: Uint8Array): Buffer {
  assert(logical.length <= CHUNK_LOGICAL_BYTES_MAX, `chunk of ${logical.length} bytes over CHUNK_LOGICAL_BYTES_MAX`);
  const streams = wholeValidFrames(logical) ? encodeColumns(logical) : undefined;
  if (streams) {
    const deflated = deflateRawSync(streams, { level: DEFLATE_LEVEL });
    if (deflated.length < logical.length) return Buffer.concat([Buffer.of(MODE_COLUMNS), deflated]);
  }
  return Buffer.concat([Buffer.of(MODE_RAW), logical]);
}

/**
 * The exact logical bytes back, a new Buffer of `logicalBytes`. Malformed input throws an Error naming what
 * is wrong, or gives other bytes of that length (the caller's CRC of the logical bytes tells).
 */
export function decodeChunk(compressed: Uint8Array, logicalBytes: number): Buffer {
  if (!Number.isSafeInteger(logicalBytes) || logicalBytes < 0 || logicalBytes > CHUNK_LOGICAL_BYTES_MAX) {
    throw new Error(`chunk: logical length ${logicalBytes} out of range`);
  }
  if (compressed.length === 0) throw new Error('chunk: empty');
  const mode = compressed[0];
  if (mode === MODE_RAW) {
    if (compressed.length - 1 !== logicalBytes) throw new Error(`chunk: raw chunk of ${compressed.length - 1} bytes, expected ${logicalBytes}`);
    return Buffer.from(compressed.subarray(1));
  }
  if (mode !== MODE_COLUMNS) throw new Error(`chunk: unknown mode ${mode}`);
  let inflated: Buffer;
  try {
    inflated = inflateRawSync(compressed.subarray(1), { maxOutputLength: logicalBytes + TABLE_BYTES_MAX });
  } catch (e) {
    throw new Error(`chunk: corrupt deflate data (${(e as Error).message})`);
  }
  return decodeColumns(inflated, logicalBytes);
}

function wholeValidFrames(logical: Uint8Array): boolean {
  let off = 0;
  while (off < logical.length) {
    const n = checkFrame(logical, off, logical.length);
    if (n <= 0) return false;
    off += n;
  }
  return off > 0;
}

/** The streams of whole valid frames, undefined when there are too many columns to be worth it. */
function encodeColumns(logical: Uint8Array): Buffer | undefined {
  const fixed = Array.from({ length: FIXED_STREAMS }, () => new ByteSink());
  const columns: ByteSink[] = [];
  /** Per column, the offset in `logical` of the previous float64's 8 bytes, or -1. */
  const prevFloat: number[] = [];
  let frames = 0;
  let prevId = 0;
  const tsState = new TsState();
  for (let off = 0; off < logical.length; off += frameBytes(logical, off), frames++) {
    const id = frameId(logical, off);
    const ts = frameTs(logical, off);
    let head = frameType(logical, off) === FRAME_SUPERSEDE ? HEAD_SUPERSEDE : 0;
    if (id >= prevId) fixed[STREAM_IDS].varint(id - prevId);
    else {
      head |= HEAD_ID_WHOLE;
      fixed[STREAM_IDS].varint(id);
    }
    prevId = id;
    const dod = tsState.deltaOfDelta(ts);
    if (dod === undefined) {
      head |= HEAD_TS_RAW;
      fixed[STREAM_TS_RAW].bytes(logical, off + 18, off + 26);
    } else fixed[STREAM_TS].varint(zigzag(dod));
    tsState.advance(ts);
    const payload = off + FRAME_HEADER_BYTES;
    const end = off + frameBytes(logical, off);
    const items = scalarArrayItems(logical, payload, end);
    if (items < 0) {
      head |= HEAD_PAYLOAD_RAW;
      fixed[STREAM_RAW_LENS].varint(end - payload);
      fixed[STREAM_RAW].bytes(logical, payload, end);
    } else {
      let p = payload + arrayHeadBytes(logical[payload]);
      fixed[STREAM_ARRAY_HEADS].bytes(logical, payload, p);
      for (let col = 0; col < items; col++) {
        if (col === columns.length) {
          columns.push(new ByteSink());
          prevFloat.push(-1);
        }
        const n = itemBytes(logical, p, end);
        if (logical[p] === 0xcb) {
          columns[col].float64Xor(logical, p, prevFloat[col]);
          prevFloat[col] = p + 1;
        } else columns[col].bytes(logical, p, p + n);
        p += n;
      }
    }
    fixed[STREAM_HEADS].byte(head);
  }
  const all = [...fixed, ...columns];
  const table = new ByteSink();
  table.varint(frames);
  table.varint(columns.length);
  for (const s of all) table.varint(s.length);
  const out = Buffer.concat([table.view(), ...all.map((s) => s.view())]);
  // Per frame the streams hold at most head 1 + id 8 + ts 8 + raw length 4 bytes where the frame had 26.
  assert(out.length <= logical.length + TABLE_BYTES_MAX, 'chunk streams larger than their bound');
  return out;
}

function decodeColumns(src: Buffer, logicalBytes: number): Buffer {
  const table = new ByteSource(src, 0, src.length, 'table');
  const frames = table.varint();
  const columnCount = table.varint();
  if (frames * FRAME_HEADER_BYTES > logicalBytes) throw new Error(`chunk: ${frames} frames cannot fit in ${logicalBytes} bytes`);
  if (columnCount > COLUMNS_MAX) throw new Error(`chunk: ${columnCount} columns, at most ${COLUMNS_MAX}`);
  const streams: ByteSource[] = [];
  let start = 0;
  const lengths = Array.from({ length: FIXED_STREAMS + columnCount }, () => table.varint());
  start = table.pos;
  for (let s = 0; s < lengths.length; s++) {
    if (start + lengths[s] > src.length) throw new Error(`chunk: stream ${s} runs past the end`);
    streams.push(new ByteSource(src, start, start + lengths[s], s < FIXED_STREAMS ? `stream ${s}` : `column ${s - FIXED_STREAMS}`));
    start += lengths[s];
  }
  if (start !== src.length) throw new Error('chunk: bytes after the last stream');
  const heads = streams[STREAM_HEADS];
  const ids = streams[STREAM_IDS];
  const tss = streams[STREAM_TS];
  const tsRaw = streams[STREAM_TS_RAW];
  const arrayHeads = streams[STREAM_ARRAY_HEADS];
  const rawLens = streams[STREAM_RAW_LENS];
  const raw = streams[STREAM_RAW];
  const prevFloat = new Int32Array(columnCount).fill(-1);
  const out = Buffer.alloc(logicalBytes);
  let off = 0;
  let prevId = 0;
  const tsState = new TsState();
  for (let f = 0; f < frames; f++) {
    const head = heads.byte();
    if ((head & ~HEAD_BITS) !== 0) throw new Error(`chunk: frame ${f} has unknown head bits ${head}`);
    const id = head & HEAD_ID_WHOLE ? ids.varint() : prevId + ids.varint();
    if (!Number.isSafeInteger(id) || id < 1) throw new Error(`chunk: frame ${f} has id ${id}`);
    prevId = id;
    const ts = head & HEAD_TS_RAW ? tsRaw.float64() : tsState.predicted() + unzigzag(tss.varint());
    tsState.advance(ts);
    const payload = off + FRAME_HEADER_BYTES;
    let w = payload;
    if (payload > logicalBytes) throw new Error(`chunk: frame ${f} runs past the logical length`);
    if (head & HEAD_PAYLOAD_RAW) w = raw.copyTo(out, w, rawLens.varint());
    else {
      const items = arrayHeads.arrayHeadTo(out, w);
      w += arrayHeadBytes(out[w]);
      if (items > columnCount) throw new Error(`chunk: frame ${f} has ${items} items, ${columnCount} columns`);
      for (let col = 0; col < items; col++) {
        const column = streams[FIXED_STREAMS + col];
        if (column.peek() === 0xcb) {
          w = column.float64XorTo(out, w, prevFloat[col]);
          prevFloat[col] = w - 8;
        } else w = column.itemTo(out, w);
      }
    }
    sealFrame(out, off, head & HEAD_SUPERSEDE ? FRAME_SUPERSEDE : FRAME_SAVE, id, ts, w - payload);
    off = w;
  }
  if (off !== logicalBytes) throw new Error(`chunk: frames end at ${off}, expected ${logicalBytes}`);
  for (const s of streams) s.expectEnd();
  return out;
}

/**
 * Delta-of-delta coding of timestamps. Both sides derive the prediction from the timestamps alone, so any
 * rule is lossless as long as it is the same: a timestamp that is not a safe integer (or -0, which an
 * integer sum would turn into 0) goes raw, and a delta that is not a safe integer counts as 0.
 */
class TsState {
  private prevTs = 0;
  private prevDelta = 0;

  predicted(): number {
    return this.prevTs + this.prevDelta;
  }

  /** ts minus the prediction when that can be stored as a zigzag varint and added back exactly. */
  deltaOfDelta(ts: number): number | undefined {
    const predicted = this.predicted();
    if (!Number.isSafeInteger(ts) || Object.is(ts, -0) || !Number.isSafeInteger(predicted)) return undefined;
    const dod = ts - predicted;
    return Math.abs(dod) <= TS_DOD_MAX ? dod : undefined;
  }

  advance(ts: number): void {
    const delta = ts - this.prevTs;
    this.prevDelta = Number.isSafeInteger(delta) ? delta : 0;
    this.prevTs = ts;
  }
}

function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1;
}

function unzigzag(z: number): number {
  return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
}

/** Item count of the msgpack array of scalars that is exactly b[start, end), or -1 for anything else. */
function scalarArrayItems(b: Uint8Array, start: number, end: number): number {
  if (start >= end) return -1;
  const t = b[start];
  const headBytes = arrayHeadBytes(t);
  if (headBytes === 0 || start + headBytes > end) return -1;
  const count = t <= 0x9f ? t & 0x0f : t === 0xdc ? u16be(b, start + 1) : u32be(b, start + 1);
  if (count > COLUMNS_MAX) return -1;
  let p = start + headBytes;
  for (let i = 0; i < count; i++) {
    const n = itemBytes(b, p, end);
    if (n < 0) return -1;
    p += n;
  }
  return p === end ? count : -1;
}

/** Bytes of the msgpack array header starting with `t`, 0 if `t` does not start an array. */
function arrayHeadBytes(t: number): number {
  if (t >= 0x90 && t <= 0x9f) return 1;
  return t === 0xdc ? 3 : t === 0xdd ? 5 : 0;
}

/**
 * Bytes of the msgpack scalar at b[off], tag included: nil, booleans, integers, floats, strings, binaries,
 * extensions. -1 for an array or map, the unused tag 0xc1, or a value running past `end`.
 */
function itemBytes(b: Uint8Array, off: number, end: number): number {
  if (off >= end) return -1;
  const t = b[off];
  let n = SCALAR_BYTES[t];
  if (n === LENGTH_U8) n = off + 1 < end ? b[off + 1] : -1;
  else if (n === LENGTH_U16) n = off + 2 < end ? u16be(b, off + 1) : -1;
  else if (n === LENGTH_U32) n = off + 4 < end ? u32be(b, off + 1) : -1;
  else return n !== NOT_SCALAR && off + n <= end ? n : -1;
  if (n < 0) return -1;
  n += SCALAR_HEAD_BYTES[t];
  return off + n <= end ? n : -1;
}

const NOT_SCALAR = -1;
const LENGTH_U8 = -2;
const LENGTH_U16 = -3;
const LENGTH_U32 = -4;
/** Per tag: total bytes of a fixed-size scalar, or how its length is stored. */
const SCALAR_BYTES = new Int8Array(256).fill(NOT_SCALAR);
/** Per tag of a variable-size scalar: bytes before its data (tag, length, extension type). */
const SCALAR_HEAD_BYTES = new Uint8Array(256);
function defineScalars(): void {
  for (let t = 0x00; t <= 0x7f; t++) SCALAR_BYTES[t] = 1;
  for (let t = 0xe0; t <= 0xff; t++) SCALAR_BYTES[t] = 1;
  for (let t = 0xa0; t <= 0xbf; t++) SCALAR_BYTES[t] = 1 + (t & 0x1f);
  const fixed: [number, number][] = [[0xc0, 1], [0xc2, 1], [0xc3, 1], [0xcc, 2], [0xd0, 2], [0xcd, 3], [0xd1, 3], [0xca, 5], [0xce, 5], [0xd2, 5], [0xcb, 9], [0xcf, 9], [0xd3, 9], [0xd4, 3], [0xd5, 4], [0xd6, 6], [0xd7, 10], [0xd8, 18]];
  for (const [t, n] of fixed) SCALAR_BYTES[t] = n;
  const sized: [number, number, number][] = [[0xd9, LENGTH_U8, 2], [0xc4, LENGTH_U8, 2], [0xda, LENGTH_U16, 3], [0xc5, LENGTH_U16, 3], [0xdb, LENGTH_U32, 5], [0xc6, LENGTH_U32, 5], [0xc7, LENGTH_U8, 3], [0xc8, LENGTH_U16, 4], [0xc9, LENGTH_U32, 6]];
  for (const [t, n, head] of sized) {
    SCALAR_BYTES[t] = n;
    SCALAR_HEAD_BYTES[t] = head;
  }
}
defineScalars();

function u16be(b: Uint8Array, off: number): number {
  return (b[off] << 8) | b[off + 1];
}

function u32be(b: Uint8Array, off: number): number {
  return ((b[off] << 24) | (b[off + 1] << 16) | (b[off + 2] << 8) | b[off + 3]) >>> 0;
}

/** A growing byte buffer: one stream being encoded. */
class ByteSink {
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

  bytes(src: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    this.buf.set(src.subarray(start, end), this.length);
    this.length += end - start;
  }

  varint(v: number): void {
    assert(Number.isSafeInteger(v) && v >= 0, `varint of ${v}`);
    while (v >= 0x80) {
      this.byte((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(v);
  }

  /** The float64 item at src[p] (tag and 8 bytes), its bytes XORed with the 8 at src[prev] (none: -1). */
  float64Xor(src: Uint8Array, p: number, prev: number): void {
    this.room(9);
    this.buf[this.length++] = 0xcb;
    for (let k = 1; k <= 8; k++) this.buf[this.length++] = src[p + k] ^ (prev < 0 ? 0 : src[prev + k - 1]);
  }

  view(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

/** One stream being decoded: every read checks its end, so corrupt input throws instead of running on. */
class ByteSource {
  pos: number;

  constructor(
    private readonly src: Buffer,
    start: number,
    private readonly end: number,
    private readonly name: string,
  ) {
    this.pos = start;
  }

  private need(n: number): void {
    if (this.pos + n > this.end) throw new Error(`chunk: ${this.name} ends early`);
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
      if (b < 0x80) {
        if (!Number.isSafeInteger(v)) break;
        return v;
      }
      scale *= 0x80;
    }
    throw new Error(`chunk: bad varint in ${this.name}`);
  }

  float64(): number {
    this.need(8);
    const v = this.src.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }

  /** Copies n bytes to out[w], returns the offset after them. */
  copyTo(out: Buffer, w: number, n: number): number {
    this.need(n);
    if (w + n > out.length) throw new Error(`chunk: ${this.name} item runs past the logical length`);
    if (n <= 32) for (let k = 0; k < n; k++) out[w + k] = this.src[this.pos + k];
    else this.src.copy(out, w, this.pos, this.pos + n);
    this.pos += n;
    return w + n;
  }

  /** Copies an array header to out[w]; returns its item count. */
  arrayHeadTo(out: Buffer, w: number): number {
    const t = this.peek();
    const n = arrayHeadBytes(t);
    if (n === 0) throw new Error(`chunk: ${this.name} has no array header`);
    this.copyTo(out, w, n);
    return t <= 0x9f ? t & 0x0f : t === 0xdc ? u16be(out, w + 1) : u32be(out, w + 1);
  }

  itemTo(out: Buffer, w: number): number {
    const n = itemBytes(this.src, this.pos, this.end);
    if (n < 0) throw new Error(`chunk: ${this.name} holds no scalar`);
    return this.copyTo(out, w, n);
  }

  /** A float64 item whose 8 bytes were XORed with those at out[prev] (none: -1); returns the offset after it. */
  float64XorTo(out: Buffer, w: number, prev: number): number {
    this.need(9);
    if (w + 9 > out.length) throw new Error(`chunk: ${this.name} item runs past the logical length`);
    const s = this.src;
    const p = this.pos;
    out[w] = 0xcb;
    for (let k = 1; k <= 8; k++) out[w + k] = s[p + k] ^ (prev < 0 ? 0 : out[prev + k - 1]);
    this.pos += 9;
    return w + 9;
  }

  expectEnd(): void {
    if (this.pos !== this.end) throw new Error(`chunk: ${this.end - this.pos} bytes left in ${this.name}`);
  }
}
