/**
 * A compacted sealed segment `seg-<segNo>.zlog` (docs/storage-format.md "Compacted segments"): the same
 * logical bytes as the `.log` it replaces, offsets unchanged, so the index, the summaries and every read
 * plan stay valid. The logical bytes after the segment header are cut into chunks (one sparse-index group
 * each), each stored compressed by chunk-codec.ts or, when its frames do not check or do not shrink, as
 * they are. Layout:
 *   0   the segment header of the .log, verbatim (32 B)
 *   32  zlog header: magic u32, version u16, 0 u16, logicalBytes u32, chunkCount u32, tableOffset u32,
 *       8 zero bytes, crc u32 (over bytes 32..60)
 *   64  chunks: head (logicalStart u32, logicalBytes u32, storedBytes u32, mode u8, 3 zero bytes,
 *       logicalCrc u32, crc u32 over the head's first 20 bytes and the stored bytes), then the stored bytes
 *   tableOffset: per chunk (logicalStart u32, fileOffset u32), then crc u32
 * A chunk that fails any check reads as zeros: the frame walks of the readers then report its ids lost,
 * as they do for a corrupt frame of a `.log`.
 */
import { crc32c } from './crc32c.js';
import { u32 } from './frame.js';
import { decodeChunk, readChunkColumns, type ChunkFrameSink } from './chunk-codec.js';
import { type FileIo, readFully, readFullySync } from '../base/file-io.js';
import { CHUNK_CODEC_BYTES_MAX, SEGMENT_HEADER_BYTES, assert } from '../base/constants.js';

const MAGIC = 0x5a474c53; // "SLGZ"
const VERSION = 1;
export const ZLOG_HEADER_BYTES = SEGMENT_HEADER_BYTES + 32;
export const CHUNK_HEAD_BYTES = 24;
export const CHUNK_STORED = 0;
export const CHUNK_CODEC = 1;

export function compactedName(segNo: number): string {
  return `seg-${String(segNo).padStart(10, '0')}.zlog`;
}

