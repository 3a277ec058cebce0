/**
 * `seg-<segNo>.idx`: the offset index of a segment, written once when the segment is sealed (stride 64)
 * and, for the active segment, at clean close (stride 1, dense). Written with tmp + fsync + rename and
 * sealed by a CRC over everything before it, so a half-written or stale file is detected and rebuilt.
 */
import fs from 'node:fs';
import { crc32c } from '../format/crc32c.js';
import { u32 } from '../format/frame.js';
import { DENSE_INITIAL, indexName, type Segment } from './segment.js';
import type { FileIo } from '../base/file-io.js';
import { SPARSE_STRIDE } from '../base/constants.js';

const MAGIC = 0x58444953; // "SIDX"
const VERSION = 1;
const HEAD = 72;

export interface IndexFile {
  stride: number;
  segNo: number;
  firstId: number;
  lastId: number;
  /** Size of the segment file the index describes; a different size means it is stale. */
  dataEnd: number;
  minTs: number;
  maxTs: number;
  lastFrameOffset: number;
  lastFrameCrc: number;
  entries: Uint32Array;
}

export function encodeIndex(ix: IndexFile): Buffer {
  const n = ix.entries.length;
  const b = Buffer.alloc(HEAD + 4 * n + 4);
  b.writeUInt32LE(MAGIC, 0);
  b.writeUInt16LE(VERSION, 4);
  b.writeUInt16LE(ix.stride, 6);
  b.writeUInt32LE(ix.segNo, 8);
  b.writeUInt32LE(n, 12);
  b.writeDoubleLE(ix.firstId, 16);
  b.writeDoubleLE(ix.lastId, 24);
  b.writeDoubleLE(ix.dataEnd, 32);
  b.writeDoubleLE(ix.minTs, 40);
  b.writeDoubleLE(ix.maxTs, 48);
  b.writeDoubleLE(ix.lastFrameOffset, 56);
  b.writeUInt32LE(ix.lastFrameCrc, 64);
  for (let i = 0; i < n; i++) b.writeUInt32LE(ix.entries[i], HEAD + 4 * i);
  b.writeUInt32LE(crc32c(b, 0, HEAD + 4 * n), HEAD + 4 * n);
  return b;
}

export function decodeIndex(b: Buffer): IndexFile | undefined {
  if (b.length < HEAD + 4 || u32(b, 0) !== MAGIC || b.readUInt16LE(4) !== VERSION) return undefined;
  const n = u32(b, 12);
  if (b.length !== HEAD + 4 * n + 4 || crc32c(b, 0, HEAD + 4 * n) !== u32(b, HEAD + 4 * n)) return undefined;
  const entries = new Uint32Array(n);
  for (let i = 0; i < n; i++) entries[i] = u32(b, HEAD + 4 * i);
  return {
    stride: b.readUInt16LE(6),
    segNo: u32(b, 8),
    firstId: b.readDoubleLE(16),
    lastId: b.readDoubleLE(24),
    dataEnd: b.readDoubleLE(32),
    minTs: b.readDoubleLE(40),
    maxTs: b.readDoubleLE(48),
    lastFrameOffset: b.readDoubleLE(56),
    lastFrameCrc: u32(b, 64),
    entries,
  };
}

export function readIndexSync(dir: string, segNo: number): IndexFile | undefined {
  try {
    return decodeIndex(fs.readFileSync(`${dir}/${indexName(segNo)}`));
  } catch {
    return undefined;
  }
}

/** The index of a segment as it is in memory (sealed: sparse, active: dense). */
export function indexOf(seg: Segment): IndexFile {
  const entries = seg.sparse ?? (seg.dense as Uint32Array).slice(0, seg.count);
  return {
    stride: seg.sparse ? SPARSE_STRIDE : 1,
    segNo: seg.segNo,
    firstId: seg.firstId,
    lastId: seg.lastId,
    dataEnd: seg.bytes,
    minTs: seg.minTs,
    maxTs: seg.maxTs,
    lastFrameOffset: seg.lastFrameOffset,
    lastFrameCrc: seg.lastFrameCrc,
    entries,
  };
}

export function writeIndex(io: FileIo, dir: string, seg: Segment): Promise<void> {
  return io.replaceFile(`${dir}/${indexName(seg.segNo)}`, encodeIndex(indexOf(seg)));
}

/** Whether a loaded index describes this segment (a file of `fileBytes` bytes). */
export function indexFits(seg: Segment, ix: IndexFile, fileBytes: number): boolean {
  const count = ix.lastId - ix.firstId + 1;
  const expected = ix.stride === 1 ? count : Math.ceil(count / SPARSE_STRIDE);
  if (ix.segNo !== seg.segNo || ix.firstId !== seg.firstId || ix.dataEnd !== fileBytes) return false;
  return (ix.stride === 1 || ix.stride === SPARSE_STRIDE) && ix.entries.length === expected && count >= 0;
}

/** Adopts a loaded index into a segment object; false (segment untouched) when it does not describe it. */
export function applyIndex(seg: Segment, ix: IndexFile, fileBytes: number): boolean {
  if (!indexFits(seg, ix, fileBytes)) return false;
  const count = ix.lastId - ix.firstId + 1;
  seg.lastId = ix.lastId;
  seg.bytes = seg.writtenBytes = seg.syncedBytes = fileBytes;
  seg.minTs = ix.minTs;
  seg.maxTs = ix.maxTs;
  seg.lastFrameOffset = ix.lastFrameOffset;
  seg.lastFrameCrc = ix.lastFrameCrc;
  if (ix.stride === 1) {
    const d = new Uint32Array(Math.max(DENSE_INITIAL, 2 ** Math.ceil(Math.log2(count + 1))));
    d.set(ix.entries);
    seg.dense = d;
    seg.sparse = undefined;
  } else {
    seg.sparse = ix.entries;
    seg.dense = undefined;
  }
  return true;
}
