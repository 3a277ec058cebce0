/**
 * The codec of one chunk of a compressed sealed segment (issue 11): the exact bytes of consecutive frames
 * in, a smaller form out, and back byte for byte. Plain deflate of a 4 KiB chunk of sensor records leaves
 * 25 to 28 B a record of 67: the CRCs and the low bytes of the float64 values look random to it. Here what
 * sealFrame can recompute (length, CRC, flags) is not stored at all, ids and timestamps become deltas, and
 * each msgpack payload array is cut into one stream per item index (a column) where numbers become deltas
 * against the column's previous number (chunk-columns.ts). Deflate of those streams makes the figure.
 *
 * Compressed form: a mode byte, then
 *   MODE_RAW      the logical bytes as they are (input that is not whole valid frames, or that the
 *                 transform does not make smaller);
 *   MODE_COLUMNS  deflateRaw of: varint frame count, varint column count, a varint length per stream
 *                 (the STREAM_* ones, then one per column), the streams back to back.
 * Varints and the streams: chunk-bytes.ts.
 */
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SPARSE_STRIDE, assert } from '../base/constants.js';
import { ByteSink, ByteSource, VARINT_BYTES_MAX, unzigzag, zigzag } from './chunk-bytes.js';
import { COLUMNS_MAX, ColumnReader, ColumnValueReader, ColumnWriter, type ColumnValueSink, arrayCount, arrayHeadBytes, scalarArrayItems, viewOf } from './chunk-columns.js';
import { FRAME_BYTES_MAX, FRAME_HEADER_BYTES, FRAME_SAVE, FRAME_SUPERSEDE, frameBytes, frameId, frameTs, frameType, sealFrame, wholeValidFrames } from './frame.js';
import { valueBytes } from './msgpack-items.js';

/**
 * Logical bytes of one chunk: one sparse-index group of the largest frames. The caller cuts chunks below it
 * (SUPERSEDE frames can make a group longer); a decode allocates at most this, plus the inflated streams.
 */
export const CHUNK_LOGICAL_BYTES_MAX = SPARSE_STRIDE * FRAME_BYTES_MAX;

const MODE_RAW = 0;
const MODE_COLUMNS = 1;
const DEFLATE_LEVEL = 6;

/** Bits of a frame's head byte. */
const HEAD_SUPERSEDE = 1;
/** ts is 8 raw bytes in STREAM_TS_RAW instead of a delta-of-delta in STREAM_TS. */
const HEAD_TS_RAW = 2;
/** The id is lower than the previous frame's: stored whole, not as a delta. */
const HEAD_ID_WHOLE = 4;
/** The payload is not a msgpack array of scalars: its length in STREAM_RAW_LENS, its bytes in STREAM_RAW. */
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

/** Where a frame header holds ts (frame.ts), read as raw bytes when it cannot be a delta. */
const FRAME_TS_OFFSET = 18;
/** A delta-of-delta this large goes raw, so that its zigzag stays a safe integer. */
const TS_DOD_MAX = 2 ** 52;
/**
 * What the inflated streams may exceed the logical bytes by, the bound of the decoder's inflate. Their table
 * fits in it; the streams themselves are smaller than the frames but for pathological columns (a number
 * form takes up to 10 bytes where a fixint took 1), and such a chunk is stored raw.
 */
const STREAMS_EXTRA_BYTES_MAX = (2 + FIXED_STREAMS + COLUMNS_MAX) * VARINT_BYTES_MAX;
/**
 * zlib's output buffer size for a chunk: under half of Buffer.poolSize, so it comes from Node's buffer
 * pool. The default (16 KiB) was a new ArrayBuffer on every call: a third of an inflate of a chunk, and the
 * external memory that, while a segment was compacted, made V8 run a full collection about every second.
 */
const ZLIB_CHUNK_BYTES = 4032;

