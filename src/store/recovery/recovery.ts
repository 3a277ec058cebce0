/**
 * Opening a model directory: adopt the manifest after a clean close (no scan), otherwise rebuild the
 * active segment's index from a walk that verifies every CRC from the checkpoint on, and rebuild missing
 * or corrupt index files. The log that comes out is a prefix of what was written (point-in-time
 * recovery): past the checkpoint (the last offset known to be fdatasync'ed) the first bad frame ends the
 * active segment, because a crash can persist later unsynced pages without earlier ones, and frames
 * after such a hole were never acknowledged. A bad frame inside synced data is corruption: it is skipped
 * and its ids are reported in `lostRanges`. Sync I/O: runs once per model at open, before any write is
 * accepted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type Checkpoint, MANIFEST_FILE, type Manifest, ManifestWriter, readManifestSync } from '../segment/manifest.js';
import {
  SEGMENT_HEADER_BYTES,
  Segment,
  createSegmentFileSync,
  decodeSegmentHeader,
  encodeSegmentHeader,
  indexName,
  parseSegmentName,
  segmentName,
} from '../segment/segment.js';
import { applyIndex, encodeIndex, indexFits, indexOf, readIndexSync } from '../segment/index-file.js';
import { endOfNonZero, scanSegment } from '../segment/scan.js';
import { type StoredFields, loadColumnsSync, writeFieldsSync } from '../segment/fields-file.js';
import { type FieldLayout, type VisibleFields, layoutOf } from '../segment/field-layout.js';
import { type FileIo, fsyncDirSync, writeFileAtomicSync } from '../base/file-io.js';
import { FRAME_BYTES_MAX, FRAME_HEADER_BYTES, checkFrame, frameBytes, u32 } from '../format/frame.js';
import type { RecoveryReport } from '../base/types.js';
import type { SealedFdCache } from '../base/sealed-fds.js';
import { loadGenerationSync, newGeneration, writeGenerationSync } from '../segment/generation-file.js';
import { compactedName } from '../format/zlog.js';
import { inflateSync, openCompactedSync, settleCompacted } from './zlog-recovery.js';

export interface OpenedModel {
  segments: Segment[];
  manifest: ManifestWriter;
  report: RecoveryReport;
  /** The stored columns (FIELDS). */
  columns: StoredFields;
  /** The column each visible field reads. */
  layout: FieldLayout;
  /** This incarnation of the directory (GENERATION, see generation-file.ts). */
  generation: string;
}

/**
 * A brand-new model directory holding `seg` (empty; its file is created and attached) and a manifest.
 * GENERATION is written before the manifest, so a directory with a manifest always has its generation.
 */
export function createModelDirSync(io: FileIo, dir: string, seg: Segment, fields: StoredFields, generation = newGeneration()): ManifestWriter {
  fs.mkdirSync(dir, { recursive: true });
  writeFieldsSync(dir, fields);
  writeGenerationSync(dir, generation);
  const { segNo, firstId } = seg;
  seg.file.attach(createSegmentFileSync(dir, { segNo, firstId, createdMs: seg.createdMs }));
  const manifest = ManifestWriter.createSync(io, dir, {
    firstSegNo: segNo,
    firstId,
    clean: false,
    checkpoint: { segNo, offset: SEGMENT_HEADER_BYTES, lastFrameCrc: 0, lastId: firstId - 1 },
  });
  fsyncDirSync(path.dirname(dir));
  return manifest;
}

