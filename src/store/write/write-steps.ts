/**
 * What each of the writer's steps does, apart from when it runs (the lanes: writer.ts): one writev of
 * buffered chunks; an fdatasync of the active segment's file (after a failed one, the bytes it may have
 * dropped are written again first); a seal. Each moves the write buffer's and the lsn counters on when
 * its I/O succeeded. The active file (`fileSeg`) is kept here and changes when a seal has made the next.
 */
import { type FileIo, writeFully } from '../base/file-io.js';
import { type Segment, encodeSegmentHeader, segmentName } from '../segment/segment.js';
import type { MemChunk, WriteBuffer } from './write-buffer.js';
import { writeIndex } from '../segment/index-file.js';
import { PREALLOCATE_BYTES, assert } from '../base/constants.js';
import type { LatencyHistogram } from '../base/latency.js';
import type { Durability } from '../base/types.js';
import type { SealedFdCache } from '../base/sealed-fds.js';
import type { WriteProgress } from './write-progress.js';

export interface WriteStepsOptions {
  dir: string;
  io: FileIo;
  /** `always` preallocates the active file (PREALLOCATE_BYTES), and then seals and closes trim it. */
  durability: Durability;
  /** Zeros written ahead never take a file past this size. */
  segmentBytesMax: number;
  buffer: WriteBuffer;
  /** Observes the duration of every successful fdatasync of a segment file. */
  fsyncLatency?: LatencyHistogram | undefined;
  /** Where a sealed segment's reads open it (the writer's fd is closed at the seal). */
  sealedFds: SealedFdCache;
  progress: WriteProgress;
  /** Resolves the durable() waiters up to `lsn`; returns how many. */
  durableTo: (lsn: number) => number;
  /** Writes the manifest from the current in-memory state (checkpoint after a seal). */
  checkpoint: () => Promise<void>;
  onSealed: () => void;
}

/** Shared by every writer: only ever read (writev copies it into the page cache). */
let zerosAhead: Buffer | undefined;

export class WriteSteps {
  constructor(
    private readonly o: WriteStepsOptions,
    /** The segment whose file receives writes and fdatasyncs. */
    private fileSeg: Segment,
  ) {}

  /** The active file's last fdatasync failed: the next one is due even with nothing new written. */
  get rewriteNeeded(): boolean {
    return this.o.buffer.rewriteNeeded(this.fileSeg);
  }

  /** One writev of consecutive chunks of a segment, the oldest unwritten ones; the buffer keeps them until synced. */
  async write(chunks: MemChunk[]): Promise<void> {
    const seg = chunks[0].seg;
    this.o.buffer.checkNextWrite(chunks);
    assert(seg.file.attached, 'segment file exists before its first write');
    const bufs = new Array<Buffer>(chunks.length);
    for (let i = 0; i < chunks.length; i++) bufs[i] = chunks[i].buf.subarray(0, chunks[i].len);
    const last = chunks[chunks.length - 1];
    const ahead = this.aheadOf(seg, last.base + last.len);
    try {
      const end = await seg.file.use((fd) => writeFully(this.o.io, fd, bufs, chunks[0].base, ahead));
      if (end > seg.fileBytes) seg.fileBytes = end;
    } catch (e) {
      // The cut-back truncates the file to writtenBytes: zeros written ahead go with it.
      seg.fileBytes = seg.writtenBytes;
      throw e;
    }
    this.o.buffer.written(chunks);
    this.o.progress.wrote(chunks[chunks.length - 1].endLsn);
  }

  /** fdatasync of the active file; returns how many durable() waiters it resolved. */
  async syncFile(): Promise<number> {
    const seg = this.fileSeg;
    const progress = this.o.progress;
    // Only bytes whose write completed before the fdatasync starts count as covered by it.
    const lsn = progress.writtenLsn;
    const bytes = seg.writtenBytes;
    await this.sync(seg);
    this.o.buffer.synced(seg, bytes);
    progress.syncedTo(lsn);
    return this.o.durableTo(lsn);
  }

