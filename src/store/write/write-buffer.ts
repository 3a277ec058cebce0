/**
 * The bytes of one generation that are not durably in the files yet, and their only owner (Prometheus's
 * wlog `page`). Frames are appended to the current chunk (`cur`, 64 KiB); the writer cuts chunks into
 * write jobs and reports back when they were written and when an fdatasync covered them. Per segment:
 * - unwritten: chunks not handed to the kernel yet, in offset order (the last one may still be `cur`);
 * - unsynced: chunks handed to the kernel since the segment's last good fdatasync. After a failed
 *   fdatasync the kernel may have marked their pages clean without writing them (fsyncgate): the file no
 *   longer holds them, so they are written again from here, and reads take them from here meanwhile.
 * Nothing here does I/O. A segment's `writtenBytes` and `syncedBytes` move only here (after open), in the
 * same step as its chunks move, so a reader always finds every byte in memory or in the file.
 */
import { copyBytes } from '../format/byte-copy.js';
import { FRAME_HEADER_BYTES, FRAME_SUPERSEDE, type FrameType, frameId, frameTs, frameType, sealFrame } from '../format/frame.js';
import type { Segment } from '../segment/segment.js';
import { WRITE_CHUNK_BYTES, WRITE_CHUNK_MIN_BYTES, assert } from '../base/constants.js';

/** A run of bytes [base, base+len) of `seg` that is not in the kernel yet. */
export interface MemChunk {
  readonly seg: Segment;
  readonly base: number;
  readonly buf: Buffer;
  len: number;
  /** Log sequence number (bytes appended by the generation) at the end of the chunk: drives durable(). */
  endLsn: number;
}

interface SegmentBytes {
  readonly unwritten: MemChunk[];
  readonly unsynced: Array<{ base: number; buf: Buffer }>;
  unsyncedBytes: number;
  /** An fdatasync of the segment failed: the unsynced bytes must be written again before the next one counts. */
  rewriteNeeded: boolean;
}

/** What the writer learns from the buffer as frames arrive. */
export interface BufferOwner {
  /** A frame was accepted. */
  appended(): void;
  /** `cur` was cut because the next frame did not fit: it is ready to be written. */
  filled(chunk: MemChunk): void;
}

export class WriteBuffer {
  private cur: MemChunk | undefined;
  /**
   * The unused tail of the last cut chunk's buffer, where the next chunk starts. A chunk is cut at every
   * write (each turn of the writer, often a few KiB), and a new 64 KiB ArrayBuffer for each made V8 run a
   * full collection about every second under steady writes (external memory); now one buffer takes the
   * chunks of many writes.
   */
  private spare: Buffer | undefined;
  /** appendedLsn at the last releaseIfIdle(). */
  private idleCheckLsn = -1;
  private appended = 0;
  private cutAt = 0;
  /** Only segments holding bytes here (or awaiting a rewrite) have an entry. */
  private readonly segs = new Map<Segment, SegmentBytes>();

  constructor(private readonly owner: BufferOwner) {}

  /** Bytes appended since the generation started. */
  get appendedLsn(): number {
    return this.appended;
  }

  /** appendedLsn when `cur` was last cut: bytes above it are still in `cur`. */
  get cutLsn(): number {
    return this.cutAt;
  }

  /** Writes a frame of payload[start, end) at the end of `seg` and indexes it there: from now on reads find it. */
  append(seg: Segment, type: FrameType, id: number, ts: number, payload: Buffer, start = 0, end = payload.length): void {
    const bytes = FRAME_HEADER_BYTES + end - start;
    const c = this.room(seg, bytes);
    const at = c.len;
    assert(c.base + at === seg.bytes, 'a frame is appended at the end of its segment');
    copyBytes(payload, start, end, c.buf, at + FRAME_HEADER_BYTES);
    const crc = sealFrame(c.buf, at, type, id, ts, end - start);
    seg.setFrame(id, c.base + at, bytes, ts, crc);
    c.len = at + bytes;
    this.appended += bytes;
    c.endLsn = this.appended;
    this.owner.appended();
  }