/** Leaves the active segment's fd and the manifest's open; sealed segments open on demand within `sealedFds`. */
export function openModelDirSync(io: FileIo, dir: string, modelId: string, visible: VisibleFields, sealedFds: SealedFdCache): OpenedModel {
  const fields: StoredFields = visible.types === undefined ? { names: visible.names } : { names: visible.names, types: visible.types };
  const t0 = performance.now();
  const report: RecoveryReport = {
    modelId,
    clean: false,
    scannedBytes: 0,
    truncatedBytes: 0,
    lostRanges: [],
    rebuiltIndexes: 0,
    durationMs: 0,
  };
  if (!fs.existsSync(`${dir}/${MANIFEST_FILE}`) && listSegments(readdirOrEmpty(dir), new Set()).length === 0) {
    const seg = new Segment(1, 1, Date.now());
    const generation = newGeneration();
    const manifest = createModelDirSync(io, dir, seg, fields, generation);
    report.clean = true;
    return { segments: [seg], manifest, report: finish(report, t0), columns: fields, layout: layoutOf(modelId, fields, visible), generation };
  }
  const columns = loadColumnsSync(dir, fields);
  // Before anything is opened: a definition changed outside the API keeps the model closed.
  const layout = layoutOf(modelId, columns, visible);
  removeLeftovers(dir);
  const generation = loadGenerationSync(dir);
  const read = readManifestSync(dir);
  const m = read.manifest;
  const names = fs.readdirSync(dir);
  const compacted = settleCompacted(dir, names);
  const segNos = retireBelow(dir, listSegments(names, compacted), m?.firstSegNo ?? 0);
  dropEmptyTail(dir, segNos, m?.checkpoint, report, compacted);
  const segments = loadSegments(io, dir, segNos, m, report, fields, sealedFds, compacted);
  continueAfterHandedOut(dir, segments, m?.checkpoint.lastId ?? 0, report, sealedFds);
  const manifest = read.manifest ? ManifestWriter.openSync(io, dir, read.seq) : ManifestWriter.createSync(io, dir, manifestOf(segments));
  if (read.manifest) manifest.writeSync(manifestOf(segments));
  reportGaps(segments, report);
  return { segments, manifest, report: finish(report, t0), columns, layout, generation };
}

function finish(report: RecoveryReport, t0: number): RecoveryReport {
  report.durationMs = performance.now() - t0;
  return report;
}

export function manifestOf(segments: readonly Segment[]): Manifest {
  const first = segments[0];
  const active = segments[segments.length - 1];
  return {
    firstSegNo: first.segNo,
    firstId: first.firstId,
    clean: false,
    checkpoint: {
      segNo: active.segNo,
      offset: active.syncedBytes,
      lastFrameCrc: active.syncedBytes === active.bytes ? active.lastFrameCrc : 0,
      lastId: active.lastId,
    },
  };
}

function readdirOrEmpty(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** The segments `names` hold as a `.log`, and those in `compacted` (as a `.zlog`), ascending. */
function listSegments(names: readonly string[], compacted: ReadonlySet<number>): number[] {
  const nos = [...compacted];
  for (const n of names) {
    const no = parseSegmentName(n);
    if (no !== undefined && !compacted.has(no)) nos.push(no);
  }
  return nos.sort((a, b) => a - b);
}

/** A crash during an index or manifest rewrite leaves a .tmp that never became the real file. */
function removeLeftovers(dir: string): void {
  for (const n of fs.readdirSync(dir)) if (n.endsWith('.tmp')) fs.rmSync(`${dir}/${n}`, { force: true });
}

/** Retention advances firstSegNo in the manifest before unlinking: finish the unlinks a crash cut short. */
function retireBelow(dir: string, segNos: number[], firstSegNo: number): number[] {
  const keep = segNos.filter((n) => n >= firstSegNo || n === segNos[segNos.length - 1]);
  for (const n of segNos) {
    if (keep.includes(n)) continue;
    fs.rmSync(`${dir}/${segmentName(n)}`, { force: true });
    fs.rmSync(`${dir}/${compactedName(n)}`, { force: true });
    fs.rmSync(`${dir}/${indexName(n)}`, { force: true });
  }
  return keep;
}

/**
 * A crash during a roll can leave a new segment with no frame: only its header, or torn pages where its
 * first frame should be. Drop it and make the previous segment active again (its stale index goes too),
 * so ids continue from that segment's last frame and an update-last finds its record in the active
 * segment. A first frame the checkpoint vouches for (synced) is corruption, not a torn tail: kept.
 */
function dropEmptyTail(dir: string, segNos: number[], cp: Checkpoint | undefined, report: RecoveryReport, compacted: Set<number>): void {
  let dropped = false;
  while (segNos.length > 1) {
    const last = segNos[segNos.length - 1];
    // Only a sealed segment with frames is ever compacted (loadSegments makes it a `.log` if it is the last).
    if (compacted.has(last)) break;
    const file = `${dir}/${segmentName(last)}`;
    const size = fs.statSync(file).size;
    const synced = cp !== undefined && cp.segNo === last && cp.offset > SEGMENT_HEADER_BYTES;
    if (size > SEGMENT_HEADER_BYTES && (synced || firstFrameValid(file, size))) break;
    dropped = true;
    report.truncatedBytes += nonZeroTail(file, size);
    fs.rmSync(file, { force: true });
    fs.rmSync(`${dir}/${indexName(last)}`, { force: true });
    segNos.pop();
    fs.rmSync(`${dir}/${indexName(segNos[segNos.length - 1])}`, { force: true });
  }
  if (dropped) fsyncDirSync(dir);
}

/** Bytes after the header up to the last non-zero one (zeros written ahead are not data). */
function nonZeroTail(file: string, size: number): number {
  if (size <= SEGMENT_HEADER_BYTES) return 0;
  const fd = fs.openSync(file, 'r');
  try {
    return endOfNonZero(fd, SEGMENT_HEADER_BYTES, size) - SEGMENT_HEADER_BYTES;
  } finally {
    fs.closeSync(fd);
  }
}

function firstFrameValid(file: string, size: number): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(FRAME_HEADER_BYTES);
    if (fs.readSync(fd, head, 0, head.length, SEGMENT_HEADER_BYTES) < head.length) return false;
    const len = Math.min(frameBytes(head, 0), FRAME_BYTES_MAX, size - SEGMENT_HEADER_BYTES);
    const frame = Buffer.alloc(len);
    fs.readSync(fd, frame, 0, len, SEGMENT_HEADER_BYTES);
    return checkFrame(frame, 0, len) > 0;
  } finally {
    fs.closeSync(fd);
  }
}