/** Compressed form of `logical` (the exact bytes of whole, valid frames back to back). */
export function encodeChunk(logical: Uint8Array): Buffer {
  assert(logical.length <= CHUNK_LOGICAL_BYTES_MAX, `chunk of ${logical.length} bytes over CHUNK_LOGICAL_BYTES_MAX`);
  // Only frames checkFrame accepts go through the transform: one with a bad CRC would come back with a good one.
  const streams = wholeValidFrames(logical) ? encodeColumns(logical) : undefined;
  if (streams && streams.length <= logical.length + STREAMS_EXTRA_BYTES_MAX) {
    const deflated = deflateRawSync(streams, { level: DEFLATE_LEVEL, chunkSize: ZLIB_CHUNK_BYTES });
    if (deflated.length < logical.length) return Buffer.concat([Buffer.of(MODE_COLUMNS), deflated]);
  }
  return Buffer.concat([Buffer.of(MODE_RAW), logical]);
}

/**
 * The exact logical bytes back: a new Buffer of `logicalBytes`, or the start of `into` when given (at least
 * that long). Malformed input throws an Error naming what is wrong, or gives other bytes of that length
 * (the caller's CRC of the logical bytes tells).
 */
export function decodeChunk(compressed: Uint8Array, logicalBytes: number, into?: Buffer): Buffer {
  if (!Number.isSafeInteger(logicalBytes) || logicalBytes < 0 || logicalBytes > CHUNK_LOGICAL_BYTES_MAX) {
    throw new Error(`chunk: logical length ${logicalBytes} out of range`);
  }
  if (compressed.length === 0) throw new Error('chunk: empty');
  assert(into === undefined || into.length >= logicalBytes, 'a chunk is decoded into a buffer that holds it');
  const out = into === undefined ? Buffer.allocUnsafe(logicalBytes) : into.subarray(0, logicalBytes);
  const mode = compressed[0];
  if (mode === MODE_RAW) {
    if (compressed.length - 1 !== logicalBytes) throw new Error(`chunk: raw chunk of ${compressed.length - 1} bytes, expected ${logicalBytes}`);
    out.set(compressed.subarray(1));
    return out;
  }
  if (mode !== MODE_COLUMNS) throw new Error(`chunk: unknown mode ${mode}`);
  return decodeColumns(inflateStreams(compressed, logicalBytes), logicalBytes, out);
}

/** The streams of whole valid frames. */
function encodeColumns(logical: Uint8Array): Buffer {
  const fixed = Array.from({ length: FIXED_STREAMS }, () => new ByteSink());
  const columnWriters: ColumnWriter[] = [];
  const view = viewOf(logical);
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
      fixed[STREAM_TS_RAW].bytes(logical, off + FRAME_TS_OFFSET, off + FRAME_TS_OFFSET + 8);
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
        if (col === columnWriters.length) columnWriters.push(new ColumnWriter(logical, view));
        const n = valueBytes(logical, p, end);
        columnWriters[col].item(p, n);
        p += n;
      }
    }
    fixed[STREAM_HEADS].byte(head);
  }
  const all = [...fixed, ...columnWriters.map((c) => c.sink)];
  const table = new ByteSink();
  table.varint(frames);
  table.varint(columnWriters.length);
  for (const s of all) table.varint(s.length);
  return Buffer.concat([table.view(), ...all.map((s) => s.view())]);
}

/** The table at the start of a chunk's inflated streams: frame count, and where each stream lies. */
interface StreamTable {
  frames: number;
  columnCount: number;
  starts: number[];
  lengths: number[];
}

function readStreamTable(src: Buffer, logicalBytes: number): StreamTable {
  const table = new ByteSource(src, 0, src.length, 'table');
  const frames = table.varint();
  const columnCount = table.varint();
  if (frames * FRAME_HEADER_BYTES > logicalBytes) throw new Error(`chunk: ${frames} frames cannot fit in ${logicalBytes} bytes`);
  if (columnCount > COLUMNS_MAX) throw new Error(`chunk: ${columnCount} columns, at most ${COLUMNS_MAX}`);
  const lengths: number[] = [];
  for (let s = 0; s < FIXED_STREAMS + columnCount; s++) lengths.push(table.varint());
  const starts: number[] = [];
  let start = table.pos;
  for (const n of lengths) {
    starts.push(start);
    start += n;
  }
  if (start !== src.length) throw new Error(`chunk: streams end at ${start}, the data at ${src.length}`);
  return { frames, columnCount, starts, lengths };
}

