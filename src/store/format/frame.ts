/**
 * Frame layout (little-endian), see docs/storage-format.md:
 *   0 len u32   bytes after the crc field through the end of the payload (18 + payload)
 *   4 crc u32   CRC-32C over len ‖ type..payload; covering len means a flipped length is caught too
 *   8 type u8   1 SAVE, 2 SUPERSEDE (update-last: replaces the frame of the same id)
 *   9 flags u8  0 = payload is plain msgpack of the value array in model field order
 *  10 id f64    exact integer up to 2^53 without BigInt on the hot path
 *  18 ts f64    create_at in ms
 *  26 payload
 */
import { crc32c, crc32cInt32 } from './crc32c.js';
import { RECORD_BYTES_MAX } from '../base/constants.js';

export const FRAME_HEADER_BYTES = 26;
/** Where the id sits in a frame. */
export const FRAME_ID_OFFSET = 10;
/** Where create_at sits in a frame. */
export const FRAME_TS_OFFSET = 18;
/** The part of the header counted in `len`. */
const LEN_FIXED = FRAME_HEADER_BYTES - 8;
export const FRAME_BYTES_MAX = FRAME_HEADER_BYTES + RECORD_BYTES_MAX;

export const FRAME_SAVE = 1;
export const FRAME_SUPERSEDE = 2;
export type FrameType = typeof FRAME_SAVE | typeof FRAME_SUPERSEDE;

/** Writes a complete frame whose payload is already at off+26; returns its CRC. */
export function sealFrame(buf: Buffer, off: number, type: FrameType, id: number, ts: number, payloadBytes: number): number {
  // Byte stores, not Buffer's writeUInt32LE / writeDoubleLE: those check their arguments on every call,
  // and this runs for every record appended.
  const len = LEN_FIXED + payloadBytes;
  putU32(buf, off, len);
  buf[off + 8] = type;
  buf[off + 9] = 0;
  putF64(buf, off + FRAME_ID_OFFSET, id);
  putF64(buf, off + FRAME_TS_OFFSET, ts);
  const crc = crc32c(buf, off + 8, off + 8 + len, crc32cInt32(buf, off, off + 4));
  putU32(buf, off + 4, crc);
  return crc;
}

export const FRAME_TRUNCATED = 0;
export const FRAME_INVALID = -1;

/**
 * Total bytes of the valid frame at `off`, or FRAME_TRUNCATED when the bytes up to `end` stop inside a
 * plausible frame, or FRAME_INVALID (bad length, type, id, timestamp or CRC).
 */
export function checkFrame(buf: Uint8Array, off: number, end: number): number {
  if (off + FRAME_HEADER_BYTES > end) return plausiblePrefix(buf, off, end) ? FRAME_TRUNCATED : FRAME_INVALID;
  const len = u32(buf, off);
  if (len < LEN_FIXED || len + 8 > FRAME_BYTES_MAX) return FRAME_INVALID;
  const type = buf[off + 8];
  if ((type !== FRAME_SAVE && type !== FRAME_SUPERSEDE) || buf[off + 9] !== 0) return FRAME_INVALID;
  const id = f64(buf, off + FRAME_ID_OFFSET);
  if (!Number.isSafeInteger(id) || id < 1 || !Number.isFinite(f64(buf, off + FRAME_TS_OFFSET))) return FRAME_INVALID;
  if (off + 8 + len > end) return FRAME_TRUNCATED;
  const crc = crc32cInt32(buf, off + 8, off + 8 + len, crc32cInt32(buf, off, off + 4));
  return crc === (u32(buf, off + 4) | 0) ? len + 8 : FRAME_INVALID;
}

/** Whether `bytes` is one or more frames, each passing checkFrame, that end exactly where the bytes end. */
export function wholeValidFrames(bytes: Uint8Array): boolean {
  let off = 0;
  while (off < bytes.length) {
    const n = checkFrame(bytes, off, bytes.length);
    if (n <= 0) return false;
    off += n;
  }
  return off > 0;
}

/** A header cut short by end-of-data: only the length word can be judged. */
function plausiblePrefix(buf: Uint8Array, off: number, end: number): boolean {
  if (end - off < 4) return end > off;
  const len = u32(buf, off);
  return len >= LEN_FIXED && len + 8 <= FRAME_BYTES_MAX;
}

/**
 * Resynchronisation after a bad frame: the first offset in (from, end) holding a valid frame whose id is
 * at least `minId`, or -1. Ids are monotonic, so a stale or random match below minId is rejected.
 */
export function findNextFrame(buf: Uint8Array, from: number, end: number, minId: number): number {
  for (let off = from + 1; off + FRAME_HEADER_BYTES <= end; off++) {
    const type = buf[off + 8];
    if ((type !== FRAME_SAVE && type !== FRAME_SUPERSEDE) || buf[off + 9] !== 0) continue;
    if (f64(buf, off + FRAME_ID_OFFSET) < minId) continue;
    if (checkFrame(buf, off, end) > 0) return off;
  }
  return -1;
}

/**
 * The id rule between neighbouring frames of a segment as they are written: a SAVE takes the next id; a
 * SUPERSEDE repeats the id before it, or takes the next one when it starts a segment (an update-last that
 * rolled the segment).
 */
export function followsFrame(prevId: number, type: number, id: number): boolean {
  return id === prevId + 1 || (id === prevId && type === FRAME_SUPERSEDE);
}

/**
 * The same rule for a frame read back or scanned: ids never go back and a SAVE never repeats one. A
 * higher id than the next is allowed: frames between were lost to corruption (the scan reports them).
 */
export function mayFollowFrame(prevId: number, type: number, id: number): boolean {
  return id > prevId || (id === prevId && type === FRAME_SUPERSEDE);
}

export function frameId(buf: Uint8Array, off: number): number {
  return f64(buf, off + FRAME_ID_OFFSET);
}

export function frameTs(buf: Uint8Array, off: number): number {
  return f64(buf, off + FRAME_TS_OFFSET);
}

export function frameType(buf: Uint8Array, off: number): number {
  return buf[off + 8];
}

export function frameCrc(buf: Uint8Array, off: number): number {
  return u32(buf, off + 4);
}

/** Total bytes of the frame at off, trusting its length word. */
export function frameBytes(buf: Uint8Array, off: number): number {
  return u32(buf, off) + 8;
}

export function u32(buf: Uint8Array, off: number): number {
  return (buf[off] | (buf[off + 1] << 8) | (buf[off + 2] << 16) | (buf[off + 3] << 24)) >>> 0;
}

// f64 reads go through a typed-array view, which is only correct on little-endian hosts (x86, ARM).
if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('store: big-endian host not supported');
const F64_SCRATCH = new Float64Array(1);
const F64_BYTES = new Uint8Array(F64_SCRATCH.buffer);

export function f64(buf: Uint8Array, off: number): number {
  for (let i = 0; i < 8; i++) F64_BYTES[i] = buf[off + i];
  return F64_SCRATCH[0];
}

function putF64(buf: Uint8Array, off: number, value: number): void {
  F64_SCRATCH[0] = value;
  for (let i = 0; i < 8; i++) buf[off + i] = F64_BYTES[i];
}

function putU32(buf: Uint8Array, off: number, value: number): void {
  buf[off] = value;
  buf[off + 1] = value >>> 8;
  buf[off + 2] = value >>> 16;
  buf[off + 3] = value >>> 24;
}
