/**
 * Synchronous frame walks over a segment file, used only at open (recovery, index rebuild). Frames before
 * `verifyFrom` were fdatasync'ed and are only checked for plausibility (length, type, id order); from
 * `verifyFrom` on every CRC is verified. A bad frame before `syncedEnd` is corruption of synced data: it
 * is skipped by resynchronising on the next valid frame with a higher id that starts no later than
 * `syncedEnd`, and its ids are reported lost. A bad frame at or past `syncedEnd` (or one whose resync
 * would cross it) is where a crash cut the unsynced tail: the walk ends there.
 */
import fs from 'node:fs';
import {
  FRAME_BYTES_MAX,
  FRAME_HEADER_BYTES,
  FRAME_INVALID,
  checkFrame,
  findNextFrame,
  frameBytes,
  frameCrc,
  followsFrame,
  mayFollowFrame,
  frameId,
  frameTs,
  frameType,
  FRAME_SAVE,
  FRAME_SUPERSEDE,
} from '../format/frame.js';
import { SEGMENT_HEADER_BYTES, type Segment } from './segment.js';
import { MIB } from '../base/constants.js';

const WINDOW_BYTES = 8 * MIB;

class WindowReader {
  buf = Buffer.alloc(0);
  base = 0;

  constructor(
    private readonly fd: number,
    readonly size: number,
  ) {}

  /** Makes [off, off+need) available (clipped to the file) and returns the offset of `off` in buf. */
  load(off: number, need: number): number {
    const end = Math.min(this.size, off + need);
    if (off >= this.base && end <= this.base + this.buf.length) return off - this.base;
    const len = Math.min(this.size - off, Math.max(need, WINDOW_BYTES));
    if (this.buf.length < len) this.buf = Buffer.allocUnsafe(len);
    let done = 0;
    while (done < len) {
      const n = fs.readSync(this.fd, this.buf, done, len - done, off + done);
      if (n <= 0) break;
      done += n;
    }
    this.buf = this.buf.subarray(0, done);
    this.base = off;
    return 0;
  }

  get end(): number {
    return this.buf.length;
  }
}

export interface ScanResult {
  /** End of the last good frame: everything after it is a torn tail. */
  goodEnd: number;
  lost: Array<{ fromId: number; toId: number }>;
  scannedBytes: number;
}

export function scanSegment(seg: Segment, fd: number, fileSize: number, verifyFrom: number, syncedEnd: number): ScanResult {
  const win = new WindowReader(fd, fileSize);
  const lost: ScanResult['lost'] = [];
  let off = SEGMENT_HEADER_BYTES;
  while (off < fileSize) {
    const n = frameAt(win, off, seg.lastId, off < verifyFrom);
    if (n > 0) {
      record(seg, win, off, n, lost);
      off += n;
      continue;
    }
    const next = off < syncedEnd ? resync(win, off, seg.lastId + 1) : -1;
    if (next < 0 || next > syncedEnd) break;
    off = next;
  }
  return { goodEnd: seg.count > 0 ? seg.bytes : SEGMENT_HEADER_BYTES, lost, scannedBytes: fileSize - SEGMENT_HEADER_BYTES };
}

/** Length of the frame at off, or <= 0 when it is not a good frame that may follow `prevId`. */
function frameAt(win: WindowReader, off: number, prevId: number, trusted: boolean): number {
  let r = win.load(off, FRAME_HEADER_BYTES);
  if (win.end - r < FRAME_HEADER_BYTES) return FRAME_INVALID;
  const len = frameBytes(win.buf, r);
  if (len < FRAME_HEADER_BYTES || len > FRAME_BYTES_MAX) return FRAME_INVALID;
  r = win.load(off, len);
  if (r + len > win.end) return FRAME_INVALID;
  const id = frameId(win.buf, r);
  const type = frameType(win.buf, r);
  const inOrder = followsFrame(prevId, type, id);
  if (trusted && inOrder && (type === FRAME_SAVE || type === FRAME_SUPERSEDE)) return len;
  const n = checkFrame(win.buf, r, win.end);
  return n > 0 && mayFollowFrame(prevId, type, id) ? n : FRAME_INVALID;
}

function record(seg: Segment, win: WindowReader, off: number, n: number, lost: ScanResult['lost']): void {
  const r = off - win.base;
  const id = frameId(win.buf, r);
  if (id > seg.lastId + 1) {
    lost.push({ fromId: seg.lastId + 1, toId: id - 1 });
    seg.fillLost(seg.lastId + 1, id - 1, off);
  }
  seg.setFrame(id, off, n, frameTs(win.buf, r), frameCrc(win.buf, r));
}

/**
 * End of the last non-zero byte in [from, size), or `from`: a torn tail is reported up to there, and
 * the zeros after it are not data (what a preallocated file holds past its frames, see PREALLOCATE_BYTES).
 */
export function endOfNonZero(fd: number, from: number, size: number): number {
  const buf = Buffer.allocUnsafe(Math.min(WINDOW_BYTES, Math.max(0, size - from)));
  for (let end = size; end > from; ) {
    const start = Math.max(from, end - buf.length);
    const n = fs.readSync(fd, buf, 0, end - start, start);
    for (let i = n - 1; i >= 0; i--) if (buf[i] !== 0) return start + i + 1;
    end = start;
  }
  return from;
}

/** Offset of the next valid frame with id >= minId, scanning window by window, or -1. */
function resync(win: WindowReader, from: number, minId: number): number {
  let off = from;
  while (off < win.size) {
    const r = win.load(off, WINDOW_BYTES);
    const found = findNextFrame(win.buf, r, win.end, minId);
    if (found >= 0) return win.base + found;
    if (win.base + win.end >= win.size) return -1;
    // A frame may straddle the window end: overlap by one maximal frame.
    off = Math.max(off + 1, win.base + win.end - FRAME_BYTES_MAX);
  }
  return -1;
}