/** Writes every byte of `out` (logicalBytes long). */
function decodeColumns(src: Buffer, logicalBytes: number, out: Buffer): Buffer {
  const t = readStreamTable(src, logicalBytes);
  const fixed = (s: number, name: string): ByteSource => new ByteSource(src, t.starts[s], t.starts[s] + t.lengths[s], name);
  const frameHeads = new FrameHeadReader(src, t);
  const rawLens = fixed(STREAM_RAW_LENS, 'raw payload lengths');
  const raw = fixed(STREAM_RAW, 'raw payloads');
  const columns = new ColumnReader(src, out, t.starts[FIXED_STREAMS] ?? src.length, t.lengths.slice(FIXED_STREAMS));
  let off = 0;
  for (let f = 0; f < t.frames; f++) {
    const { head, id, ts } = frameHeads.next(f);
    const payload = off + FRAME_HEADER_BYTES;
    if (payload > logicalBytes) throw new Error(`chunk: frame ${f} runs past the logical length`);
    let w: number;
    if (head & HEAD_PAYLOAD_RAW) w = raw.copyTo(out, payload, rawLens.varint());
    else {
      const headBytes = frameHeads.arrayHeadBytes(f);
      w = frameHeads.arrayHeads.copyTo(out, payload, headBytes);
      const items = arrayCount(out, payload);
      if (items > t.columnCount) throw new Error(`chunk: frame ${f} has ${items} items, ${t.columnCount} columns`);
      for (let col = 0; col < items; col++) w = columns.itemTo(w, col);
    }
    sealFrame(out, off, head & HEAD_SUPERSEDE ? FRAME_SUPERSEDE : FRAME_SAVE, id, ts, w - payload);
    off = w;
  }
  if (off !== logicalBytes) throw new Error(`chunk: frames end at ${off}, expected ${logicalBytes}`);
  frameHeads.expectEnd();
  rawLens.expectEnd();
  raw.expectEnd();
  columns.expectEnd();
  return out;
}

/** Where readChunkColumns hands a chunk's frames and the values of their asked columns. */
export interface ChunkFrameSink extends ColumnValueSink {
  /** The next frame of the chunk: the row its values go to, or -1 to pass over them. */
  frame(id: number, ts: number, supersede: boolean): number;
}

/**
 * The frames of a chunk (id, ts, type) and the values of the stored columns `columns` (slot s = columns[s]),
 * without rebuilding the frames: what an aggregation's edge block needs, at a fraction of decodeChunk's
 * cost. A record stored before a column gets null there, as the full decode gives. Throws on anything it
 * leaves to decodeChunk (a chunk stored raw, a payload that is not an array of scalars, an item
 * ColumnValueReader does not read) and on malformed input; the logical CRC is not checked, since the frames
 * are not rebuilt: the caller checks the stored bytes' CRC.
 */
export function readChunkColumns(compressed: Uint8Array, logicalBytes: number, columns: readonly number[], sink: ChunkFrameSink): void {
  if (compressed.length === 0 || compressed[0] !== MODE_COLUMNS) throw new Error('chunk: not in columns');
  const src = inflateStreams(compressed, logicalBytes);
  const t = readStreamTable(src, logicalBytes);
  const frameHeads = new FrameHeadReader(src, t);
  const asked = columns.map((c) => (c < t.columnCount ? c : -1));
  const values = new ColumnValueReader(
    src,
    asked.map((c) => (c < 0 ? src.length : t.starts[FIXED_STREAMS + c])),
    asked.map((c) => (c < 0 ? 0 : t.lengths[FIXED_STREAMS + c])),
  );
  for (let f = 0; f < t.frames; f++) {
    const { head, id, ts } = frameHeads.next(f);
    if (head & HEAD_PAYLOAD_RAW) throw new Error(`chunk: frame ${f} has a raw payload`);
    const arrayHeads = frameHeads.arrayHeads;
    const at = arrayHeads.pos;
    arrayHeads.pos += frameHeads.arrayHeadBytes(f);
    const items = arrayCount(src, at);
    if (items > t.columnCount) throw new Error(`chunk: frame ${f} has ${items} items, ${t.columnCount} columns`);
    const row = sink.frame(id, ts, (head & HEAD_SUPERSEDE) !== 0);
    for (let slot = 0; slot < asked.length; slot++) {
      if (asked[slot] >= 0 && asked[slot] < items) values.next(slot, row, sink);
      else if (row >= 0) sink.setOther(slot, row, null);
    }
  }
  frameHeads.expectEnd();
  values.expectEnd();
}