export function parseCompactedName(name: string): number | undefined {
  const m = /^seg-(\d{10})\.zlog$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** Where each chunk starts, logically and in the file; one sentinel entry past the last chunk. */
export interface ChunkTable {
  logicalBytes: number;
  /** Bytes of the whole file. */
  fileBytes: number;
  logicalStarts: Uint32Array;
  fileOffsets: Uint32Array;
}

export interface StoredChunk {
  logicalStart: number;
  logicalBytes: number;
  logicalCrc: number;
  mode: typeof CHUNK_STORED | typeof CHUNK_CODEC;
  stored: Buffer;
}

/** Bytes 0..64 of a zlog: the segment header, then the zlog header (written last, when the table is known). */
export function encodeZlogHeader(segmentHeader: Buffer, logicalBytes: number, chunkCount: number, tableOffset: number): Buffer {
  assert(segmentHeader.length === SEGMENT_HEADER_BYTES && chunkCount > 0 && tableOffset >= ZLOG_HEADER_BYTES, 'a zlog holds a segment header and chunks');
  const h = Buffer.alloc(ZLOG_HEADER_BYTES);
  segmentHeader.copy(h, 0);
  h.writeUInt32LE(MAGIC, 32);
  h.writeUInt16LE(VERSION, 36);
  h.writeUInt32LE(logicalBytes, 40);
  h.writeUInt32LE(chunkCount, 44);
  h.writeUInt32LE(tableOffset, 48);
  h.writeUInt32LE(crc32c(h, 32, 60), 60);
  return h;
}

/** The head that precedes a chunk's stored bytes. */
export function encodeChunkHead(c: StoredChunk): Buffer {
  const head = Buffer.alloc(CHUNK_HEAD_BYTES);
  head.writeUInt32LE(c.logicalStart, 0);
  head.writeUInt32LE(c.logicalBytes, 4);
  head.writeUInt32LE(c.stored.length, 8);
  head[12] = c.mode;
  head.writeUInt32LE(c.logicalCrc, 16);
  head.writeUInt32LE(crc32c(c.stored, 0, c.stored.length, crc32c(head, 0, 20)), 20);
  return head;
}

/** Collects where each chunk went while a zlog is written; `finish` gives the table and its bytes. */
export class ChunkTableBuilder {
  private readonly starts: number[] = [];
  private readonly offsets: number[] = [];
  /** Where the next chunk goes in the file. */
  fileOffset = ZLOG_HEADER_BYTES;
  private logicalEnd = SEGMENT_HEADER_BYTES;

  get count(): number {
    return this.starts.length;
  }

  /** Records `c` at fileOffset; returns its head and stored bytes, to be written there. */
  add(c: StoredChunk): Buffer[] {
    assert(c.logicalStart === this.logicalEnd && c.logicalBytes > 0, 'chunks cover the logical bytes in order');
    this.starts.push(c.logicalStart);
    this.offsets.push(this.fileOffset);
    this.fileOffset += CHUNK_HEAD_BYTES + c.stored.length;
    this.logicalEnd += c.logicalBytes;
    return [encodeChunkHead(c), c.stored];
  }

  /** The table (written at fileOffset, after the last chunk) and the finished file's chunk table. */
  finish(logicalBytes: number): { bytes: Buffer; table: ChunkTable } {
    assert(this.logicalEnd === logicalBytes && this.count > 0, 'chunks end at the logical end');
    const n = this.count;
    const bytes = Buffer.alloc(8 * n + 4);
    for (let k = 0; k < n; k++) {
      bytes.writeUInt32LE(this.starts[k], 8 * k);
      bytes.writeUInt32LE(this.offsets[k], 8 * k + 4);
    }
    bytes.writeUInt32LE(crc32c(bytes, 0, 8 * n), 8 * n);
    const table = {
      logicalBytes,
      fileBytes: this.fileOffset + bytes.length,
      logicalStarts: Uint32Array.from([...this.starts, logicalBytes]),
      fileOffsets: Uint32Array.from([...this.offsets, this.fileOffset]),
    };
    return { bytes, table };
  }
}

function chunkCrc(b: Uint8Array, at: number, end: number): number {
  return crc32c(b, at + CHUNK_HEAD_BYTES, end, crc32c(b, at, at + 20));
}

/** The chunk table of an open zlog, read from its header and table; undefined when either fails its check. */
export function readChunkTableSync(fd: number, fileBytes: number): ChunkTable | undefined {
  if (fileBytes < ZLOG_HEADER_BYTES) return undefined;
  const h = Buffer.alloc(32);
  readFullySync(fd, h, 0, h.length, SEGMENT_HEADER_BYTES);
  if (u32(h, 0) !== MAGIC || h.readUInt16LE(4) !== VERSION || crc32c(h, 0, 28) !== u32(h, 28)) return undefined;
  const logicalBytes = u32(h, 8);
  const n = u32(h, 12);
  const tableOffset = u32(h, 16);
  if (n < 1 || tableOffset < ZLOG_HEADER_BYTES || tableOffset + 8 * n + 4 !== fileBytes) return undefined;
  const t = Buffer.alloc(8 * n + 4);
  readFullySync(fd, t, 0, t.length, tableOffset);
  if (crc32c(t, 0, 8 * n) !== u32(t, 8 * n)) return undefined;
  const logicalStarts = new Uint32Array(n + 1);
  const fileOffsets = new Uint32Array(n + 1);
  for (let k = 0; k < n; k++) {
    logicalStarts[k] = u32(t, 8 * k);
    fileOffsets[k] = u32(t, 8 * k + 4);
  }
  logicalStarts[n] = logicalBytes;
  fileOffsets[n] = tableOffset;
  for (let k = 0; k < n; k++) {
    if (logicalStarts[k + 1] <= logicalStarts[k] || fileOffsets[k + 1] < fileOffsets[k] + CHUNK_HEAD_BYTES) return undefined;
  }
  if (logicalStarts[0] !== SEGMENT_HEADER_BYTES || fileOffsets[0] !== ZLOG_HEADER_BYTES) return undefined;
  return { logicalBytes, fileBytes, logicalStarts, fileOffsets };
}

/** Logical bytes [pos, pos + len) of a zlog into out[at..]; pos is past the segment header. */
export async function readLogical(io: FileIo, fd: number, t: ChunkTable, out: Buffer, at: number, len: number, pos: number): Promise<void> {
  if (len <= 0) return;
  const [first, last] = chunkSpan(t, pos, len);
  const start = t.fileOffsets[first];
  const raw = Buffer.allocUnsafe(t.fileOffsets[last + 1] - start);
  await readFully(io, fd, raw, 0, raw.length, start);
  copyChunks(t, raw, first, last, out, at, len, pos);
}

export function readLogicalSync(fd: number, t: ChunkTable, out: Buffer, at: number, len: number, pos: number): void {
  if (len <= 0) return;
  const { first, last, raw } = readChunksSync(fd, t, pos, len);
  copyChunks(t, raw, first, last, out, at, len, pos);
}

/** The chunks holding logical bytes [pos, pos + len) (len > 0), heads and stored bytes, in one read from the first's head. */
function readChunksSync(fd: number, t: ChunkTable, pos: number, len: number): { first: number; last: number; raw: Buffer } {
  const [first, last] = chunkSpan(t, pos, len);
  const start = t.fileOffsets[first];
  const raw = Buffer.allocUnsafe(t.fileOffsets[last + 1] - start);
  readFullySync(fd, raw, 0, raw.length, start);
  return { first, last, raw };
}

function chunkSpan(t: ChunkTable, pos: number, len: number): [number, number] {
  assert(pos >= SEGMENT_HEADER_BYTES && pos + len <= t.logicalBytes, 'a zlog read lies inside its logical bytes');
  return [chunkIndexOf(t, pos), chunkIndexOf(t, pos + len - 1)];
}

/** The chunk holding logical offset `pos`: the last whose start is <= pos. */
function chunkIndexOf(t: ChunkTable, pos: number): number {
  let lo = 0;
  let hi = t.logicalStarts.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (t.logicalStarts[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function copyChunks(t: ChunkTable, raw: Buffer, first: number, last: number, out: Buffer, at: number, len: number, pos: number): void {
  const base = t.fileOffsets[first];
  for (let k = first; k <= last; k++) {
    const logical = chunkBytes(t, raw, k, t.fileOffsets[k] - base);
    const from = Math.max(pos, t.logicalStarts[k]);
    const to = Math.min(pos + len, t.logicalStarts[k + 1]);
    if (logical === undefined) out.fill(0, at + from - pos, at + to - pos);
    else logical.copy(out, at + from - pos, from - t.logicalStarts[k], to - t.logicalStarts[k]);
  }
}

/** The stored bytes of chunk k (its head at raw[off]) once its head and CRC check, else undefined. */
function storedChunk(t: ChunkTable, raw: Buffer, k: number, off: number): Buffer | undefined {
  const storedEnd = t.fileOffsets[k + 1] - t.fileOffsets[k] + off;
  if (u32(raw, off) !== t.logicalStarts[k] || u32(raw, off + 4) !== t.logicalStarts[k + 1] - t.logicalStarts[k]) return undefined;
  if (off + CHUNK_HEAD_BYTES + u32(raw, off + 8) !== storedEnd || chunkCrc(raw, off, storedEnd) !== u32(raw, off + 20)) return undefined;
  return raw.subarray(off + CHUNK_HEAD_BYTES, storedEnd);
}

/**
 * What chunkBytes decodes into. Its callers copy or check the logical bytes before the next call: a new
 * Buffer of a few KiB per chunk read was external memory that V8 collects only with a full collection.
 * It grows to the largest chunk compaction codes; a larger one (only a damaged or foreign file says so)
 * gets a Buffer of its own.
 */
let decodeScratch = Buffer.alloc(0);

function decodeInto(bytes: number): Buffer | undefined {
  if (bytes > CHUNK_CODEC_BYTES_MAX) return undefined;
  if (decodeScratch.length < bytes) decodeScratch = Buffer.allocUnsafe(Math.min(CHUNK_CODEC_BYTES_MAX, Math.max(bytes, 2 * decodeScratch.length)));
  return decodeScratch;
}

/**
 * Logical bytes of chunk k (its head at raw[off]), checked at both ends; undefined when any check fails.
 * Valid until the next call: a decoded chunk lies in a buffer the next one reuses.
 */
export function chunkBytes(t: ChunkTable, raw: Buffer, k: number, off: number): Buffer | undefined {
  const stored = storedChunk(t, raw, k, off);
  if (stored === undefined) return undefined;
  const logicalBytes = t.logicalStarts[k + 1] - t.logicalStarts[k];
  let logical: Buffer;
  try {
    if (raw[off + 12] === CHUNK_STORED) logical = stored;
    else if (raw[off + 12] === CHUNK_CODEC) logical = decodeChunk(stored, logicalBytes, decodeInto(logicalBytes));
    else return undefined;
  } catch {
    return undefined;
  }
  return logical.length === logicalBytes && crc32c(logical, 0, logical.length) === u32(raw, off + 16) ? logical : undefined;
}

/**
 * The frames and the values of stored columns `columns` of the chunks holding logical bytes [pos, pos + len),
 * handed to `sink` chunk by chunk, each read by readChunkColumns once its stored bytes check. False when a
 * chunk cannot be read so (it failed a check, is stored as it is, or holds what only the full decode
 * reads): the caller then reads the logical bytes, which reports what is lost. `sink` may have had some
 * frames by then.
 */
export function readColumnsSync(fd: number, t: ChunkTable, pos: number, len: number, columns: readonly number[], sink: ChunkFrameSink): boolean {
  if (len <= 0) return true;
  const { first, last, raw } = readChunksSync(fd, t, pos, len);
  for (let k = first; k <= last; k++) {
    const off = t.fileOffsets[k] - t.fileOffsets[first];
    const stored = raw[off + 12] === CHUNK_CODEC ? storedChunk(t, raw, k, off) : undefined;
    if (stored === undefined) return false;
    try {
      readChunkColumns(stored, t.logicalStarts[k + 1] - t.logicalStarts[k], columns, sink);
    } catch {
      return false;
    }
  }
  return true;
}
