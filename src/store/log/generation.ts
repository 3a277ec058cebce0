/**
 * One incarnation of a model's log (clear() starts a new one): its segments, writer (with the write
 * buffer) and manifest, and the newest record. Appends happen here: a frame's id and timestamp are checked
 * against the log before it is made (the reads check them again: reader.ts walkFrames, scan.ts), the
 * active segment rolls when it is full or old, and the write buffer takes the bytes.
 */
import { FRAME_HEADER_BYTES, FRAME_SAVE, FRAME_SUPERSEDE, type FrameType, checkFrame, followsFrame, frameId, frameTs } from '../format/frame.js';
import { Segment, newestRecordId } from '../segment/segment.js';
import { totalBytes } from '../retention/retention.js';
import { storedIdCount } from '../segment/id-spans.js';
import { Writer, type WriterOptions } from '../write/writer.js';
import type { WriteBuffer } from '../write/write-buffer.js';
import type { ManifestWriter } from '../segment/manifest.js';
import { manifestOf } from '../recovery/recovery.js';
import { decodeValues } from '../read/reader.js';
import { writeIndex } from '../segment/index-file.js';
import { RECORD_BYTES_MAX, assert } from '../base/constants.js';
import type { ModelLogStats, RecordView, StoreOptions } from '../base/types.js';

/** The largest buffer of packed records the newest record keeps a view of (appendPacked); per model log. */
const LAST_PACKED_SHARED_BYTES_MAX = 64 * 1024;

export interface GenerationConfig extends Omit<WriterOptions, 'checkpoint' | 'durability' | 'syncIntervalMs' | 'segmentBytesMax'> {
  options: StoreOptions;
  /** Whether ids [fromId, toId] were reported lost (recovery): a SAVE may continue after such a gap. */
  gapReported: (fromId: number, toId: number) => boolean;
}

export class Generation {
  readonly writer: Writer;
  /** The writer's: frames go in here, reads copy the bytes not yet in the files from here. */
  readonly buffer: WriteBuffer;
  /** Created with the directory; undefined while a cleared model waits for its new one. */
  manifest: ManifestWriter | undefined;
  /** The id the next SAVE takes: past ids lost at the tail, so an id is never handed out twice. */
  nextId: number;
  lastTs: number;
  /** Id of the newest record (0 when there is none). */
  lastId = 0;
  /** The newest record's values, or (appendPacked) its payload bytes lastPacked[start, end), decoded when read. */
  private lastValuesHeld: unknown[] | undefined;
  private lastPacked: Buffer | undefined;
  private lastPackedStart = 0;
  private lastPackedEnd = 0;
  lastView: RecordView | undefined;
  lastProjected = new Map<string, RecordView>();

  constructor(
    private readonly c: GenerationConfig,
    /** GENERATION of the directory (generation-file.ts): a clear starts the next one at once. */
    readonly name: string,
    readonly segments: Segment[],
    manifest: ManifestWriter | undefined,
    waitingForDir: boolean,
  ) {
    const active = segments[segments.length - 1];
    this.manifest = manifest;
    this.nextId = Math.max(active.firstId, ...segments.map((s) => s.lastId + 1));
    this.lastTs = Math.max(0, ...segments.map((s) => s.maxTs));
    const { options, gapReported, ...writer } = c;
    this.writer = new Writer(
      {
        ...writer,
        durability: options.durability,
        syncIntervalMs: options.syncIntervalMs,
        segmentBytesMax: options.segmentBytesMax,
        checkpoint: () => (this.manifest ? this.manifest.write(() => manifestOf(this.segments)) : Promise.resolve()),
      },
      active,
      waitingForDir,
    );
    this.buffer = this.writer.buffer;
  }

