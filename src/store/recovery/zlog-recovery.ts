/**
 * Compacted segments at open (recovery.ts). A crash between a `.zlog`'s rename and the unlink of its
 * `.log` leaves both: the `.zlog` was complete before its name appeared, so it wins when it checks. A
 * `.zlog` that cannot serve as a sealed segment (it became the active one because the segment after it
 * was dropped, its index is missing or does not fit, its header or table is damaged) is turned back into
 * its `.log`: every chunk that checks is decoded in place, a damaged one leaves zeros that the scan
 * reports as lost ids, and the recovery of a `.log` takes over from there.
 */
import fs from 'node:fs';
import { SEGMENT_HEADER_BYTES, Segment, decodeSegmentHeader, segmentName } from '../segment/segment.js';
import { applyIndex, readIndexSync } from '../segment/index-file.js';
import { fsyncDirSync, writeFileAtomicSync } from '../base/file-io.js';
import { u32 } from '../format/frame.js';
import { CHUNK_HEAD_BYTES, type ChunkTable, ZLOG_HEADER_BYTES, chunkBytes, compactedName, parseCompactedName, readChunkTableSync } from '../format/zlog.js';
import type { SealedFdCache } from '../base/sealed-fds.js';
import { SEGMENT_BYTES_MAX_LIMIT } from '../base/constants.js';

/** The segment numbers that have a `.zlog`, after removing the `.log` beside each one that checks. */
export function settleCompacted(dir: string, names: readonly string[]): Set<number> {
  const logs = new Set(names.filter((n) => n.endsWith('.log')));
  const compacted = new Set<number>();
  for (const n of names) {
    const segNo = parseCompactedName(n);
    if (segNo === undefined) continue;
    if (!logs.has(segmentName(segNo))) compacted.add(segNo);
    else if (tableOf(`${dir}/${n}`) !== undefined) {
      fs.rmSync(`${dir}/${segmentName(segNo)}`, { force: true });
      compacted.add(segNo);
    } else fs.rmSync(`${dir}/${n}`, { force: true });
  }
  if (compacted.size > 0) fsyncDirSync(dir);
  return compacted;
}

/** A sealed segment served from its `.zlog`, or undefined when it must be inflated (see above). */
export function openCompactedSync(dir: string, segNo: number, sealedFds: SealedFdCache): Segment | undefined {
  const file = `${dir}/${compactedName(segNo)}`;
  const fd = fs.openSync(file, 'r');
  try {
    const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
    fs.readSync(fd, header, 0, SEGMENT_HEADER_BYTES, 0);
    const h = decodeSegmentHeader(header);
    const table = readChunkTableSync(fd, fs.fstatSync(fd).size);
    if (h?.segNo !== segNo || table === undefined) return undefined;
    const seg = new Segment(segNo, h.firstId, h.createdMs);
    const ix = readIndexSync(dir, segNo);
    if (!ix || ix.stride === 1 || !applyIndex(seg, ix, table.logicalBytes)) return undefined;
    seg.sealedOnDisk = true;
    seg.file.seal(file, sealedFds, table);
    return seg;
  } finally {
    fs.closeSync(fd);
  }
}

/** Turns `seg-<segNo>.zlog` back into `seg-<segNo>.log` (written atomically), then removes the `.zlog`. */
export function inflateSync(dir: string, segNo: number): void {
  const file = `${dir}/${compactedName(segNo)}`;
  const raw = fs.readFileSync(file);
  const table = tableOf(file) ?? walkChunkHeads(raw);
  const out = Buffer.alloc(Math.max(SEGMENT_HEADER_BYTES, table.logicalBytes));
  raw.copy(out, 0, 0, Math.min(raw.length, SEGMENT_HEADER_BYTES));
  for (let k = 0; k < table.logicalStarts.length - 1; k++) chunkBytes(table, raw, k, table.fileOffsets[k])?.copy(out, table.logicalStarts[k]);
  writeFileAtomicSync(dir, segmentName(segNo), out);
  fs.rmSync(file, { force: true });
  fsyncDirSync(dir);
}

function tableOf(file: string): ChunkTable | undefined {
  const fd = fs.openSync(file, 'r');
  try {
    return readChunkTableSync(fd, fs.fstatSync(fd).size);
  } finally {
    fs.closeSync(fd);
  }
}

/** The chunks a damaged table no longer lists, found by walking their heads up to the first that fails. */
function walkChunkHeads(raw: Buffer): ChunkTable {
  const starts: number[] = [];
  const offsets: number[] = [];
  let logicalEnd = SEGMENT_HEADER_BYTES;
  let at = ZLOG_HEADER_BYTES;
  while (at + CHUNK_HEAD_BYTES <= raw.length) {
    const start = u32(raw, at);
    const logicalBytes = u32(raw, at + 4);
    const next = at + CHUNK_HEAD_BYTES + u32(raw, at + 8);
    if (start !== logicalEnd || logicalBytes === 0 || start + logicalBytes > SEGMENT_BYTES_MAX_LIMIT || next > raw.length) break;
    const probe = { logicalBytes: start + logicalBytes, fileBytes: raw.length, logicalStarts: Uint32Array.of(start, start + logicalBytes), fileOffsets: Uint32Array.of(at, next) };
    if (chunkBytes(probe, raw, 0, at) === undefined) break;
    starts.push(start);
    offsets.push(at);
    logicalEnd = start + logicalBytes;
    at = next;
  }
  starts.push(logicalEnd);
  offsets.push(at);
  return { logicalBytes: logicalEnd, fileBytes: raw.length, logicalStarts: Uint32Array.from(starts), fileOffsets: Uint32Array.from(offsets) };
}
