/**
 * The reads of one generation of a model's log: pages, time ranges, exports and the newest record. Each
 * holds the segment files it reads from its plan to its last byte (HeldSegments, readPlanned), so a seal,
 * retention or clear in between cannot close them; bytes not yet in the files come from the write buffer.
 */
import type { Generation } from './generation.js';
import { newestRecordId } from '../segment/segment.js';
import { HeldSegments, bytesOf, decodeValues, fitRange, planParts, projection, readPlanned, readPlannedFrames, readRange, toView, validatePage } from '../read/reader.js';
import type { LostFn, Part, Projection } from '../read/reader.js';
import { JsonOut } from '../read/json-out.js';
import { RecordJson, type Stamp } from '../read/record-json.js';
import { LinePrinter, type KeptFrames, type LineFormat, type RecordLines } from '../read/record-lines.js';
import { idRangeOf, type IdRange, type TimeRange } from '../read/time-index.js';
import { nextStoredId, storedIdCount, storedIdDown, storedIdUp } from '../segment/id-spans.js';
import type { FieldLayout } from '../segment/field-layout.js';
import type { FileIo } from '../base/file-io.js';
import type { ExportRange, PageJson, PageQuery, PageResult, RecordView } from '../base/types.js';
import { ITERATE_CHUNK_RECORDS, LATEST_PROJECTIONS_MAX, LINES_RECORDS_MAX, MIB, PAGE_BYTES_MAX, assert } from '../base/constants.js';
import { InvalidArgumentError } from '../../errors.js';

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

/** The ids a page reads and the byte ranges holding them; undefined when `g` stopped being current. */
interface PagePlan {
  total: number;
  parts: Part[];
}

async function planPage(cx: ReadContext, g: Generation, q: PageQuery, current: () => boolean): Promise<PagePlan | undefined> {
  let firstId = g.segments[0].firstId;
  let lastId = newestRecordId(g.segments);
  if (q.fromMs !== undefined || q.toMs !== undefined) {
    ({ firstId, lastId } = await idRangeOfTime(cx, g, q));
    if (!current()) return undefined;
  }
  // By rank over the runs of stored ids (id-spans.ts): a restored gap between two ids is no records.
  const total = lastId < firstId ? 0 : storedIdCount(g.segments, firstId, lastId);
  const skip = (q.current - 1) * q.size;
  if (skip >= total) return { total, parts: [] };
  const lastRank = Math.min(total - 1, skip + q.size - 1);
  const asc = q.order === 'asc';
  const lo = asc ? storedIdUp(g.segments, firstId, skip) : storedIdDown(g.segments, lastId, lastRank);
  const hi = asc ? storedIdUp(g.segments, firstId, lastRank) : storedIdDown(g.segments, lastId, skip);
  assert(lo !== undefined && hi !== undefined && lo <= hi, 'a page inside the total has stored ids at both ends');
  const parts = planParts(g.segments, lo, hi);
  const bytes = bytesOf(parts);
  if (bytes > PAGE_BYTES_MAX) {
    throw new InvalidArgumentError(
      `size: a page of ${q.size} records here reads ${Math.ceil(bytes / MIB)} MiB of stored records, more than the ` +
        `${PAGE_BYTES_MAX / MIB} MiB a page may; ask for fewer records per page`,
    );
  }
  return { total, parts };
}

/** One page; undefined when `g` stopped being current (a clear) while the time range was looked up. */
export async function readPage(cx: ReadContext, g: Generation, q: PageQuery, current: () => boolean): Promise<PageResult | undefined> {
  const p = validatePage(q, cx.layout);
  const plan = await planPage(cx, g, q, current);
  if (plan === undefined) return undefined;
  const recs = await readPlanned(cx.io, g.buffer, plan.parts, cx.lost);
  const records = recs.map((r) => toView(p, r.id, r.ts, decodeValues(r.payload)));
  if (q.order === 'desc') records.reverse();
  return { total: plan.total, records };
}

/** The printer of every field, per layout (a new layout comes with every attribute change). */
const fullPrinters = new WeakMap<FieldLayout, RecordJson>();

function printerOf(layout: FieldLayout, q: PageQuery): RecordJson {
  const p = validatePage(q, layout);
  if (q.select !== undefined) return new RecordJson(p);
  let printer = fullPrinters.get(layout);
  if (printer === undefined) {
    printer = new RecordJson(p);
    fullPrinters.set(layout, printer);
  }
  return printer;
}