  /** Appends a frame of `values` (encoded as `payload`); returns its id. The record is readable at once. */
  append(type: FrameType, id: number, ts: number, values: unknown[], payload: Buffer): number {
    const seg = this.segments[this.segments.length - 1];
    this.checkNext(seg, type, id, ts, payload.length);
    if (type !== FRAME_SUPERSEDE || !this.buffer.rewriteLast(seg, id, ts, payload)) this.frame(seg, type, id, ts, payload, 0, payload.length);
    return this.setLast(id, ts, values);
  }

  /**
   * append() of a SAVE whose payload is bytes[start, end), values the caller checked (value-pack.ts
   * packedArrayFits) and did not decode: lastValues decodes them when it is read.
   */
  appendPacked(id: number, ts: number, bytes: Buffer, start: number, end: number): number {
    const seg = this.segments[this.segments.length - 1];
    this.checkNext(seg, FRAME_SAVE, id, ts, end - start);
    this.frame(seg, FRAME_SAVE, id, ts, bytes, start, end);
    this.setLast(id, ts, undefined);
    // Held until the next record: the batch's buffer when small (a task's records, tens of KiB), else a
    // copy of the record's bytes, so that a model gone quiet keeps no large batch alive.
    const shared = bytes.length <= LAST_PACKED_SHARED_BYTES_MAX;
    this.lastPacked = shared ? bytes : Buffer.from(bytes.subarray(start, end));
    this.lastPackedStart = shared ? start : 0;
    this.lastPackedEnd = shared ? end : end - start;
    return id;
  }

  get lastValues(): unknown[] | undefined {
    if (this.lastPacked !== undefined) {
      this.lastValuesHeld = decodeValues(this.lastPacked.subarray(this.lastPackedStart, this.lastPackedEnd));
      this.lastPacked = undefined;
    }
    return this.lastValuesHeld;
  }

  set lastValues(values: unknown[] | undefined) {
    this.lastValuesHeld = values;
    this.lastPacked = undefined;
  }

  private frame(active: Segment, type: FrameType, id: number, ts: number, payload: Buffer, start: number, end: number): void {
    const bytes = FRAME_HEADER_BYTES + end - start;
    const seg = this.shouldRoll(active, bytes, ts) ? this.roll(id, ts) : active;
    this.buffer.append(seg, type, id, ts, payload, start, end);
    if (type === FRAME_SAVE) this.nextId = id + 1;
  }

  /**
   * The next SAVE takes `id`, past the next id (restore and import keep the ids of the source): the gap
   * starts a new segment, as ids lost to corruption do, so the frames within a segment stay contiguous.
   */
  skipTo(id: number, ts: number): void {
    const active = this.segments[this.segments.length - 1];
    assert(id > this.nextId && active.count > 0, 'a skip goes forward, from a segment with records');
    this.roll(id, ts);
    this.nextId = id;
  }

  /** The newest record, decoded once at open so latest() never does I/O. */
  loadNewest(): void {
    // From the newest segment: an updateLast that rolled the segment leaves the id in two segments, and
    // the newer one holds its newest version (readRange reads it from there too).
    // Ids lost at the tail (see continueAfterHandedOut) may sit between it and nextId.
    let seg: Segment | undefined;
    for (let i = this.segments.length - 1; i >= 0 && seg === undefined; i--) if (this.segments[i].count > 0) seg = this.segments[i];
    if (!seg?.file.attached) return;
    const b = Buffer.alloc(seg.bytes - seg.lastFrameOffset);
    const at = seg.lastFrameOffset;
    seg.file.readSync(b, 0, b.length, at);
    const n = checkFrame(b, 0, b.length);
    if (n <= 0) return;
    this.lastValues = decodeValues(b.subarray(FRAME_HEADER_BYTES, n));
    this.lastId = frameId(b, 0);
    this.lastTs = Math.max(this.lastTs, frameTs(b, 0));
  }

