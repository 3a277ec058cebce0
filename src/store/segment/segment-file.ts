/**
 * The file of one segment, counted by its holders: the generation that lists the segment (one reference
 * from birth), each reader that planned a read of it, and each operation running on its fd. While the
 * segment is active the writer's fd is attached to the handle (by the open or by the seal job that creates
 * the file). Once it is sealed on disk the handle keeps only its path: a read opens it read-only within
 * the store's budget (`SealedFdCache`), and the fd is closed when the cache evicts it idle. When the
 * generation lets go (`retire`) while reads still hold the handle, the file is opened for them at once,
 * before retention, clear or drop can unlink or move it, and kept open until the last one lets go.
 * Every fd is closed exactly once and never while an operation uses it, so no holder ever uses a closed,
 * possibly reused, fd number.
 */
import fs from 'node:fs';
import path from 'node:path';
import { assert } from '../base/constants.js';
import { type FileIo, errorCode, readFully } from '../base/file-io.js';
import { type ChunkTable, readColumnsSync, readLogical, readLogicalSync } from '../format/zlog.js';
import type { ChunkFrameSink } from '../format/chunk-codec.js';
import type { SealedFdCache, SealedFdHolder } from '../base/sealed-fds.js';
import { UnavailableError } from '../../errors.js';

/** Where a sealed segment's reads open it: its `.log`, or its `.zlog` once compacted (with the chunk table). */
interface SealedAt {
  file: string;
  cache: SealedFdCache;
  table?: ChunkTable;
}

export class SegmentFile implements SealedFdHolder {
  private refs = 1;
  /** Operations running on the fd now (reads, the writer's steps); each also holds a reference. */
  private uses = 0;
  private fdOrUndefined: number | undefined;
  /** What the open fd reads (undefined: the writer's fd of the `.log`); older than sealedAt after a compaction. */
  private fdAt: SealedAt | undefined;
  /** Set once the segment is sealed on disk: where reads open it, within which budget. */
  private sealedAt: SealedAt | undefined;
  /** The fd was opened on demand and is accounted for by the cache. */
  private cached = false;
  /** The generation let go (retention, clear, close, drop, abandon). */
  private retired = false;
  /** Why a retired file could not be kept open for the reads that still hold it. */
  private lost: Error | undefined;

  /** The file exists and the handle reaches it: an fd is attached, or it is sealed and opens on demand. */
  get attached(): boolean {
    return this.fdOrUndefined !== undefined || this.sealedAt !== undefined;
  }

  get idle(): boolean {
    return this.uses === 0;
  }

  /** Gives an active segment's handle its fd; when every holder has already let go, the fd is closed at once. */
  attach(fd: number): void {
    assert(this.fdOrUndefined === undefined && this.sealedAt === undefined, 'a segment file is attached once');
    if (this.refs === 0) closeQuietly(fd);
    else this.fdOrUndefined = fd;
  }

  /**
   * The segment is sealed on disk as `file` (a `.zlog` when `table` is given, found so at open): reads open
   * it on demand within `cache`'s budget from now on. The writer's fd is closed as soon as no operation uses it.
   */
  seal(file: string, cache: SealedFdCache, table?: ChunkTable): void {
    assert(this.refs > 0 && !this.retired && this.sealedAt === undefined, 'a listed segment file is sealed once');
    this.sealedAt = table === undefined ? { file, cache } : { file, cache, table };
    if (this.uses === 0 && this.fdOrUndefined !== undefined) this.closeFd();
  }

  /**
   * The segment's `.zlog` replaced its `.log` (compactor.ts): reads open it from now on. An fd of the
   * `.log` in use stays with its reads (the bytes are the same) and is closed when they end.
   */
  compacted(file: string, table: ChunkTable): void {
    const at = this.sealedAt;
    assert(this.refs > 0 && !this.retired && at !== undefined && at.table === undefined, 'a listed raw sealed segment is compacted once');
    this.sealedAt = { file, cache: at.cache, table };
    if (this.uses === 0 && this.fdOrUndefined !== undefined) this.closeFd();
  }

  get isCompacted(): boolean {
    return this.sealedAt?.table !== undefined;
  }

  /** Bytes on disk when compacted (the logical bytes are the segment's `bytes` either way). */
  get compactedBytes(): number | undefined {
    return this.sealedAt?.table?.fileBytes;
  }

  /** Logical bytes [pos, pos + len) into out[at..], from the `.log` or through the `.zlog`'s chunks. */
  async read(io: FileIo, out: Buffer, at: number, len: number, pos: number): Promise<void> {
    const fd = this.acquire();
    const table = this.fdAt?.table;
    try {
      if (table === undefined) await readFully(io, fd, out, at, len, pos);
      else await readLogical(io, fd, table, out, at, len, pos);
    } finally {
      this.endUse();
    }
  }

  readSync(out: Buffer, at: number, len: number, pos: number): void {
    this.useSync((fd, table) => (table === undefined ? readRawSync(fd, out, at, len, pos) : readLogicalSync(fd, table, out, at, len, pos)));
  }

