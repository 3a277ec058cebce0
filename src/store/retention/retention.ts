/**
 * Retention removes whole sealed segments from the head while any limit is exceeded. The manifest moves
 * its first segment forward before a file is unlinked, so a crash in between only leaves a file that the
 * next open deletes. The active segment is never removed.
 */
import type { FileIo } from '../base/file-io.js';
import { indexName, newestRecordId, segmentName, type Segment } from '../segment/segment.js';
import type { ManifestWriter } from '../segment/manifest.js';
import { storedIdCount } from '../segment/id-spans.js';
import { manifestOf } from '../recovery/recovery.js';
import { summaryName } from '../aggregate/summary-file.js';
import { compactedName } from '../format/zlog.js';
import type { RetentionLimits } from '../base/types.js';

/** Bytes a segment takes on disk: its `.zlog` once compacted, else its logical bytes. */
export function diskBytes(seg: Segment): number {
  return seg.file.compactedBytes ?? seg.bytes;
}

export function totalBytes(segments: readonly Segment[]): number {
  let n = 0;
  for (const s of segments) n += diskBytes(s);
  return n;
}

function exceeded(segments: readonly Segment[], limits: RetentionLimits, nowMs: number): boolean {
  const head = segments[0];
  if (limits.maxRecords > 0 && storedIdCount(segments, head.firstId, segments[segments.length - 1].lastId) > limits.maxRecords) return true;
  if (limits.maxBytes > 0 && totalBytes(segments) > limits.maxBytes) return true;
  return limits.maxAgeMs > 0 && head.maxTs < nowMs - limits.maxAgeMs;
}

/**
 * What a reader outside the store (the fleet uplink, docs/uplink.md) has not consumed yet: retention
 * keeps every segment holding `keepFromId()` or a later id, unless those segments add up to more than
 * `backlogMaxBytes` (when > 0); then the limits apply as if there were no floor, and the reader finds
 * the log starting past its position (and reports the gap).
 */
export interface RetentionFloor {
  keepFromId(): number;
  backlogMaxBytes: number;
}

function heldByFloor(segments: readonly Segment[], floor: RetentionFloor | undefined): boolean {
  if (floor === undefined) return false;
  const keepFromId = floor.keepFromId();
  if (segments[0].lastId < keepFromId) return false;
  if (floor.backlogMaxBytes <= 0) return true;
  let backlogBytes = 0;
  for (const s of segments) if (s.lastId >= keepFromId) backlogBytes += diskBytes(s);
  return backlogBytes <= floor.backlogMaxBytes;
}

/**
 * Removes head segments of `segments` (mutated in place) while a limit is exceeded and no floor holds
 * them. The segment holding the newest record always stays, also when the active segment behind it is
 * empty (after recovery cut its torn frames): the log never loses the record that latest() and
 * update-last work on.
 */
export async function applyRetention(
  io: FileIo,
  dir: string,
  segments: Segment[],
  manifest: ManifestWriter,
  limits: RetentionLimits,
  nowMs: number,
  floor?: RetentionFloor,
): Promise<number> {
  let removed = 0;
  // The newest record, not the newest id: ids lost at the tail (recovery) may follow it in an empty segment.
  const newestId = newestRecordId(segments);
  const removable = (): boolean =>
    segments.length > 1 && segments[0].sealedOnDisk && segments[0].lastId < newestId && exceeded(segments, limits, nowMs);
  while (removable() && !heldByFloor(segments, floor)) {
    await manifest.write(() => manifestOf(segments.slice(1)));
    const head = segments.shift() as Segment;
    // Reads still holding the segment get its fd now, before the unlink (see SegmentFile.retire).
    head.file.retire();
    await io.remove(`${dir}/${segmentName(head.segNo)}`);
    await io.remove(`${dir}/${compactedName(head.segNo)}`);
    await io.remove(`${dir}/${indexName(head.segNo)}`);
    await io.remove(`${dir}/${summaryName(head.segNo)}`);
    removed++;
  }
  return removed;
}