/**
 * readPage as JSON text: the JSON array of the page's records, printed from the frames read (record-json.ts)
 * with no RecordView in between; the same text as JSON.stringify of readPage's records with create_at
 * stamped (formatRecord).
 */
export async function readPageJson(cx: ReadContext, g: Generation, q: PageQuery, stamp: Stamp, current: () => boolean): Promise<PageJson | undefined> {
  const printer = printerOf(cx.layout, q);
  const plan = await planPage(cx, g, q, current);
  if (plan === undefined) return undefined;
  const { bufs, offs, lens, count: n, frameBytes } = await readKeptFrames(cx, g, plan.parts);
  const out = new JsonOut(2 * frameBytes + n * printer.keyBytes + 2);
  out.ascii('[');
  for (let k = 0; k < n; k++) {
    const i = q.order === 'desc' ? n - 1 - k : k;
    if (k > 0) out.ascii(',');
    printer.write(out, bufs[i], offs[i], lens[i], stamp);
  }
  out.ascii(']');
  return { total: plan.total, json: out.buf.subarray(0, out.pos) };
}

function keptFrames(framesMax: number): KeptFrames {
  return { bufs: new Array<Buffer>(framesMax), offs: new Int32Array(framesMax), lens: new Int32Array(framesMax), count: 0, frameBytes: 0 };
}

/** The frames of a plan, newest version of each id, in id order (readPlanned without making records of them). */
async function readKeptFrames(cx: ReadContext, g: Generation, parts: readonly Part[]): Promise<KeptFrames> {
  let idsAsked = 0;
  for (const p of parts) idsAsked += p.hi - p.lo + 1;
  const kept = keptFrames(idsAsked);
  await readPlannedFrames(
    cx.io,
    g.buffer,
    parts,
    (buf, off, bytes, _id, again) => {
      if (again) kept.frameBytes -= kept.lens[--kept.count];
      const k = kept.count++;
      assert(k < idsAsked, 'a read keeps one frame per id asked');
      kept.bufs[k] = buf;
      kept.offs[k] = off;
      kept.lens[k] = bytes;
      kept.frameBytes += bytes;
    },
    cx.lost,
  );
  return kept;
}

/** The printer of each line format (the uplink keeps one per generation it ships), for the layout it was made under. */
const linePrinters = new WeakMap<LineFormat, LinePrinter>();

/**
 * The records fromId..toId as lines of `format` (record-lines.ts), printed from the frames read, with no
 * RecordView in between. Ids retention removed are only ever missing at the start (one plan, made in this
 * turn, holds its files to the end); ids lost to corruption are missing and reported. A read stops after
 * LINES_RECORDS_MAX ids or PAGE_BYTES_MAX stored bytes (at least one id is read): `throughId` says where.
 */
export async function readLines(cx: ReadContext, g: Generation, fromId: number, toId: number, format: LineFormat): Promise<RecordLines> {
  if (!Number.isSafeInteger(fromId) || !Number.isSafeInteger(toId) || fromId < 1) {
    throw new InvalidArgumentError(`lines: ids must be integers >= 1, got ${fromId}..${toId}`);
  }
  let printer = linePrinters.get(format);
  if (printer === undefined || printer.layout !== cx.layout) {
    printer = new LinePrinter(cx.layout, format);
    linePrinters.set(format, printer);
  }
  const a = nextStoredId(g.segments, fromId);
  const end = Math.min(toId, newestRecordId(g.segments));
  if (a === undefined || a > end) return printer.print(keptFrames(0), toId);
  const hi = fitRange(g.segments, a, Math.min(end, a + LINES_RECORDS_MAX - 1), PAGE_BYTES_MAX);
  const frames = await readKeptFrames(cx, g, planParts(g.segments, a, hi));
  return printer.print(frames, hi < end ? hi : toId);
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
    const b = Math.min(range.toId ?? Number.MAX_SAFE_INTEGER, g.nextId - 1);
    // Chunk by chunk, stepping over any gap between runs of ids (id-spans.ts): the cost follows the records.
    for (let lo = nextStoredId(segments, range.fromId ?? 1); lo !== undefined && lo <= b; ) {
      held.releaseBefore(lo);
      const hi = fitRange(segments, lo, Math.min(b, lo + ITERATE_CHUNK_RECORDS - 1), PAGE_BYTES_MAX);
      const recs = await readRange(cx.io, g.buffer, segments, lo, hi, cx.lost);
      for (const r of recs) yield toView(p, r.id, r.ts, decodeValues(r.payload));
      lo = nextStoredId(segments, hi + 1);
    }
  } finally {
    held.releaseAll();
  }
}