  /**
   * A seal runs alone: `seg` is synced, its index written, then `next`'s file made, which becomes the
   * active file; then the manifest moves on. Stops after the current file operation once `closed()`.
   * A retried seal skips what its first attempt did.
   */
  async seal(seg: Segment, next: Segment, closed: () => boolean): Promise<void> {
    const progress = this.o.progress;
    await this.trim(seg);
    await this.sync(seg);
    this.o.buffer.synced(seg, seg.writtenBytes);
    // Every byte written so far is the old segment's, and now synced.
    progress.syncedTo(progress.writtenLsn);
    this.o.durableTo(progress.syncedLsn);
    if (closed()) return;
    await writeIndex(this.o.io, this.o.dir, seg);
    if (closed()) return;
    if (!next.file.attached) next.file.attach(await this.createSegmentFile(next));
    if (closed()) return;
    this.fileSeg = next;
    if (!seg.sealedOnDisk) seg.file.seal(`${this.o.dir}/${segmentName(seg.segNo)}`, this.o.sealedFds);
    seg.sealedOnDisk = true;
    await this.o.checkpoint();
    this.o.onSealed();
  }

  /**
   * The active file ends at its last frame again, fdatasync'ed (a clean close: recovery adopts a file only
   * when its size is the checkpoint's offset). The writer is idle.
   */
  async trimActive(): Promise<void> {
    const seg = this.fileSeg;
    if (this.o.durability !== 'always' || !seg.file.attached) return;
    await this.trim(seg);
    await seg.file.use((fd) => this.o.io.fdatasync(fd));
  }

  /**
   * Cuts the zeros written ahead (`always`) before a file stops being written: sealed files and the
   * index's data end are exactly the frames. Always cut in that mode, not only when fileBytes says so:
   * a write that failed may have left more than the cut-back could remove.
   */
  private async trim(seg: Segment): Promise<void> {
    // A retried seal finds the file trimmed already (and open read-only).
    if (this.o.durability !== 'always' || seg.sealedOnDisk) return;
    assert(seg.writtenBytes === seg.bytes, 'a file is trimmed once all its frames are written');
    await seg.file.use((fd) => this.o.io.ftruncate(fd, seg.bytes));
    seg.fileBytes = seg.bytes;
  }

  /**
   * The zeros to write after a write's data ending at `end`: under `always` when the data reaches the
   * end of what the file holds, never past segmentBytesMax (a segment rolls before that).
   */
  private aheadOf(seg: Segment, end: number): Buffer | undefined {
    if (this.o.durability !== 'always' || end < seg.fileBytes) return undefined;
    const bytes = Math.min(PREALLOCATE_BYTES, this.o.segmentBytesMax - end);
    if (bytes <= 0) return undefined;
    zerosAhead ??= Buffer.alloc(PREALLOCATE_BYTES);
    return zerosAhead.subarray(0, bytes);
  }

  /** fdatasync of a segment file; after a failed one, the bytes it may have dropped are written again first. */
  private sync(seg: Segment): Promise<void> {
    const buffer = this.o.buffer;
    return seg.file.use(async (fd) => {
      const rewrite = buffer.rewriteNeeded(seg) ? buffer.unsyncedRun(seg) : undefined;
      if (rewrite !== undefined) await writeFully(this.o.io, fd, rewrite.bufs, rewrite.pos);
      try {
        await this.fdatasync(fd);
      } catch (e) {
        buffer.syncFailed(seg);
        throw e;
      }
    });
  }

  private fdatasync(fd: number): Promise<void> {
    const latency = this.o.fsyncLatency;
    return latency === undefined ? this.o.io.fdatasync(fd) : latency.time(() => this.o.io.fdatasync(fd));
  }

  private createSegmentFile(seg: Segment): Promise<number> {
    const header = encodeSegmentHeader({ segNo: seg.segNo, firstId: seg.firstId, createdMs: seg.createdMs });
    return this.o.io.createFile(`${this.o.dir}/${segmentName(seg.segNo)}`, header);
  }
}
