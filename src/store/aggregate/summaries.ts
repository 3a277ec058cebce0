/**
 * Per-segment summaries for aggregation (contract 10): for every block of SUMMARY_BLOCK_RECORDS ids (the
 * sparse index's groups, so a block is one contiguous byte range) the records' min/max create_at, their
 * number, and per field count/min/max/sum/first/last (stats-table.ts).
 *
 * A summary is derived data. It is built from reads of the log, never from the write path: the first
 * aggregation that needs a segment reads it once (a sealed segment: from its `seg-N.sum` file when that
 * describes it, else from the segment, then the file is written; the active segment: from the segment),
 * each record's values taken from its payload bytes (summary-fold.ts), and each later aggregation folds only
 * the records written since. Only ids below the model's newest
 * record are folded, because update-last may still change the newest one (the aggregation takes it from
 * memory). Each block gets the checksum of its bytes once complete (block-checksum.ts). Records lost to
 * corruption are not in a summary, as they are not in a page. A summary
 * belongs to its Segment object, so retention, clear and close drop it with the segment; retention also
 * removes the file (retention.ts), and files of segments that are gone otherwise are removed when a
 * model's summaries are first used.
 */
import fs from 'node:fs';
import { HeldSegments, fitRange, planParts, readPlannedFrames, type BufferedBytes, type LostFn } from '../read/reader.js';
import { SummaryFolder } from './summary-fold.js';
import type { Segment } from '../segment/segment.js';
import type { FileIo } from '../base/file-io.js';
import { decodeSummary, encodeSummary, parseSummaryName, summaryName } from './summary-file.js';
import { SegmentSummary } from './segment-summary.js';
import { checksumBlocks } from './block-checksum.js';
import { PAGE_BYTES_MAX } from '../base/constants.js';
import { SerialQueue } from '../../util/atomic-file.js';

/** The last id a segment's summary covers: its last id not shadowed by the next segment (update-last roll). */
export function effectiveEnd(segments: readonly Segment[], i: number): number {
  const seg = segments[i];
  return i + 1 < segments.length ? Math.min(seg.lastId, segments[i + 1].firstId - 1) : seg.lastId;
}

/** One model generation's summaries. */
export class SummaryBook {
  private readonly bySegment = new WeakMap<Segment, SegmentSummary>();
  /** Catch-ups run one at a time, so two aggregations never fold the same records twice. */
  private readonly queue = new SerialQueue();
  private swept = false;

  constructor(
    private readonly io: FileIo,
    /** The generation's write buffer: reads copy the bytes not yet in the files from it. */
    private readonly buffered: BufferedBytes,
    private readonly dir: string,
    private readonly fieldCount: number,
    private readonly lost: LostFn,
    /** False once the generation is replaced (clear): its files must not be written into the new directory. */
    private readonly current: () => boolean,
  ) {}

  /** Memory held by the summaries of `segments` (see SegmentSummary.bytes). */
  bytes(segments: readonly Segment[]): number {
    let n = 0;
    for (const seg of segments) n += this.bySegment.get(seg)?.bytes() ?? 0;
    return n;
  }

  /** Summaries of `segments[i]` for each i in `which`, covering every id below `newestId` (exclusive). */
  ensure(held: HeldSegments, which: readonly number[], newestId: number): Promise<SegmentSummary[]> {
    return this.queue.run(async () => {
      if (!this.swept) await this.sweep(held.segments);
      const out: SegmentSummary[] = [];
      for (const i of which) out.push(await this.ensureOne(held.segments, i, newestId));
      return out;
    });
  }

  private async ensureOne(segments: readonly Segment[], i: number, newestId: number): Promise<SegmentSummary> {
    const seg = segments[i];
    const end = effectiveEnd(segments, i);
    let s = this.bySegment.get(seg);
    if (!s && seg.sealedOnDisk) s = await this.load(seg, end);
    s ??= new SegmentSummary(seg.firstId, this.fieldCount);
    this.bySegment.set(seg, s);
    const target = Math.min(end, newestId - 1);
    const folder = new SummaryFolder(s);
    for (let lo = s.coveredTo + 1; lo <= target; ) {
      const hi = fitRange(segments, lo, target, PAGE_BYTES_MAX);
      await readPlannedFrames(this.io, this.buffered, planParts(segments, lo, hi), folder.keep, this.lost);
      folder.finish();
      s.coveredTo = hi;
      lo = hi + 1;
    }
    const whole = i + 1 < segments.length && s.coveredTo === end;
    // A summary read from a file of the first version has no checksums: written again once it has them.
    if ((await checksumBlocks(this.buffered, seg, s, whole)) > 0 && whole) s.persisted = false;
    if (!s.persisted && seg.sealedOnDisk && s.coveredTo === end && this.current()) {
      s.persisted = true;
      // Not awaited: a failed write only means the next open builds it again.
      this.io.replaceFile(`${this.dir}/${summaryName(seg.segNo)}`, encodeSummary(s, seg)).catch(() => (s.persisted = false));
    }
    return s;
  }

  private async load(seg: Segment, end: number): Promise<SegmentSummary | undefined> {
    let b: Buffer;
    try {
      b = await fs.promises.readFile(`${this.dir}/${summaryName(seg.segNo)}`);
    } catch {
      return undefined;
    }
    const s = decodeSummary(b, seg, end, this.fieldCount);
    if (s) s.persisted = true;
    return s;
  }

  /** Summary files of segments that retention, recovery or a crash removed. */
  private async sweep(segments: readonly Segment[]): Promise<void> {
    this.swept = true;
    const live = new Set(segments.map((s) => s.segNo));
    let names: string[];
    try {
      names = await fs.promises.readdir(this.dir);
    } catch {
      return;
    }
    for (const n of names) {
      const no = parseSummaryName(n);
      if (no !== undefined && !live.has(no) && this.current()) await this.io.remove(`${this.dir}/${n}`);
    }
  }
}