/** The streams of a MODE_COLUMNS chunk, inflated within their bound. */
function inflateStreams(compressed: Uint8Array, logicalBytes: number): Buffer {
  try {
    return inflateRawSync(compressed.subarray(1), { maxOutputLength: logicalBytes + STREAMS_EXTRA_BYTES_MAX, chunkSize: ZLIB_CHUNK_BYTES });
  } catch (e) {
    throw new Error(`chunk: corrupt deflate data (${(e as Error).message})`);
  }
}

/** The per-frame streams of a chunk, read frame by frame: head bits, id and ts, and the array headers. */
class FrameHeadReader {
  private readonly heads: ByteSource;
  private readonly ids: ByteSource;
  private readonly tss: ByteSource;
  private readonly tsRaw: ByteSource;
  readonly arrayHeads: ByteSource;
  private readonly tsState = new TsState();
  private readonly current = { head: 0, id: 0, ts: 0 };

  constructor(src: Buffer, t: StreamTable) {
    const fixed = (s: number, name: string): ByteSource => new ByteSource(src, t.starts[s], t.starts[s] + t.lengths[s], name);
    this.heads = fixed(STREAM_HEADS, 'heads');
    this.ids = fixed(STREAM_IDS, 'ids');
    this.tss = fixed(STREAM_TS, 'timestamps');
    this.tsRaw = fixed(STREAM_TS_RAW, 'raw timestamps');
    this.arrayHeads = fixed(STREAM_ARRAY_HEADS, 'array heads');
  }

  /** Frame f's head, id and ts (the same object each call). */
  next(f: number): { head: number; id: number; ts: number } {
    const c = this.current;
    const head = this.heads.byte();
    if ((head & ~HEAD_BITS) !== 0) throw new Error(`chunk: frame ${f} has unknown head bits ${head}`);
    const id = head & HEAD_ID_WHOLE ? this.ids.varint() : c.id + this.ids.varint();
    if (!Number.isSafeInteger(id) || id < 1) throw new Error(`chunk: frame ${f} has id ${id}`);
    // The encoder stores an id whole only below the previous one: any other whole id is a damaged head.
    if (head & HEAD_ID_WHOLE && id >= c.id) throw new Error(`chunk: frame ${f} has a whole id ${id}, not below the previous ${c.id}`);
    const ts = head & HEAD_TS_RAW ? this.tsRaw.float64() : this.tsState.predicted() + unzigzag(this.tss.varint());
    this.tsState.advance(ts);
    c.head = head;
    c.id = id;
    c.ts = ts;
    return c;
  }

  /** Bytes of frame f's array header, next in arrayHeads. */
  arrayHeadBytes(f: number): number {
    const n = arrayHeadBytes(this.arrayHeads.peek());
    if (n === 0) throw new Error(`chunk: frame ${f} has no array header`);
    return n;
  }

  expectEnd(): void {
    for (const s of [this.heads, this.ids, this.tss, this.tsRaw, this.arrayHeads]) s.expectEnd();
  }
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
    return Math.abs(dod) < TS_DOD_MAX ? dod : undefined;
  }

  advance(ts: number): void {
    const delta = ts - this.prevTs;
    this.prevDelta = Number.isSafeInteger(delta) ? delta : 0;
    this.prevTs = ts;
  }
}
