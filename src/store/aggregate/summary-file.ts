/**
 * `seg-N.sum`: a sealed segment's summary (summaries.ts), beside its `.idx`. Written with tmp + rename,
 * sealed by a CRC-32C over everything before it. It names the segment it describes (number, first id,
 * last id covered, file size, CRC of the last frame); one that does not match, or fails its CRC, is
 * ignored and rebuilt from the segment. Layout (little-endian):
 *
 *   0 magic "SSUM" u32 · 4 version u16 · 6 block records u16 · 8 segNo u32 · 12 field count u32
 *  16 blocks u32 · 20 lastFrameCrc u32 · 24 firstId f64 · 32 coveredTo f64 · 40 dataEnd f64 · 48 tsMin f64
 *  56 bool flags, one byte per field, padded to 8 · then f64 arrays: minTs, maxTs, records (one per block),
 *  per field 6 per block · (version 2) then per block the i32 checksum of its bytes and the u32 bytes it
 *  covers, 0 for none (block-checksum.ts) · then u32 length + msgpack of the non-numeric first/last values
 *  [[field, key, value], ...] · then the CRC u32.
 *
 * A file of version 1 (no checksums) is still read; the summary pass then takes the checksums and the file
 * is written again as version 2.
 */
import { Packr, Unpackr } from 'msgpackr';
import { crc32c } from '../format/crc32c.js';
import { u32 } from '../format/frame.js';
import type { Segment } from '../segment/segment.js';
import { STATS_PER_FIELD } from './stats-table.js';
import { SUMMARY_BLOCK_RECORDS, SegmentSummary } from './segment-summary.js';

const MAGIC = 0x4d555353; // "SSUM"
const VERSION = 2;
const VERSION_WITHOUT_CHECKSUMS = 1;
const HEAD = 56;
const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

export function summaryName(segNo: number): string {
  return `seg-${String(segNo).padStart(10, '0')}.sum`;
}

export function parseSummaryName(name: string): number | undefined {
  const m = /^seg-(\d{10})\.sum$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

export function encodeSummary(s: SegmentSummary, seg: Segment): Buffer {
  const fields = s.table.fieldCount;
  const flagsBytes = Math.ceil(fields / 8) * 8;
  const arraysBytes = 8 * s.blocks * (3 + STATS_PER_FIELD * fields) + 8 * s.blocks;
  const others: Array<[number, number, unknown]> = [];
  s.table.forEachOther((f, key, v) => {
    if (key < 2 * s.blocks) others.push([f, key, v]);
  });
  const packed = packr.pack(others);
  const b = Buffer.alloc(HEAD + flagsBytes + arraysBytes + 4 + packed.length + 4);
  b.writeUInt32LE(MAGIC, 0);
  b.writeUInt16LE(VERSION, 4);
  b.writeUInt16LE(SUMMARY_BLOCK_RECORDS, 6);
  b.writeUInt32LE(seg.segNo, 8);
  b.writeUInt32LE(fields, 12);
  b.writeUInt32LE(s.blocks, 16);
  b.writeUInt32LE(seg.lastFrameCrc, 20);
  b.writeDoubleLE(s.firstId, 24);
  b.writeDoubleLE(s.coveredTo, 32);
  b.writeDoubleLE(seg.bytes, 40);
  b.writeDoubleLE(s.tsMin, 48);
  for (let f = 0; f < fields; f++) b[HEAD + f] = s.table.bools[f] ? 1 : 0;
  let at = HEAD + flagsBytes;
  const put = (a: Float64Array | Int32Array | Uint32Array, n: number): void => {
    const bytes = n * a.BYTES_PER_ELEMENT;
    b.set(new Uint8Array(a.buffer, a.byteOffset, bytes), at);
    at += bytes;
  };
  put(s.minTs, s.blocks);
  put(s.maxTs, s.blocks);
  put(s.records, s.blocks);
  for (const st of s.table.stats) put(st, s.blocks * STATS_PER_FIELD);
  put(s.blockCrc, s.blocks);
  put(s.blockBytes, s.blocks);
  b.writeUInt32LE(packed.length, at);
  packed.copy(b, at + 4);
  at += 4 + packed.length;
  b.writeUInt32LE(crc32c(b, 0, at), at);
  return b;
}

/** The summary in `b` when it is intact and describes `seg` covered up to `end`; else undefined. */
export function decodeSummary(b: Buffer, seg: Segment, end: number, fieldCount: number): SegmentSummary | undefined {
  if (b.length < HEAD + 8 || u32(b, 0) !== MAGIC || b.readUInt16LE(6) !== SUMMARY_BLOCK_RECORDS) return undefined;
  const version = b.readUInt16LE(4);
  if (version !== VERSION && version !== VERSION_WITHOUT_CHECKSUMS) return undefined;
  if (crc32c(b, 0, b.length - 4) !== u32(b, b.length - 4)) return undefined;
  const fields = u32(b, 12);
  const blocks = u32(b, 16);
  if (u32(b, 8) !== seg.segNo || fields !== fieldCount || u32(b, 20) !== seg.lastFrameCrc) return undefined;
  if (b.readDoubleLE(24) !== seg.firstId || b.readDoubleLE(32) !== end || b.readDoubleLE(40) !== seg.bytes) return undefined;
  const flagsBytes = Math.ceil(fields / 8) * 8;
  const arraysBytes = 8 * blocks * (3 + STATS_PER_FIELD * fields) + (version === VERSION ? 8 * blocks : 0);
  let at = HEAD + flagsBytes;
  if (at + arraysBytes + 8 > b.length) return undefined;
  const s = new SegmentSummary(seg.firstId, fields, Math.max(blocks, 1));
  s.blocks = blocks;
  s.coveredTo = end;
  s.tsMin = b.readDoubleLE(48);
  for (let f = 0; f < fields; f++) s.table.bools[f] = b[HEAD + f] === 1;
  const take = (a: Float64Array | Int32Array | Uint32Array, n: number): void => {
    const bytes = n * a.BYTES_PER_ELEMENT;
    new Uint8Array(a.buffer, a.byteOffset, bytes).set(b.subarray(at, at + bytes));
    at += bytes;
  };
  take(s.minTs, blocks);
  take(s.maxTs, blocks);
  take(s.records, blocks);
  for (const st of s.table.stats) take(st, blocks * STATS_PER_FIELD);
  if (version === VERSION) {
    take(s.blockCrc, blocks);
    take(s.blockBytes, blocks);
    s.checkedBlocks = blocks;
  }
  const len = u32(b, at);
  if (at + 4 + len + 4 !== b.length) return undefined;
  const others = unpackr.unpack(b.subarray(at + 4, at + 4 + len)) as Array<[number, number, unknown]>;
  for (const [f, key, v] of others) {
    if (!Number.isInteger(f) || f < 0 || f >= fields || !Number.isInteger(key) || key < 0 || key >= 2 * blocks) return undefined;
    s.table.setOther(f, key, v);
  }
  return s;
}