  /**
   * Update-last coalescing: when the newest frame of `seg` is a SUPERSEDE of `id` of the same size still
   * in `cur` (not cut for writing), it is overwritten in place instead of appending another (flash wear).
   * False when that is not the case; the caller appends then.
   */
  rewriteLast(seg: Segment, id: number, ts: number, payload: Buffer): boolean {
    const c = this.cur;
    if (c === undefined || c.seg !== seg) return false;
    const at = seg.lastFrameOffset - c.base;
    if (at < 0 || at + FRAME_HEADER_BYTES + payload.length !== c.len || frameType(c.buf, at) !== FRAME_SUPERSEDE) return false;
    assert(frameId(c.buf, at) === id && frameTs(c.buf, at) === ts, 'a rewritten frame keeps its id and timestamp');
    payload.copy(c.buf, at + FRAME_HEADER_BYTES);
    seg.lastFrameCrc = sealFrame(c.buf, at, FRAME_SUPERSEDE, id, ts, payload.length);
    return true;
  }

  /**
   * Called now and then (the checkpoint): a model that took no frame since the last call lets its spare buffer
   * go, so an idle model does not hold 64 KiB. The written chunks still in `unsynced` hold theirs until synced.
   */
  releaseIfIdle(): void {
    if (this.appended === this.idleCheckLsn && this.cur === undefined) this.spare = undefined;
    this.idleCheckLsn = this.appended;
  }

  /** Hands `cur` over to be written; undefined when there is nothing to write. */
  cut(): MemChunk | undefined {
    const c = this.cur;
    if (c === undefined) return undefined;
    this.cur = undefined;
    this.cutAt = this.appended;
    this.spare = c.buf.subarray(c.len);
    if (c.len > 0) return c;
    // A frame that failed its checks after the chunk was made for it.
    const s = this.segs.get(c.seg) as SegmentBytes;
    s.unwritten.splice(s.unwritten.indexOf(c), 1);
    this.forgetIfEmpty(c.seg, s);
    return undefined;
  }

  /** Before a write: `chunks` are the oldest unwritten ones of their segment, in order, and none is `cur`. */
  checkNextWrite(chunks: readonly MemChunk[]): void {
    const seg = chunks[0].seg;
    const unwritten = this.segs.get(seg)?.unwritten;
    assert(chunks[0].base === seg.writtenBytes, 'chunks are written in order');
    for (let i = 0; i < chunks.length; i++) {
      assert(unwritten?.[i] === chunks[i] && chunks[i] !== this.cur && chunks[i].len > 0, 'a write takes the oldest cut chunks of one segment');
    }
  }

  /** The writer handed `chunks` (see checkNextWrite) to the kernel: they are kept until an fdatasync covers them. */
  written(chunks: readonly MemChunk[]): void {
    this.checkNextWrite(chunks);
    const seg = chunks[0].seg;
    const s = this.segs.get(seg) as SegmentBytes;
    const last = chunks[chunks.length - 1];
    seg.writtenBytes = last.base + last.len;
    assert(seg.writtenBytes <= seg.bytes, 'only appended bytes are written');
    s.unwritten.splice(0, chunks.length);
    // Held as views: the chunks that follow share their buffer (see spare), so a copy would only add garbage.
    for (const c of chunks) {
      s.unsynced.push({ base: c.base, buf: c.buf.subarray(0, c.len) });
      s.unsyncedBytes += c.len;
    }
  }

  /** Written bytes of `seg` not yet covered by an fdatasync and kept in memory. */
  unsyncedBytes(seg: Segment): number {
    return this.segs.get(seg)?.unsyncedBytes ?? 0;
  }

  /** An fdatasync of `seg` failed. */
  syncFailed(seg: Segment): void {
    this.bytesOf(seg).rewriteNeeded = true;
  }

  rewriteNeeded(seg: Segment): boolean {
    return this.segs.get(seg)?.rewriteNeeded === true;
  }

