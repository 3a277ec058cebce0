/**
 * Time -> id: `create_at` never decreases with id (docs/storage-format.md "Ids, timestamps, update-last"),
 * so the first id at or after a time is found by a binary search: first over the segments by the
 * create_at of their first record (in memory), then inside one segment by reading single frames through
 * its offset index. A search reads about log2(records in the segment) frames, never a scan.
 *
 * The one exception is a backward clock step larger than clock_jump_max_s (logged at warn): create_at
 * then steps back once. The segment is chosen from the newest one backwards (the newest segment whose
 * first record is older than the time), so a window over recent time finds the records stamped after
 * the step, not the ones a wrong clock stamped in the future before it; a window that spans the step is
 * resolved as if the log were sorted (see docs/api.md "Time ranges").
 */
import { readRange, type BufferedBytes, type LostFn } from './reader.js';
import { newestRecordId, type Segment } from '../segment/segment.js';
import type { FileIo } from '../base/file-io.js';

export interface TimeRange {
  /** Inclusive, ms since the epoch. */
  fromMs?: number;
  /** Exclusive. */
  toMs?: number;
}

export interface IdRange {
  firstId: number;
  /** firstId - 1 when the range holds no record. */
  lastId: number;
}

/** The ids of the records whose create_at lies in [fromMs, toMs); the whole log when neither is given. */
export async function idRangeOf(io: FileIo, buffered: BufferedBytes, segments: readonly Segment[], range: TimeRange, lost: LostFn): Promise<IdRange> {
  const firstId = segments[0].firstId;
  const lastId = newestRecordId(segments);
  if (lastId < firstId) return { firstId, lastId: firstId - 1 };
  const a = range.fromMs === undefined ? firstId : await firstIdAtOrAfter(io, buffered, segments, range.fromMs, lost);
  const b = range.toMs === undefined ? lastId + 1 : await firstIdAtOrAfter(io, buffered, segments, range.toMs, lost);
  return b > a ? { firstId: a, lastId: b - 1 } : { firstId: a, lastId: a - 1 };
}

/** The first id whose create_at >= tMs (newest record + 1 when none). The caller holds the segments' files. */
export async function firstIdAtOrAfter(io: FileIo, buffered: BufferedBytes, segments: readonly Segment[], tMs: number, lost: LostFn): Promise<number> {
  const newest = newestRecordId(segments);
  let i = segments.length - 1;
  while (i >= 0 && (segments[i].count <= 0 || segments[i].minTs >= tMs)) i--;
  if (i < 0) return segments[0].firstId;
  const seg = segments[i];
  // Within the segment's own run of ids: a restored gap after it holds no record to probe.
  const end = Math.min(seg.lastId, i + 1 < segments.length ? segments[i + 1].firstId - 1 : seg.lastId, newest);
  let lo = seg.firstId;
  let hi = end;
  while (lo <= hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const p = await probe(io, buffered, segments, mid, hi, lost);
    if (p === undefined || p.ts >= tMs) hi = mid - 1;
    else lo = p.id + 1;
  }
  return lo;
}

/** The id and create_at of the first readable record in [id, hi]; ids lost to corruption are stepped over. */
async function probe(io: FileIo, buffered: BufferedBytes, segments: readonly Segment[], id: number, hi: number, lost: LostFn): Promise<{ id: number; ts: number } | undefined> {
  for (let width = 1; ; width *= 16) {
    const b = Math.min(hi, id + width - 1);
    const recs = await readRange(io, buffered, segments, id, b, lost);
    if (recs.length > 0) return { id: recs[0].id, ts: recs[0].ts };
    if (b === hi) return undefined;
    id = b + 1;
  }
}