function loadSegments(
  io: FileIo,
  dir: string,
  segNos: number[],
  m: Manifest | undefined,
  report: RecoveryReport,
  fields: StoredFields,
  sealedFds: SealedFdCache,
  compacted: Set<number>,
): Segment[] {
  if (segNos.length === 0) {
    const seg = new Segment(m?.firstSegNo ?? 1, m?.firstId ?? 1, Date.now());
    void createModelDirSync(io, dir, seg, fields).close();
    return [seg];
  }
  const segments: Segment[] = [];
  let adoptedClean = false;
  for (let i = 0; i < segNos.length; i++) {
    const isActive = i === segNos.length - 1;
    const prev = segments[i - 1];
    if (compacted.has(segNos[i])) {
      const seg = isActive ? undefined : openCompactedSync(dir, segNos[i], sealedFds);
      if (seg !== undefined) {
        segments.push(seg);
        continue;
      }
      inflateSync(dir, segNos[i]);
    }
    const file = `${dir}/${segmentName(segNos[i])}`;
    const fd = fs.openSync(file, 'r+');
    let kept = false;
    try {
      const seg = segmentFromHeader(fd, segNos[i], prev ? prev.lastId + 1 : (m?.firstId ?? 1));
      const size = fs.fstatSync(fd).size;
      if (isActive) {
        adoptedClean = openActive(dir, seg, fd, size, m, report);
        seg.file.attach(fd);
        kept = true;
      } else {
        // One file open at a time: a sealed segment is opened again only when a read needs it.
        openSealed(dir, seg, fd, size, report);
        seg.file.seal(file, sealedFds);
      }
      segments.push(seg);
    } finally {
      if (!kept) fs.closeSync(fd);
    }
  }
  report.clean = adoptedClean && report.rebuiltIndexes === 0;
  return segments;
}

/** A segment whose header is unreadable still holds frames: rewrite the header from what we know. */
function segmentFromHeader(fd: number, segNo: number, fallbackFirstId: number): Segment {
  const buf = Buffer.alloc(SEGMENT_HEADER_BYTES);
  fs.readSync(fd, buf, 0, SEGMENT_HEADER_BYTES, 0);
  const h = decodeSegmentHeader(buf);
  if (h && h.segNo === segNo) return new Segment(segNo, h.firstId, h.createdMs);
  const fixed = { segNo, firstId: fallbackFirstId, createdMs: Date.now() };
  fs.writeSync(fd, encodeSegmentHeader(fixed), 0, SEGMENT_HEADER_BYTES, 0);
  fs.fdatasyncSync(fd);
  return new Segment(segNo, fixed.firstId, fixed.createdMs);
}

/** A segment with a successor was fdatasync'ed before the successor was created: it is sealed on disk. */
function openSealed(dir: string, seg: Segment, fd: number, size: number, report: RecoveryReport): void {
  seg.sealedOnDisk = true;
  const ix = readIndexSync(dir, seg.segNo);
  if (ix && ix.stride !== 1 && applyIndex(seg, ix, size)) return;
  const scan = scanSegment(seg, fd, size, SEGMENT_HEADER_BYTES, size);
  seg.bytes = seg.writtenBytes = seg.syncedBytes = size;
  report.scannedBytes += scan.scannedBytes;
  report.lostRanges.push(...scan.lost);
  report.rebuiltIndexes++;
  seg.seal();
  writeFileAtomicSync(dir, indexName(seg.segNo), encodeIndex(indexOf(seg)));
}

