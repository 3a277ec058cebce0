/**
 * One segment file `seg-<segNo>.log`: a 32-byte header, then frames. In memory: its id range, its offset
 * index (dense for the active segment, sparse for sealed ones) and its byte counters. The bytes not in the
 * file yet are the write buffer's (write-buffer.ts).
 */
import fs from 'node:fs';
import { crc32c } from '../format/crc32c.js';
import { FRAME_BYTES_MAX, u32, f64 } from '../format/frame.js';
import { SegmentFile } from './segment-file.js';
import { assert, SEGMENT_HEADER_BYTES, SPARSE_STRIDE } from '../base/constants.js';

export { SEGMENT_HEADER_BYTES } from '../base/constants.js';
const MAGIC = 0x474f4c53; // "SLOG"
const VERSION = 1;
/** Initial length of an active segment's dense index (grown by doubling). */
export const DENSE_INITIAL = 1024;

export function segmentName(segNo: number): string {
  return `seg-${String(segNo).padStart(10, '0')}.log`;
}

export function indexName(segNo: number): string {
  return `seg-${String(segNo).padStart(10, '0')}.idx`;
}

export function parseSegmentName(name: string): number | undefined {
  const m = /^seg-(\d{10})\.log$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

export interface SegmentHeader {
  segNo: number;
  firstId: number;
  createdMs: number;
}

export function encodeSegmentHeader(h: SegmentHeader): Buffer {
  const b = Buffer.alloc(SEGMENT_HEADER_BYTES);
  b.writeUInt32LE(MAGIC, 0);
  b.writeUInt16LE(VERSION, 4);
  b.writeUInt32LE(h.segNo, 8);
  b.writeDoubleLE(h.firstId, 12);
  b.writeDoubleLE(h.createdMs, 20);
  b.writeUInt32LE(crc32c(b, 0, 28), 28);
  return b;
}

export function decodeSegmentHeader(b: Buffer): SegmentHeader | undefined {
  if (b.length < SEGMENT_HEADER_BYTES || u32(b, 0) !== MAGIC || b.readUInt16LE(4) !== VERSION) return undefined;
  if (crc32c(b, 0, 28) !== u32(b, 28)) return undefined;
  const h = { segNo: u32(b, 8), firstId: f64(b, 12), createdMs: f64(b, 20) };
  return Number.isSafeInteger(h.firstId) && h.firstId >= 1 ? h : undefined;
}

export function createSegmentFileSync(dir: string, h: SegmentHeader): number {
  const fd = fs.openSync(`${dir}/${segmentName(h.segNo)}`, 'w+');
  fs.writeSync(fd, encodeSegmentHeader(h), 0, SEGMENT_HEADER_BYTES, 0);
  fs.fdatasyncSync(fd);
  return fd;
}

export class Segment {
  lastId: number;
  /** Logical size, including bytes still in the write buffer. */
  bytes = SEGMENT_HEADER_BYTES;
  /** End of the bytes handed to the kernel (moved by the write buffer, set at open). */
  writtenBytes = SEGMENT_HEADER_BYTES;
  /** End of the bytes an fdatasync covered (moved by the write buffer, set at open). */
  syncedBytes = SEGMENT_HEADER_BYTES;
  /**
   * How long the writer made the file: past writtenBytes once zeros were written ahead (`always`, see
   * PREALLOCATE_BYTES); a write ending past it writes zeros ahead again. Recovery leaves the file at
   * `bytes`; a seal and a clean close trim the zeros.
   */
  fileBytes = SEGMENT_HEADER_BYTES;
  minTs = 0;
  maxTs = 0;
  lastFrameOffset = 0;
  lastFrameCrc = 0;
  /** See SegmentFile: the generation's reference is taken here; the fd comes with the file, and goes once it is sealed. */
  readonly file = new SegmentFile();
  /** Its data was fdatasync'ed and its index file written (by a seal, or found so at open): retention may remove it. */
  sealedOnDisk = false;
  /** Active segment: offset of the newest frame of id firstId+i; entries past the end are unused. */
  dense: Uint32Array | undefined = new Uint32Array(DENSE_INITIAL);
  /** Sealed segment: offset of a frame of id firstId+64k at or before all its later versions. */
  sparse: Uint32Array | undefined;

  constructor(
    readonly segNo: number,
    readonly firstId: number,
    readonly createdMs: number,
  ) {
    this.lastId = firstId - 1;
  }

  get count(): number {
    return this.lastId - this.firstId + 1;
  }

  /**
   * Records the newest frame of `id` at `off`. Ids never decrease within a segment and a SAVE's id is
   * higher than the last one (the exact per-type rules are checked before the frame is made: generation.ts;
   * a scan may pass ids lost to corruption: fillLost).
   */
  setFrame(id: number, off: number, frameBytes: number, ts: number, crc: number): void {
    assert(id >= this.firstId && id >= this.lastId && off >= this.bytes && frameBytes <= FRAME_BYTES_MAX, 'frames of a segment follow each other');
    this.setDense(id, off);
    if (this.count === 0) this.minTs = ts;
    this.maxTs = Math.max(this.maxTs, ts);
    this.lastId = id;
    this.lastFrameOffset = off;
    this.lastFrameCrc = crc;
    this.bytes = Math.max(this.bytes, off + frameBytes);
  }

  seal(): void {
    const d = this.dense as Uint32Array;
    const groups = Math.ceil(this.count / SPARSE_STRIDE);
    const s = new Uint32Array(groups);
    for (let k = 0; k < groups; k++) s[k] = d[k * SPARSE_STRIDE];
    this.sparse = s;
    this.dense = undefined;
  }

  /** Byte range holding every frame of ids [a, b] (plus maybe neighbours), a..b inside this segment. */
  byteRange(a: number, b: number): [number, number] {
    assert(a >= this.firstId && b <= this.lastId && a <= b, 'byteRange inside the segment');
    if (this.dense) {
      const end = b < this.lastId ? this.dense[b + 1 - this.firstId] : this.bytes;
      return [this.dense[a - this.firstId], end];
    }
    const s = this.sparse as Uint32Array;
    const endGroup = Math.floor((b - this.firstId) / SPARSE_STRIDE) + 1;
    return [s[Math.floor((a - this.firstId) / SPARSE_STRIDE)], endGroup < s.length ? s[endGroup] : this.bytes];
  }

  /** Fills dense entries for ids lost to corruption with the next frame's offset. */
  fillLost(fromId: number, toId: number, off: number): void {
    for (let id = fromId; id <= toId; id++) this.setDense(id, off);
  }

  private setDense(id: number, off: number): void {
    const i = id - this.firstId;
    let d = this.dense as Uint32Array;
    while (i >= d.length) {
      const grown = new Uint32Array(d.length * 2);
      grown.set(d);
      this.dense = d = grown;
    }
    d[i] = off;
  }
}

/** Ids lost at the tail (see continueAfterHandedOut) leave an empty active segment after the newest record. */
export function newestRecordId(segments: readonly Segment[]): number {
  for (let i = segments.length - 1; i > 0; i--) if (segments[i].count > 0) return segments[i].lastId;
  return segments[0].lastId;
}