  /**
   * For a compacted segment, the frames of logical bytes [pos, pos + len) and the values of stored columns
   * `columns` into `sink`, without rebuilding the frames (zlog.ts readColumnsSync); false when the segment is
   * not compacted or a chunk is not read so, and the caller reads the bytes instead.
   */
  readColumnsSync(pos: number, len: number, columns: readonly number[], sink: ChunkFrameSink): boolean {
    return this.isCompacted && this.useSync((fd, table) => table !== undefined && readColumnsSync(fd, table, pos, len, columns, sink));
  }

  /** Runs `fn` with the fd held and the chunk table of the file it is of (undefined for a `.log`). */
  private useSync<T>(fn: (fd: number, table: ChunkTable | undefined) => T): T {
    const fd = this.acquire();
    try {
      return fn(fd, this.fdAt?.table);
    } finally {
      this.endUse();
    }
  }

  retain(): this {
    assert(this.refs > 0, 'retain of a released segment file');
    this.refs++;
    return this;
  }

  /** Runs `fn` with the fd held (opened first if the segment is sealed), so nothing closes it mid-operation. */
  async use<T>(fn: (fd: number) => Promise<T>): Promise<T> {
    const fd = this.acquire();
    try {
      return await fn(fd);
    } finally {
      this.endUse();
    }
  }

  release(): void {
    assert(this.refs > 0, 'release of a segment file more often than it was retained');
    this.refs--;
    if (this.refs === 0 && this.fdOrUndefined !== undefined) this.closeFd();
  }

  /**
   * The generation's release. Its file may be unlinked or moved right after, so a sealed file that reads
   * still hold is opened now (outside the budget) and stays open until the last of them lets go.
   */
  retire(): void {
    assert(!this.retired, 'a segment file is retired once');
    this.retired = true;
    if (this.refs > 1 && this.sealedAt !== undefined) this.pin(this.sealedAt);
    this.release();
  }

  /** The cache closes an idle fd to stay within its budget; the next read opens the file again. */
  evict(): void {
    assert(this.uses === 0 && this.cached, 'only an idle cached fd is evicted');
    this.closeFd();
  }

  private pin(at: { file: string; cache: SealedFdCache }): void {
    if (this.cached) {
      at.cache.forget(this);
      this.cached = false;
    }
    if (this.fdOrUndefined !== undefined) return;
    try {
      this.fdOrUndefined = at.cache.openReadOnly(at.file);
      this.fdAt = at;
    } catch (e) {
      this.lost = openError(at.file, e, 'kept open for a read in flight');
    }
  }

  private acquire(): number {
    assert(this.refs > 0, 'segment fd used while held');
    let fd = this.fdOrUndefined;
    if (fd === undefined) {
      if (this.lost) throw this.lost;
      const at = this.sealedAt;
      assert(at !== undefined && !this.retired, 'only a listed sealed segment opens its file on demand');
      try {
        fd = at.cache.openFor(this, at.file);
      } catch (e) {
        throw openError(at.file, e, 'opened for a read');
      }
      this.fdOrUndefined = fd;
      this.fdAt = at;
      this.cached = true;
    } else if (this.cached) {
      this.sealedAt?.cache.touch(this);
    }
    this.uses++;
    this.refs++;
    return fd;
  }

  private endUse(): void {
    this.uses--;
    // A retired file keeps its fd for the reads that hold it; a listed sealed one gives it to the cache or,
    // the writer's fd left over from before the seal or an fd of the file a compaction replaced, closes it.
    if (this.uses === 0 && this.fdOrUndefined !== undefined && this.sealedAt !== undefined && !this.retired) {
      if (this.cached && this.fdAt === this.sealedAt) this.sealedAt.cache.idle();
      else this.closeFd();
    }
    this.release();
  }

  private closeFd(): void {
    const fd = this.fdOrUndefined as number;
    this.fdOrUndefined = undefined;
    this.fdAt = undefined;
    if (this.cached) {
      this.sealedAt?.cache.forget(this);
      this.cached = false;
    }
    closeQuietly(fd);
  }
}

function readRawSync(fd: number, out: Buffer, at: number, len: number, pos: number): void {
  for (let done = 0; done < len; ) {
    const n = fs.readSync(fd, out, at + done, len - done, pos + done);
    if (n <= 0) throw new Error(`store invariant violated: segment file shorter than its index (at ${pos + done})`);
    done += n;
  }
}

/** close(2) releases the fd number even when it reports an error; there is nothing left to do with it. */
function closeQuietly(fd: number): void {
  try {
    fs.closeSync(fd);
  } catch {
    // see above
  }
}

function openError(file: string, err: unknown, what: string): Error {
  const code = errorCode(err);
  if (code !== 'EMFILE' && code !== 'ENFILE') return err as Error;
  return new UnavailableError(`too many open files (${code}): segment file ${path.basename(file)} could not be ${what}; try again later`, 1, {
    cause: err,
  });
}