/** True when the clean path applied. */
function openActive(dir: string, seg: Segment, fd: number, size: number, m: Manifest | undefined, report: RecoveryReport): boolean {
  const cp = m?.checkpoint;
  const matches = cp !== undefined && cp.segNo === seg.segNo;
  if (m?.clean && matches && cp.offset === size && adoptCleanIndex(dir, seg, fd, size, cp.lastFrameCrc)) return true;
  const syncedEnd = matches && cp.offset <= size ? cp.offset : SEGMENT_HEADER_BYTES;
  const scan = scanSegment(seg, fd, size, syncedEnd, syncedEnd);
  report.scannedBytes += scan.scannedBytes;
  report.lostRanges.push(...scan.lost);
  if (scan.goodEnd < size) {
    report.truncatedBytes += endOfNonZero(fd, scan.goodEnd, size) - scan.goodEnd;
    fs.ftruncateSync(fd, scan.goodEnd);
  }
  fs.fdatasyncSync(fd);
  seg.bytes = seg.writtenBytes = seg.syncedBytes = scan.goodEnd;
  return false;
}

/** Checks the dense index against the file and the checkpoint before adopting it; the segment is untouched on false. */
function adoptCleanIndex(dir: string, seg: Segment, fd: number, size: number, lastFrameCrc: number): boolean {
  const ix = readIndexSync(dir, seg.segNo);
  if (!ix || ix.stride !== 1 || !indexFits(seg, ix, size)) return false;
  if (ix.lastId < ix.firstId) {
    if (lastFrameCrc !== 0) return false;
  } else {
    const b = Buffer.alloc(4);
    fs.readSync(fd, b, 0, 4, ix.lastFrameOffset + 4);
    if (u32(b, 0) !== lastFrameCrc || ix.lastFrameCrc !== lastFrameCrc) return false;
  }
  return applyIndex(seg, ix, size);
}

/**
 * The checkpoint's lastId was handed out (a reader may have seen it, a client may hold it). When the log
 * now ends before it (a lost tail, a deleted or cut active segment), the ids in between are reported lost
 * and the next id continues after it, in a new active segment, so no id ever names two records.
 */
function continueAfterHandedOut(dir: string, segments: Segment[], handedOutMax: number, report: RecoveryReport, sealedFds: SealedFdCache): void {
  const active = segments[segments.length - 1];
  if (handedOutMax <= active.lastId) return;
  addLostRange(report.lostRanges, active.lastId + 1, handedOutMax);
  const next = new Segment(active.segNo + (active.count > 0 ? 1 : 0), handedOutMax + 1, Date.now());
  const header = { segNo: next.segNo, firstId: next.firstId, createdMs: next.createdMs };
  if (active.count > 0) {
    active.seal();
    writeFileAtomicSync(dir, indexName(active.segNo), encodeIndex(indexOf(active)));
    active.sealedOnDisk = true;
    active.file.seal(`${dir}/${segmentName(active.segNo)}`, sealedFds);
    next.file.attach(createSegmentFileSync(dir, header));
    fsyncDirSync(dir);
    segments.push(next);
    return;
  }
  // An empty active segment takes the new first id in its header instead: no empty segment is ever sealed.
  active.file.retire();
  const fd = fs.openSync(`${dir}/${segmentName(active.segNo)}`, 'r+');
  fs.writeSync(fd, encodeSegmentHeader(header), 0, SEGMENT_HEADER_BYTES, 0);
  fs.fdatasyncSync(fd);
  next.file.attach(fd);
  segments[segments.length - 1] = next;
}

/** Records a lost id range unless a known range already covers it. */
export function addLostRange(ranges: RecoveryReport['lostRanges'], fromId: number, toId: number): void {
  if (!ranges.some((r) => r.fromId <= fromId && r.toId >= toId)) ranges.push({ fromId, toId });
}

/** Ids between two segments that no frame holds were lost (a corrupt tail of a sealed segment). */
function reportGaps(segments: Segment[], report: RecoveryReport): void {
  for (let i = 1; i < segments.length; i++) {
    const a = segments[i - 1];
    const b = segments[i];
    if (b.firstId > a.lastId + 1) addLostRange(report.lostRanges, a.lastId + 1, b.firstId - 1);
  }
}
