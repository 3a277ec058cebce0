/**
 * Reads: locate segments by id, read one contiguous byte range per segment, verify every frame read back,
 * keep the newest frame of each id, and turn payloads into RecordViews. Cost is O(records asked for).
 */
import { Unpackr } from 'msgpackr';
import { checkFrame, findNextFrame, mayFollowFrame, frameId, frameTs, frameType, FRAME_HEADER_BYTES } from '../format/frame.js';
import type { FileIo } from '../base/file-io.js';
import type { Segment } from '../segment/segment.js';
import type { WriteBuffer } from '../write/write-buffer.js';
import type { PageQuery, RecordView } from '../base/types.js';
import { InvalidArgumentError } from '../../errors.js';
import { PAGE_SIZE_MAX, SPARSE_STRIDE, assert } from '../base/constants.js';
import type { FieldLayout } from '../segment/field-layout.js';

export interface StoredRecord {
  id: number;
  ts: number;
  payload: Buffer;
}

export type LostFn = (fromId: number, toId: number) => void;

/** What reads take from memory: the bytes of a segment that are not (durably) in its file yet. */
export type BufferedBytes = Pick<WriteBuffer, 'copyUnwritten' | 'copyUnsynced'>;

const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

/** Index of the segment holding `id` at its newest version: the last one whose firstId <= id. */
export function segmentIndexOf(segments: readonly Segment[], id: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (segments[mid].firstId <= id) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

export interface Part {
  seg: Segment;
  lo: number;
  hi: number;
  start: number;
  end: number;
}

/** Records with ids in [a, b], ascending, newest version of each; ids lost to corruption are skipped. */
export function readRange(
  io: FileIo,
  buffered: BufferedBytes,
  segments: readonly Segment[],
  a: number,
  b: number,
  lost: LostFn,
): Promise<StoredRecord[]> {
  return readPlanned(io, buffered, planParts(segments, a, b), lost);
}

/**
 * Reads a plan made by planParts. Call it in the same synchronous step as the plan: the files are retained
 * here, before any await, and released by the same captured handles.
 */
export async function readPlanned(io: FileIo, buffered: BufferedBytes, parts: readonly Part[], lost: LostFn): Promise<StoredRecord[]> {
  const out: StoredRecord[] = [];
  await readPlannedFrames(io, buffered, parts, keepInto(out), lost);
  return out;
}

/** readPlanned handing each frame kept to `keep`, in id order, without making a record of it. */
export async function readPlannedFrames(io: FileIo, buffered: BufferedBytes, parts: readonly Part[], keep: KeepFrame, lost: LostFn): Promise<void> {
  const files = parts.map((p) => p.seg.file.retain());
  try {
    for (const p of parts) visitFrames(await readBytes(io, buffered, p), p.lo, p.hi, keep, lost);
  } finally {
    for (const f of files) f.release();
  }
}

/**
 * Bytes [start, end) of a part: what is still in memory is copied synchronously, the part below
 * writtenBytes is read from the file afterwards. The caller holds a reference to the segment's file
 * (taken when it planned the read), so the file is there to open when the segment is sealed and idle.
 */
async function readBytes(io: FileIo, buffered: BufferedBytes, p: Part): Promise<Buffer> {
  const out = Buffer.allocUnsafe(p.end - p.start);
  const fileEnd = buffered.copyUnwritten(p.seg, out, p.start, p.end);
  if (fileEnd > p.start) {
    await p.seg.file.read(io, out, 0, fileEnd - p.start, p.start);
    buffered.copyUnsynced(p.seg, out, p.start, fileEnd);
  }
  return out;
}

/**
 * readBytes without the thread pool, for a few KiB mostly in the page cache (summary blocks: aggregate.ts's
 * across bucket edges, block-checksum.ts's when summarised), into one buffer it reuses. The caller holds the
 * segment's file.
 */
export class SyncBytesReader {
  private scratch = Buffer.alloc(0);

  constructor(private readonly buffered: BufferedBytes) {}

  /** Bytes [start, end) of `seg`, valid until the next read. */
  read(seg: Segment, start: number, end: number): Buffer {
    if (this.scratch.length < end - start) this.scratch = Buffer.allocUnsafe(Math.max(end - start, 2 * this.scratch.length));
    const out = this.scratch.subarray(0, end - start);
    const fileEnd = this.buffered.copyUnwritten(seg, out, start, end);
    if (fileEnd <= start) return out;
    seg.file.readSync(out, 0, fileEnd - start, start);
    this.buffered.copyUnsynced(seg, out, start, fileEnd);
    return out;
  }
}

/**
 * The segments an export reads, taken when it starts (the list is copied, each file retained) and let go
 * one by one as the export passes them, so that a clear, drop or close in the middle keeps open only the
 * files the export has still to read (see SegmentFile.retire).
 */
export class HeldSegments {
  readonly segments: readonly Segment[];
  private released = 0;

  constructor(segments: readonly Segment[]) {
    this.segments = segments.slice();
    for (const s of this.segments) s.file.retain();
  }

  /** Reads from `id` on never plan a segment before the one holding it (planParts starts there). */
  releaseBefore(id: number): void {
    const first = segmentIndexOf(this.segments, id);
    while (this.released < first) this.segments[this.released++].file.release();
  }

  releaseAll(): void {
    while (this.released < this.segments.length) this.segments[this.released++].file.release();
  }
}

/**
 * Stored bytes of the records with ids [a, b]. A sealed segment's sparse index gives byte ranges of whole
 * groups of SPARSE_STRIDE ids, so its share is prorated by the ids asked for.
 */
function plannedBytes(segments: readonly Segment[], a: number, b: number): number {
  return bytesOf(planParts(segments, a, b));
}

export function bytesOf(parts: readonly Part[]): number {
  let n = 0;
  for (const p of parts) {
    const covered = p.seg.sparse ? coveredIds(p.seg, p.lo, p.hi) : p.hi - p.lo + 1;
    n += ((p.end - p.start) * (p.hi - p.lo + 1)) / covered;
  }
  return Math.ceil(n);
}

function coveredIds(seg: Segment, lo: number, hi: number): number {
  const from = seg.firstId + Math.floor((lo - seg.firstId) / SPARSE_STRIDE) * SPARSE_STRIDE;
  const to = Math.min(seg.lastId, seg.firstId + (Math.floor((hi - seg.firstId) / SPARSE_STRIDE) + 1) * SPARSE_STRIDE - 1);
  return to - from + 1;
}

/** The highest hi in [a, b] whose read of [a, hi] fits in `bytesMax`; `a` itself always fits. */
export function fitRange(segments: readonly Segment[], a: number, b: number, bytesMax: number): number {
  if (plannedBytes(segments, a, b) <= bytesMax) return b;
  let lo = a;
  let hi = b - 1;
  while (lo < hi) {
    const mid = lo + Math.ceil((hi - lo) / 2);
    if (plannedBytes(segments, a, mid) <= bytesMax) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** Synchronous, so the byte ranges are taken from one consistent state of the index. */
export function planParts(segments: readonly Segment[], a: number, b: number): Part[] {
  const parts: Part[] = [];
  for (let i = segmentIndexOf(segments, a); i < segments.length && segments[i].firstId <= b; i++) {
    const seg = segments[i];
    const effEnd = i + 1 < segments.length ? Math.min(seg.lastId, segments[i + 1].firstId - 1) : seg.lastId;
    const lo = Math.max(a, seg.firstId);
    const hi = Math.min(b, effEnd);
    if (lo > hi) continue;
    const [start, end] = seg.byteRange(lo, hi);
    parts.push({ seg, lo, hi, start, end });
  }
  return parts;
}

/**
 * Receives each frame a walk keeps: `bytes` long at `off` in `buf`, CRC-checked. `again`: it has the id of
 * the frame kept just before (an update-last), and replaces it.
 */
export type KeepFrame = (buf: Buffer, off: number, bytes: number, id: number, again: boolean) => void;

/** Keeps the newest frame of each id in [lo, hi] in `out` (see visitFrames). */
export function walkFrames(buf: Buffer, lo: number, hi: number, out: StoredRecord[], lost: LostFn): void {
  visitFrames(buf, lo, hi, keepInto(out), lost);
}

function keepInto(out: StoredRecord[]): KeepFrame {
  return (buf, off, bytes, id, again) => {
    const rec = { id, ts: frameTs(buf, off), payload: buf.subarray(off + FRAME_HEADER_BYTES, off + bytes) };
    if (again) out[out.length - 1] = rec;
    else out.push(rec);
  };
}

/**
 * Hands the frames of ids in [lo, hi] to `keep`, in id order. Every frame read back is checked again: its
 * CRC, and its id against the frame before it (mayFollowFrame, as the scan at open does). A frame failing
 * either is corruption: the walk resynchronises on the next valid frame and reports the ids in between lost.
 */
export function visitFrames(buf: Buffer, lo: number, hi: number, keep: KeepFrame, lost: LostFn): void {
  let off = 0;
  let lastSeen = lo - 1;
  /** Id of the frame just walked; 0 at the start of the range and after a resync (no rule to check). */
  let prevId = 0;
  while (off < buf.length) {
    const n = checkFrame(buf, off, buf.length);
    const id = n > 0 ? frameId(buf, off) : 0;
    if (n <= 0 || (prevId > 0 && !mayFollowFrame(prevId, frameType(buf, off), id))) {
      const next = findNextFrame(buf, off, buf.length, lastSeen + 1);
      const nextId = next >= 0 ? frameId(buf, next) : hi + 1;
      if (nextId - 1 >= Math.max(lo, lastSeen + 1)) lost(Math.max(lo, lastSeen + 1), Math.min(hi, nextId - 1));
      if (next < 0) return;
      off = next;
      prevId = 0;
      continue;
    }
    if (id >= lo && id <= hi) {
      assert(id >= lastSeen, 'records come out in id order');
      keep(buf, off, n, id, id === lastSeen);
      lastSeen = id;
    }
    prevId = id;
    off += n;
  }
}

export function decodeValues(payload: Buffer): unknown[] {
  const v: unknown = unpackr.unpack(payload);
  if (!Array.isArray(v)) throw new Error('store invariant violated: payload is not a value array');
  return v;
}

/** Which keys of a RecordView to build, in canonical order. */
export interface Projection {
  id: boolean;
  createAt: boolean;
  /** The stored column of each key (field-layout.ts). */
  fields: number[];
  names: readonly string[];
  /** What a key reads when the record predates its column. */
  defaults: readonly unknown[];
}

/** Checks a page query; returns its projection. */
export function validatePage(q: PageQuery, layout: FieldLayout): Projection {
  if (!Number.isSafeInteger(q?.current) || q.current < 1) {
    throw new InvalidArgumentError(`current must be an integer >= 1, got ${String(q?.current)}`);
  }
  if (!Number.isSafeInteger(q.size) || q.size < 1 || q.size > PAGE_SIZE_MAX) {
    throw new InvalidArgumentError(`size must be an integer in [1, ${PAGE_SIZE_MAX}], got ${String(q.size)}`);
  }
  if (q.order !== 'asc' && q.order !== 'desc') throw new InvalidArgumentError(`order must be asc or desc, got ${String(q.order)}`);
  return projection(layout, q.select);
}

export function projection(layout: FieldLayout, select: readonly string[] | undefined): Projection {
  const { names, columns, defaults } = layout;
  if (select === undefined) return { id: true, createAt: true, fields: [...columns], names, defaults };
  if (!Array.isArray(select)) throw new InvalidArgumentError('select must be an array of field names');
  const wanted = new Set(select);
  for (const name of wanted) {
    if (name !== 'id' && name !== 'create_at' && !names.includes(name)) {
      throw new InvalidArgumentError(`select: unknown field ${JSON.stringify(name)}`);
    }
  }
  const kept = names.map((_, i) => i).filter((i) => wanted.has(names[i]));
  return {
    id: wanted.has('id'),
    createAt: wanted.has('create_at'),
    fields: kept.map((i) => columns[i]),
    names: kept.map((i) => names[i]),
    defaults: kept.map((i) => defaults[i]),
  };
}

export function toView(p: Projection, id: number, ts: number, values: readonly unknown[]): RecordView {
  const view: RecordView = {};
  if (p.id) view.id = id;
  if (p.createAt) view.create_at = ts;
  for (let k = 0; k < p.fields.length; k++) {
    const v = values[p.fields[k]];
    view[p.names[k]] = v === undefined ? (p.defaults[k] ?? null) : v;
  }
  return view;
}