  /** What stats() says of this incarnation: its ids, segments and bytes. */
  counts(): Pick<ModelLogStats, 'total' | 'firstId' | 'lastId' | 'nextId' | 'oldestTs' | 'segments' | 'bytes' | 'pendingSyncBytes'> {
    const firstId = this.segments[0].firstId;
    const lastId = newestRecordId(this.segments);
    // Retention removes whole segments, so the oldest create_at is the first of the head segment.
    const head = this.segments.find((s) => s.count > 0);
    return {
      total: lastId < firstId ? 0 : storedIdCount(this.segments, firstId, lastId),
      firstId,
      lastId,
      nextId: this.nextId,
      ...(head === undefined ? {} : { oldestTs: head.minTs }),
      segments: this.segments.length,
      bytes: totalBytes(this.segments),
      pendingSyncBytes: this.writer.pendingSyncBytes,
    };
  }

  /** fdatasync, then the manifest records how far the active segment is synced (see ModelLog.checkpoint). */
  async checkpoint(): Promise<void> {
    this.buffer.releaseIfIdle();
    if (this.writer.state !== 'ok' || !this.manifest) return;
    await this.writer.requestSync();
    await this.manifest.write(() => manifestOf(this.segments));
  }

  /** Flush, fdatasync, index of the active segment and a clean manifest: the next open does not scan. */
  async close(): Promise<void> {
    const drained = await this.writer.drain();
    this.writer.close();
    if (drained && this.manifest) {
      await this.writer.trimActive();
      await writeIndex(this.c.io, this.c.dir, this.segments[this.segments.length - 1]);
      await this.manifest.write(() => ({ ...manifestOf(this.segments), clean: true }));
    }
    await this.release();
  }

  /** Gives up the generation's references: an export holding its own may still read (see SegmentFile.retire). */
  async release(): Promise<void> {
    for (const s of this.segments) s.file.retire();
    await this.manifest?.close();
  }

  /**
   * The rules a frame meets before it is made (kept to a few checks: this runs for every record). A SAVE
   * takes nextId: the id after the newest record, or after a gap that recovery reported; a SUPERSEDE
   * repeats the newest id and its timestamp. Either follows the last frame of the active segment
   * (followsFrame; a roll starts the next segment at the same id). Timestamps are finite (a SAVE's may
   * step back once after a large clock step: age-clock.ts); the size is within the record limit.
   */
  private checkNext(active: Segment, type: FrameType, id: number, ts: number, payloadBytes: number): void {
    assert(payloadBytes <= RECORD_BYTES_MAX && Number.isFinite(ts) && followsFrame(active.lastId, type, id), 'a frame fits, and follows the one before it');
    if (type === FRAME_SUPERSEDE) {
      assert(id === this.lastId && id === this.nextId - 1 && ts === this.lastTs, 'a SUPERSEDE repeats the newest id and its timestamp');
    } else {
      const afterNewest = id === this.lastId + 1 || this.lastId === 0 || (active.count === 0 && id === active.firstId) || this.c.gapReported(this.lastId + 1, id - 1);
      assert(id === this.nextId && afterNewest, 'a SAVE takes the next id, skipping only ids reported lost or skipped to (skipTo)');
    }
  }

  private setLast(id: number, ts: number, values: unknown[] | undefined): number {
    this.lastId = id;
    this.lastTs = ts;
    this.lastValues = values;
    this.lastView = undefined;
    if (this.lastProjected.size > 0) this.lastProjected = new Map();
    return id;
  }

  private shouldRoll(seg: Segment, bytes: number, ts: number): boolean {
    if (seg.count <= 0) return false;
    const o = this.c.options;
    return seg.bytes + bytes > o.segmentBytesMax || ts - seg.minTs >= o.segmentAgeMsMax;
  }

  private roll(firstId: number, ts: number): Segment {
    const old = this.segments[this.segments.length - 1];
    old.seal();
    const next = new Segment(old.segNo + 1, firstId, ts);
    this.segments.push(next);
    this.writer.roll(old, next);
    return next;
  }
}
