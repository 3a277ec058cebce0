/**
 * Copying a few bytes between buffers. On Node 20 `Buffer.copy` costs about 75 ns a call whatever the
 * length, and makes a typed-array view of the source each time: on the write path that was a view of
 * garbage per record appended. A loop costs about 1 ns a byte, so below SMALL_COPY_BYTES_MAX it is the
 * faster of the two (a record of five floats, 46 bytes: 50 ns against 84), and makes nothing.
 */

export const SMALL_COPY_BYTES_MAX = 64;

/** Copies src[start, end) into dst at `at`; returns the offset in dst after them. */
export function copyBytes(src: Buffer, start: number, end: number, dst: Buffer, at: number): number {
  if (end - start > SMALL_COPY_BYTES_MAX) return at + src.copy(dst, at, start, end);
  let to = at;
  for (let i = start; i < end; i++) dst[to++] = src[i];
  return to;
}
