/**
 * Checksums of summary blocks. An aggregation reads the block across each bucket edge, and checking the
 * CRC-32C of its 64 frames one by one in JavaScript was a fifth to a third of a new interval (about 10 µs
 * a block on the slow machine of docs/performance.md). So when a block is complete, the summary pass
 * checks its frames once, as every read does, and keeps one CRC-32 of the block's bytes (zlib's, native:
 * about 1.5 µs for a block's 4-5 KiB). An edge read whose bytes match that checksum holds exactly the
 * bytes whose frames were checked, so it walks them without their CRCs; bytes that do not match, or a
 * block without a checksum, are checked frame by frame as before, which reports what is lost.
 *
 * The checksum is of content, not of a place: whichever ids a later read asks for, equal bytes are the
 * bytes that were checked. A block is complete when no frame can still join it: all its ids are folded
 * and below the newest record (update-last writes a frame only for the newest), or its segment has a
 * successor and the summary covers all of it.
 */
import zlib from 'node:zlib';
import { wholeValidFrames } from '../format/frame.js';
import { SyncBytesReader, type BufferedBytes } from '../read/reader.js';
import type { Segment } from '../segment/segment.js';
import { SUMMARY_BLOCK_RECORDS, type SegmentSummary } from './segment-summary.js';

/** Blocks checksummed between turns of the event loop (each is a synchronous read of a few KiB). */
const BLOCKS_PER_TURN = 256;

export function blockChecksum(bytes: Uint8Array): number {
  return zlib.crc32(bytes) | 0;
}

/** Whether `bytes` (a read of block k) are the bytes the summary's checksum of block k was taken of. */
export function blockIntact(s: SegmentSummary, k: number, bytes: Uint8Array): boolean {
  return k < s.checkedBlocks && s.blockBytes[k] === bytes.length && s.blockBytes[k] > 0 && blockChecksum(bytes) === s.blockCrc[k];
}

/**
 * Takes the checksum of each block of `s` from `s.checkedBlocks` on that is complete (every block when
 * `whole`: the segment has a successor and `s` covers it to its end; else the blocks whose ids are all
 * folded) and has none yet: the fold takes it from its own read of a block it reads whole
 * (summary-fold.ts). Returns the number of blocks it went through.
 */
export async function checksumBlocks(buffered: BufferedBytes, seg: Segment, s: SegmentSummary, whole: boolean): Promise<number> {
  const complete = whole ? s.blocks : Math.floor((s.coveredTo - s.firstId + 1) / SUMMARY_BLOCK_RECORDS);
  const from = s.checkedBlocks;
  const reader = new SyncBytesReader(buffered);
  for (let k = from; k < complete; k++) {
    if ((k - from) % BLOCKS_PER_TURN === BLOCKS_PER_TURN - 1) await new Promise((resolve) => setImmediate(resolve));
    if (s.blockBytes[k] > 0 || s.records[k] === 0) continue;
    const [start, end] = seg.byteRange(s.blockFirstId(k), s.blockLastId(k));
    const bytes = reader.read(seg, start, end);
    if (!wholeValidFrames(bytes)) continue;
    s.blockCrc[k] = blockChecksum(bytes);
    s.blockBytes[k] = bytes.length;
  }
  s.checkedBlocks = Math.max(from, complete);
  return Math.max(0, complete - from);
}
