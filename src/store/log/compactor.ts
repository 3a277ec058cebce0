/**
 * Compaction: each sealed segment is rewritten as a `.zlog` (zlog.ts) holding the same logical bytes in
 * compressed chunks, then swapped in for its `.log` (SegmentFile.compacted) and the `.log` unlinked.
 * The `.zlog` is written as `.zlog.tmp`, fdatasync'ed, renamed and its directory fsync'ed before the
 * `.log` goes, so a crash leaves the `.log` (and a `.tmp` that the next open removes), or both (recovery
 * then keeps the `.zlog`). Runs on the main thread one segment at a time, in slices of at most SLICE_MS
 * with pauses between them (PAUSE_PER_SLICE_MS), and gives a segment up as soon as it is no longer listed
 * by the open generation (retention, clear, close, restore).
 */
import fs from 'node:fs';
import { crc32c } from '../format/crc32c.js';
import { type Segment, SEGMENT_HEADER_BYTES, decodeSegmentHeader, segmentName } from '../segment/segment.js';
import { CHUNK_CODEC, CHUNK_HEAD_BYTES, CHUNK_STORED, ChunkTableBuilder, type ChunkTable, type StoredChunk, ZLOG_HEADER_BYTES, compactedName, encodeZlogHeader } from '../format/zlog.js';
import { decodeChunk, encodeChunk } from '../format/chunk-codec.js';
import { type FileIo, writeFully } from '../base/file-io.js';
import type { SegmentFile } from '../segment/segment-file.js';
import { CHUNK_CODEC_BYTES_MAX, MIB, assert } from '../base/constants.js';

/**
 * The newest sealed segments stay as written, with the active one: recent data is what pages, dashboards
 * and new aggregation intervals read most (a compacted block costs a chunk decode, ~40 µs, instead of a
 * pread), and the segment before the active one is the one that becomes active again when a crash
 * during a roll drops its successor.
 */
export const NEWEST_SEALED_KEPT = 1;
/** Logical bytes read from the `.log` per read. */
const READ_BYTES_MAX = 1 * MIB;
/**
 * Work between two turns of the event loop, so reads and writes keep their latency: a request that comes
 * during a slice waits for its end. 2 ms slices put p99 of queryLastData at 5.8-7.1 ms while a segment of
 * the HTTP bench was compacted under 10k writes/s; 0.5 ms slices at 4.5-5.8 ms (docs/performance.md).
 */
const SLICE_MS = 0.5;
/**
 * Share of the main thread compaction takes at most: after a slice it waits four times as long. About
 * 100k records/s are compacted that way, ten times a busy gateway's rate; a faster producer only leaves
 * more segments waiting, as written.
 */
const PAUSE_PER_SLICE_MS = 4 * SLICE_MS;

export interface CompactionTarget {
  io: FileIo;
  dir: string;
  /** The segment is still listed by the open generation it was queued from. */
  listed: (seg: Segment) => boolean;
  warn: (message: string) => void;
}

export class Compactor {
  private readonly queue: Array<{ seg: Segment; target: CompactionTarget }> = [];
  private readonly queued = new Set<Segment>();
  private running: Promise<void> | undefined;

  /**
   * Queues the sealed segments of `segments` that are not compacted yet, except the newest sealed one (see
   * NEWEST_SEALED_KEPT); they are compacted in order.
   */
  schedule(segments: readonly Segment[], target: CompactionTarget): void {
    for (const seg of segments.slice(0, -1 - NEWEST_SEALED_KEPT)) {
      if (!seg.sealedOnDisk || seg.file.isCompacted || this.queued.has(seg)) continue;
      this.queued.add(seg);
      this.queue.push({ seg, target });
    }
    this.kick();
  }

  /** Resolves when the segment in work is done or given up (callers first make `listed` false). */
  async ended(): Promise<void> {
    while (this.running !== undefined) await this.running;
  }

  private kick(): void {
    if (this.running !== undefined || this.queue.length === 0) return;
    this.running = this.drain().finally(() => {
      this.running = undefined;
      this.kick();
    });
  }

  private async drain(): Promise<void> {
    for (let next = this.queue.shift(); next !== undefined; next = this.queue.shift()) {
      this.queued.delete(next.seg);
      try {
        await compactSegment(next.seg, next.target);
      } catch (e) {
        if (next.target.listed(next.seg)) next.target.warn(`compaction of ${segmentName(next.seg.segNo)} failed (kept as it is): ${e instanceof Error ? e.message : String(e)}`);
      }
    }
  }
}

/** Rewrites one sealed segment as a `.zlog` and swaps it in; leaves it as it is when it stops being listed. */
export async function compactSegment(seg: Segment, t: CompactionTarget): Promise<void> {
  const file = seg.file;
  if (!t.listed(seg) || file.isCompacted || seg.count === 0) return;
  file.retain();
  try {
    const header = Buffer.alloc(SEGMENT_HEADER_BYTES);
    await file.read(t.io, header, 0, SEGMENT_HEADER_BYTES, 0);
    const h = decodeSegmentHeader(header);
    if (h?.segNo !== seg.segNo || h.firstId !== seg.firstId) return;
    const zlog = `${t.dir}/${compactedName(seg.segNo)}`;
    const table = await writeZlog(seg, file, header, `${zlog}.tmp`, t).catch(async (e: unknown) => {
      await t.io.remove(`${zlog}.tmp`).catch(() => {});
      throw e;
    });
    if (table !== undefined && t.listed(seg)) {
      await t.io.rename(`${zlog}.tmp`, zlog);
      await t.io.fsyncDir(t.dir);
      if (t.listed(seg)) {
        file.compacted(zlog, table);
        await t.io.remove(`${t.dir}/${segmentName(seg.segNo)}`);
        return;
      }
    }
    await t.io.remove(`${zlog}.tmp`);
    await t.io.remove(zlog);
  } finally {
    file.release();
  }
}

