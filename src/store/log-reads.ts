/**
 * The reads of one generation of a model's log: pages, time ranges, exports and the newest record. Each
 * holds the segment files it reads from its plan to its last byte (HeldSegments, readPlanned), so a seal,
 * retention or clear in between cannot close them; bytes not yet in the files come from the write buffer.
 */
import type { Generation } from './generation.js';
import { newestRecordId } from './segment.js';
import { HeldSegments, bytesOf, decodeValues, fitRange, planParts, projection, readPlanned, readRange, toView, validatePage } from './reader.js';
import type { LostFn, Projection } from './reader.js';
import { idRangeOf, type IdRange, type TimeRange } from './time-index.js';
import type { FieldLayout } from './field-layout.js';
import type { FileIo } from './file-io.js';
import type { ExportRange, PageQuery, PageResult, RecordView } from './types.js';
import { ITERATE_CHUNK_RECORDS, LATEST_PROJECTIONS_MAX, MIB, PAGE_BYTES_MAX } from './constants.js';
import { InvalidArgumentError } from '../errors.js';

export interface ReadContext {
  io: FileIo;
  /** Which stored column each field reads, at the time of the read. */
  layout: FieldLayout;
  lost: LostFn;
}

/** The ids of the records whose create_at lies in [fromMs, toMs): a binary search (time-index.ts), never a scan. */
export async function idRangeOfTime(cx: ReadContext, g: Generation, range: TimeRange): Promise<IdRange> {
  const held = new HeldSegments(g.segments);
  try {
    return await idRangeOf(cx.io, g.buffer, held.segments, range, cx.lost);
  } finally {
    held.releaseAll();
  }
}

/** One page; undefined when `g` stopped being current (a clear) while the time range was looked up. */
export async function readPage(cx: ReadContext, g: Generation, q: PageQuery, current: () => boolean): Promise<PageResult | undefined> {
  const p = validatePage(q, cx.layout);
  let firstId = g.segments[0].firstId;
  let lastId = newestRecordId(g.segments);
  if (q.fromMs !== undefined || q.toMs !== undefined) {
    ({ firstId, lastId } = await idRangeOfTime(cx, g, q));
    if (!current()) return undefined;
  }
  const total = Math.max(0, lastId - firstId + 1);
  const skip = (q.current - 1) * q.size;
  const lo = q.order === 'asc' ? firstId + skip : Math.max(firstId, lastId - skip - q.size + 1);
  const hi = q.order === 'asc' ? Math.min(lastId, firstId + skip + q.size - 1) : lastId - skip;
  if (lo > hi) return { total, records: [] };
  const plan = planParts(g.segments, lo, hi);
  const bytes = bytesOf(plan);
  if (bytes > PAGE_BYTES_MAX) {
    throw new InvalidArgumentError(
      `size: a page of ${q.size} records here reads ${Math.ceil(bytes / MIB)} MiB of stored records, more than the ` +
        `${PAGE_BYTES_MAX / MIB} MiB a page may; ask for fewer records per page`,
    );
  }
  const recs = await readPlanned(cx.io, g.buffer, plan, cx.lost);
  const records = recs.map((r) => toView(p, r.id, r.ts, decodeValues(r.payload)));
  if (q.order === 'desc') records.reverse();
  return { total, records };
}

/** The newest record, from memory: each projection is made once per record (the HMI polls it). */
export function latestOf(g: Generation, layout: FieldLayout, full: Projection, select?: readonly string[]): RecordView | undefined {
  if (g.lastValues === undefined) return undefined;
  if (select === undefined) {
    g.lastView ??= Object.freeze(toView(full, g.lastId, g.lastTs, g.lastValues));
    return g.lastView;
  }
  if (!Array.isArray(select)) throw new InvalidArgumentError('select must be an array of field names');
  const key = select.join('\u0000');
  let v = g.lastProjected.get(key);
  if (!v) {
    v = Object.freeze(toView(projection(layout, select), g.lastId, g.lastTs, g.lastValues));
    if (g.lastProjected.size >= LATEST_PROJECTIONS_MAX) g.lastProjected.clear();
    g.lastProjected.set(key, v);
  }
  return v;
}

/** Pulls ITERATE_CHUNK_RECORDS at a time over a snapshot (last id, segment list) taken at the start. */
export async function* iterateRecords(cx: ReadContext, g: Generation, range: ExportRange): AsyncGenerator<RecordView, void, undefined> {
  const p = projection(cx.layout, range.select);
  const held = new HeldSegments(g.segments);
  try {
    const segments = held.segments;
    const a = Math.max(range.fromId ?? 1, segments[0].firstId);
    const b = Math.min(range.toId ?? Number.MAX_SAFE_INTEGER, g.nextId - 1);
    for (let lo = a; lo <= b; ) {
      held.releaseBefore(lo);
      const hi = fitRange(segments, lo, Math.min(b, lo + ITERATE_CHUNK_RECORDS - 1), PAGE_BYTES_MAX);
      const recs = await readRange(cx.io, g.buffer, segments, lo, hi, cx.lost);
      for (const r of recs) yield toView(p, r.id, r.ts, decodeValues(r.payload));
      lo = hi + 1;
    }
  } finally {
    held.releaseAll();
  }
}
