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
import fs from 'node:fs';
import { crc32c } from './crc32c.js';
import { u32 } from './frame.js';
import { decodeChunk } from './chunk-codec.js';
import { type FileIo, readFully } from './file-io.js';
import { SEGMENT_HEADER_BYTES, assert } from './constants.js';

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

/** The whole file for `segmentHeader` and its chunks, in logical order, covering [32, logicalBytes). */
export function buildZlog(segmentHeader: Buffer, chunks: readonly StoredChunk[], logicalBytes: number): { data: Buffer; table: ChunkTable } {
  assert(segmentHeader.length === SEGMENT_HEADER_BYTES && chunks.length > 0, 'a zlog holds a segment header and chunks');
  const n = chunks.length;
  const logicalStarts = new Uint32Array(n + 1);
  const fileOffsets = new Uint32Array(n + 1);
  let at = ZLOG_HEADER_BYTES;
  let expect = SEGMENT_HEADER_BYTES;
  for (let k = 0; k < n; k++) {
    const c = chunks[k];
    assert(c.logicalStart === expect && c.logicalBytes > 0, 'chunks cover the logical bytes in order');
    logicalStarts[k] = c.logicalStart;
    fileOffsets[k] = at;
    at += CHUNK_HEAD_BYTES + c.stored.length;
    expect += c.logicalBytes;
  }
  assert(expect === logicalBytes, 'chunks end at the logical end');
  logicalStarts[n] = logicalBytes;
  fileOffsets[n] = at;
  const tableBytes = 8 * n + 4;
  const data = Buffer.alloc(at + tableBytes);
  segmentHeader.copy(data, 0);
  data.writeUInt32LE(MAGIC, 32);
  data.writeUInt16LE(VERSION, 36);
  data.writeUInt32LE(logicalBytes, 40);
  data.writeUInt32LE(n, 44);
  data.writeUInt32LE(at, 48);
  data.writeUInt32LE(crc32c(data, 32, 60), 60);
  for (let k = 0; k < n; k++) writeChunk(data, fileOffsets[k], chunks[k]);
  for (let k = 0; k < n; k++) {
    data.writeUInt32LE(logicalStarts[k], at + 8 * k);
    data.writeUInt32LE(fileOffsets[k], at + 8 * k + 4);
  }
  data.writeUInt32LE(crc32c(data, at, at + 8 * n), at + 8 * n);
  return { data, table: { logicalBytes, fileBytes: data.length, logicalStarts, fileOffsets } };
}

function writeChunk(data: Buffer, at: number, c: StoredChunk): void {
  data.writeUInt32LE(c.logicalStart, at);
  data.writeUInt32LE(c.logicalBytes, at + 4);
  data.writeUInt32LE(c.stored.length, at + 8);
  data[at + 12] = c.mode;
  data.writeUInt32LE(c.logicalCrc, at + 16);
  c.stored.copy(data, at + CHUNK_HEAD_BYTES);
  data.writeUInt32LE(chunkCrc(data, at, at + CHUNK_HEAD_BYTES + c.stored.length), at + 20);
}

function chunkCrc(b: Uint8Array, at: number, end: number): number {
  return crc32c(b, at + CHUNK_HEAD_BYTES, end, crc32c(b, at, at + 20));
}

/** The chunk table of an open zlog, read from its header and table; undefined when either fails its check. */
export function readChunkTableSync(fd: number, fileBytes: number): ChunkTable | undefined {
  if (fileBytes < ZLOG_HEADER_BYTES) return undefined;
  const h = Buffer.alloc(32);
  readAllSync(fd, h, SEGMENT_HEADER_BYTES);
  if (u32(h, 0) !== MAGIC || h.readUInt16LE(4) !== VERSION || crc32c(h, 0, 28) !== u32(h, 28)) return undefined;
  const logicalBytes = u32(h, 8);
  const n = u32(h, 12);
  const tableOffset = u32(h, 16);
  if (n < 1 || tableOffset < ZLOG_HEADER_BYTES || tableOffset + 8 * n + 4 !== fileBytes) return undefined;
  const t = Buffer.alloc(8 * n + 4);
  readAllSync(fd, t, tableOffset);
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
  const [first, last] = chunkSpan(t, pos, len);
  const start = t.fileOffsets[first];
  const raw = Buffer.allocUnsafe(t.fileOffsets[last + 1] - start);
  readAllSync(fd, raw, start);
  copyChunks(t, raw, first, last, out, at, len, pos);
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

/** Logical bytes of chunk k (its head at raw[off]), checked at both ends; undefined when any check fails. */
export function chunkBytes(t: ChunkTable, raw: Buffer, k: number, off: number): Buffer | undefined {
  const storedEnd = t.fileOffsets[k + 1] - t.fileOffsets[k] + off;
  const logicalStart = t.logicalStarts[k];
  const logicalBytes = t.logicalStarts[k + 1] - logicalStart;
  if (u32(raw, off) !== logicalStart || u32(raw, off + 4) !== logicalBytes) return undefined;
  if (off + CHUNK_HEAD_BYTES + u32(raw, off + 8) !== storedEnd || chunkCrc(raw, off, storedEnd) !== u32(raw, off + 20)) return undefined;
  const stored = raw.subarray(off + CHUNK_HEAD_BYTES, storedEnd);
  let logical: Buffer;
  try {
    if (raw[off + 12] === CHUNK_STORED) logical = stored;
    else if (raw[off + 12] === CHUNK_CODEC) logical = decodeChunk(stored, logicalBytes);
    else return undefined;
  } catch {
    return undefined;
  }
  return logical.length === logicalBytes && crc32c(logical, 0, logical.length) === u32(raw, off + 16) ? logical : undefined;
}

function readAllSync(fd: number, buf: Buffer, pos: number): void {
  for (let done = 0; done < buf.length; ) {
    const n = fs.readSync(fd, buf, done, buf.length - done, pos + done);
    if (n <= 0) throw Object.assign(new Error(`short read at ${pos + done}`), { code: 'EIO' });
    done += n;
  }
}
