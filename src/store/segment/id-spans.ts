/**
 * The ids a generation holds, as runs: each segment holds a dense run of ids, but a restore or import may
 * leave any gap between two segments (up to the whole id domain), as ids lost at the tail do. Counting,
 * paging and iterating go run by run, so their cost follows the segments and the records, never the id
 * span. A segment's run ends before the next segment's first id (an update-last that rolled the segment
 * repeats its id there, and the newer segment holds it). Imports only the Segment type.
 */
import type { Segment } from './segment.js';

/** The run of ids segment `i` holds at their newest version: [firstId, end], empty when end < firstId. */
function runEnd(segments: readonly Segment[], i: number): number {
  const seg = segments[i];
  return i + 1 < segments.length ? Math.min(seg.lastId, segments[i + 1].firstId - 1) : seg.lastId;
}

/** How many ids in [a, b] are stored (ids lost to corruption inside a segment count, as pages show them). */
export function storedIdCount(segments: readonly Segment[], a: number, b: number): number {
  let n = 0;
  for (let i = 0; i < segments.length; i++) {
    const lo = Math.max(a, segments[i].firstId);
    const hi = Math.min(b, runEnd(segments, i));
    if (hi >= lo) n += hi - lo + 1;
  }
  return n;
}

/** The lowest stored id >= `id`; undefined when there is none. */
export function nextStoredId(segments: readonly Segment[], id: number): number | undefined {
  for (let i = 0; i < segments.length; i++) {
    const end = runEnd(segments, i);
    if (end >= segments[i].firstId && end >= id) return Math.max(id, segments[i].firstId);
  }
  return undefined;
}

/** The stored id with `rank` stored ids before it counting up from `a` (rank 0: nextStoredId(a)). */
export function storedIdUp(segments: readonly Segment[], a: number, rank: number): number | undefined {
  let left = rank;
  for (let i = 0; i < segments.length; i++) {
    const lo = Math.max(a, segments[i].firstId);
    const hi = runEnd(segments, i);
    if (hi < lo) continue;
    if (left <= hi - lo) return lo + left;
    left -= hi - lo + 1;
  }
  return undefined;
}

/** The stored id with `rank` stored ids after it counting down from `b` (rank 0: the highest stored id <= b). */
export function storedIdDown(segments: readonly Segment[], b: number, rank: number): number | undefined {
  let left = rank;
  for (let i = segments.length - 1; i >= 0; i--) {
    const lo = segments[i].firstId;
    const hi = Math.min(b, runEnd(segments, i));
    if (hi < lo) continue;
    if (left <= hi - lo) return hi - left;
    left -= hi - lo + 1;
  }
  return undefined;
}