/**
 * Writes the `.zlog` as `tmp`, a read window at a time (memory stays at one window and the table), and
 * fdatasyncs it; its chunk table, or undefined once the segment is no longer listed.
 */
async function writeZlog(seg: Segment, file: SegmentFile, header: Buffer, tmp: string, t: CompactionTarget): Promise<ChunkTable | undefined> {
  const bounds = chunkBounds(seg);
  const builder = new ChunkTableBuilder();
  const fd = await t.io.createFile(tmp, Buffer.alloc(ZLOG_HEADER_BYTES));
  try {
    let sliceStart = performance.now();
    const buffers = new WindowBuffers();
    for (let k = 0; k < bounds.length - 1; ) {
      let j = k + 1;
      while (j < bounds.length - 1 && bounds[j + 1] - bounds[k] <= READ_BYTES_MAX) j++;
      const window = buffers.read(bounds[j] - bounds[k]);
      await file.read(t.io, window, 0, window.length, bounds[k]);
      const at = builder.fileOffset;
      const out = buffers.out(window.length, j - k);
      let outBytes = 0;
      for (let i = k; i < j; i++) {
        for (const c of storeGroup(window.subarray(bounds[i] - bounds[k], bounds[i + 1] - bounds[k]), bounds[i], buffers)) {
          for (const b of builder.add(c)) outBytes += b.copy(out, outBytes);
        }
        if (performance.now() - sliceStart < SLICE_MS) continue;
        await new Promise((resolve) => setTimeout(resolve, PAUSE_PER_SLICE_MS));
        sliceStart = performance.now();
      }
      assert(outBytes === builder.fileOffset - at, 'a window is written as its chunks were recorded');
      if (!t.listed(seg)) return undefined;
      await writeFully(t.io, fd, [out.subarray(0, outBytes)], at);
      k = j;
    }
    const { bytes, table } = builder.finish(seg.bytes);
    await writeFully(t.io, fd, [bytes], builder.fileOffset);
    // The header goes last, with the fdatasync that makes the whole file durable before its rename.
    await t.io.overwrite(fd, encodeZlogHeader(header, seg.bytes, builder.count, builder.fileOffset), 0);
    return table;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * The buffers of a segment's windows, made once and reused: the logical bytes read, each chunk decoded back
 * to check it, and the chunks made of them (each chunk stores at most its logical bytes, and a group of more
 * than CHUNK_CODEC_BYTES_MAX is stored in slices). A window's chunks used to be kept as their own Buffers
 * until its write and each window had new buffers of a MiB: while a segment was compacted, the garbage
 * collector ran a full collection (5-10 ms) about every second.
 */
class WindowBuffers {
  private readBuf = Buffer.alloc(0);
  private outBuf = Buffer.alloc(0);
  private checkBuf = Buffer.alloc(0);

  read(bytes: number): Buffer {
    if (this.readBuf.length < bytes) this.readBuf = Buffer.allocUnsafe(bytes);
    return this.readBuf.subarray(0, bytes);
  }

  /** What a chunk of `bytes` decodes back into before it is written (storeGroup); a new Buffer each time before. */
  check(bytes: number): Buffer {
    if (this.checkBuf.length < bytes) this.checkBuf = Buffer.allocUnsafe(Math.max(bytes, 2 * this.checkBuf.length));
    return this.checkBuf;
  }

  out(logicalBytes: number, groups: number): Buffer {
    const bytes = logicalBytes + (groups + Math.ceil(logicalBytes / CHUNK_CODEC_BYTES_MAX)) * CHUNK_HEAD_BYTES;
    if (this.outBuf.length < bytes) this.outBuf = Buffer.allocUnsafe(bytes);
    return this.outBuf.subarray(0, bytes);
  }
}

/** Chunk boundaries: after the header, at each sparse-index group, at the end; strictly increasing. */
function chunkBounds(seg: Segment): number[] {
  const sparse = seg.sparse;
  assert(sparse !== undefined && seg.bytes > SEGMENT_HEADER_BYTES, 'a sealed segment with frames is compacted');
  const bounds = [SEGMENT_HEADER_BYTES];
  for (let k = 1; k < sparse.length; k++) if (sparse[k] > bounds[bounds.length - 1] && sparse[k] < seg.bytes) bounds.push(sparse[k]);
  bounds.push(seg.bytes);
  return bounds;
}

/**
 * One group's chunks: compressed when it is small enough, it shrinks and it decodes back to the same bytes
 * (checked before it is written; the codec itself transforms only frames that check); otherwise stored as
 * it is, in slices.
 */
function storeGroup(logical: Buffer, logicalStart: number, buffers: WindowBuffers): StoredChunk[] {
  if (logical.length <= CHUNK_CODEC_BYTES_MAX) {
    const stored = encodeChunk(logical);
    if (stored.length < logical.length && decodeChunk(stored, logical.length, buffers.check(logical.length)).equals(logical)) {
      return [{ logicalStart, logicalBytes: logical.length, logicalCrc: crc32c(logical, 0, logical.length), mode: CHUNK_CODEC, stored }];
    }
  }
  const out: StoredChunk[] = [];
  for (let at = 0; at < logical.length; at += CHUNK_CODEC_BYTES_MAX) {
    const slice = Buffer.from(logical.subarray(at, Math.min(logical.length, at + CHUNK_CODEC_BYTES_MAX)));
    out.push({ logicalStart: logicalStart + at, logicalBytes: slice.length, logicalCrc: crc32c(slice, 0, slice.length), mode: CHUNK_STORED, stored: slice });
  }
  return out;
}