  /** What to write again before the next fdatasync of `seg` counts (see syncFailed); undefined when nothing. */
  unsyncedRun(seg: Segment): { pos: number; bufs: Buffer[] } | undefined {
    const s = this.segs.get(seg);
    if (s === undefined || s.unsynced.length === 0) return undefined;
    assert(s.unsynced[0].base === seg.syncedBytes, 'unsynced bytes start where the last fdatasync ended');
    return { pos: seg.syncedBytes, bufs: s.unsynced.map((u) => u.buf) };
  }

  /** An fdatasync of `seg` that started when its file held `bytes` bytes succeeded. */
  synced(seg: Segment, bytes: number): void {
    assert(bytes >= seg.syncedBytes && bytes <= seg.writtenBytes, 'an fdatasync covers written bytes, and the synced end never moves back');
    seg.syncedBytes = bytes;
    const s = this.segs.get(seg);
    if (s === undefined) return;
    s.rewriteNeeded = false;
    let n = 0;
    while (n < s.unsynced.length && s.unsynced[n].base + s.unsynced[n].buf.length <= bytes) {
      s.unsyncedBytes -= s.unsynced[n].buf.length;
      n++;
    }
    s.unsynced.splice(0, n);
    this.forgetIfEmpty(seg, s);
  }

  /**
   * Copies the part of [start, end) of `seg` that is not in the kernel yet into `out` (`out[0]` is byte
   * `start`); returns where the part to read from the file ends. Synchronous: the bytes below the returned
   * end are in the file now and stay there.
   */
  copyUnwritten(seg: Segment, out: Buffer, start: number, end: number): number {
    const fileEnd = Math.min(end, seg.writtenBytes);
    const s = this.segs.get(seg);
    if (s !== undefined) {
      for (const c of s.unwritten) {
        const from = Math.max(start, fileEnd, c.base);
        const to = Math.min(end, c.base + c.len);
        if (from < to) c.buf.copy(out, from - start, from - c.base, to - c.base);
      }
    }
    return fileEnd;
  }

  /** After [start, fileEnd) was read from the file into `out`: the bytes a failed fdatasync may have dropped come from memory. */
  copyUnsynced(seg: Segment, out: Buffer, start: number, fileEnd: number): void {
    const s = this.segs.get(seg);
    if (s === undefined) return;
    for (const u of s.unsynced) {
      const from = Math.max(start, u.base);
      const to = Math.min(fileEnd, u.base + u.buf.length);
      if (from < to) u.buf.copy(out, from - start, from - u.base, to - u.base);
    }
  }

  /** `cur` if the frame fits, else a new chunk (the full one is handed to the owner first). */
  private room(seg: Segment, bytes: number): MemChunk {
    const c = this.cur;
    assert(c === undefined || c.seg === seg, 'frames go to the segment of the current chunk (a roll cuts it)');
    if (c !== undefined && c.len + bytes <= c.buf.length) return c;
    const full = this.cut();
    if (full !== undefined) this.owner.filled(full);
    const spare = this.spare;
    this.spare = undefined;
    const buf = spare !== undefined && spare.length >= Math.max(bytes, WRITE_CHUNK_MIN_BYTES) ? spare : Buffer.allocUnsafe(Math.max(WRITE_CHUNK_BYTES, bytes));
    const chunk: MemChunk = { seg, base: seg.bytes, buf, len: 0, endLsn: this.appended };
    this.bytesOf(seg).unwritten.push(chunk);
    this.cur = chunk;
    return chunk;
  }

  private bytesOf(seg: Segment): SegmentBytes {
    let s = this.segs.get(seg);
    if (s === undefined) {
      s = { unwritten: [], unsynced: [], unsyncedBytes: 0, rewriteNeeded: false };
      this.segs.set(seg, s);
    }
    return s;
  }

  private forgetIfEmpty(seg: Segment, s: SegmentBytes): void {
    if (s.unwritten.length === 0 && s.unsynced.length === 0 && !s.rewriteNeeded) this.segs.delete(seg);
  }
}
