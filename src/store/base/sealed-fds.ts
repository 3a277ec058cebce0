/**
 * The store-wide budget of open file descriptors for sealed segments. A sealed segment holds no fd while
 * nobody reads it: a read opens it read-only through this cache, and the cache keeps the fds of the
 * segments read most recently, at most `max` of them idle, closing the least recently used idle one to
 * make room. An fd in use by a read is never closed here; its holder (`SegmentFile`) tells the cache when
 * the read is over. So a model has any number of segments and the store still opens a bounded number of
 * files: the active segment and the manifest of each model, the idle fds here, and one per read in flight.
 */
import fs from 'node:fs';
import { errorCode } from './file-io.js';

/** What the cache needs of a sealed segment's handle. */
export interface SealedFdHolder {
  /** No read is using the fd now. */
  readonly idle: boolean;
  /** Closes the idle fd; the next read opens the file again. */
  evict(): void;
}

export class SealedFdCache {
  /** Holders with an open fd, least recently used first (a Map keeps insertion order). */
  private readonly open = new Map<SealedFdHolder, true>();

  constructor(readonly max: number) {}

  /** Open fds the cache accounts for, idle or in use. */
  get size(): number {
    return this.open.size;
  }

  /** Opens `file` read-only for `holder` and accounts for the fd; makes room first. */
  openFor(holder: SealedFdHolder, file: string): number {
    this.trim(this.max - 1);
    const fd = this.openReadOnly(file);
    this.open.set(holder, true);
    return fd;
  }

  /**
   * Opens `file` read-only outside the budget (a retired segment a read in flight still needs). When the
   * process is out of fds, the idle ones are given back and the open is tried once more.
   */
  openReadOnly(file: string): number {
    try {
      return fs.openSync(file, 'r');
    } catch (e) {
      const code = errorCode(e);
      if ((code !== 'EMFILE' && code !== 'ENFILE') || !this.trim(0)) throw e;
      return fs.openSync(file, 'r');
    }
  }

  /** A read starts on `holder`'s fd: it becomes the most recently used. */
  touch(holder: SealedFdHolder): void {
    this.open.delete(holder);
    this.open.set(holder, true);
  }

  /** The last read of `holder` ended: its fd is idle and may be evicted to stay within the budget. */
  idle(): void {
    this.trim(this.max);
  }

  /** `holder` closed its fd itself (the segment was retired or released); nothing to account for. */
  forget(holder: SealedFdHolder): void {
    this.open.delete(holder);
  }

  /** Evicts idle fds, oldest first, until at most `keep` remain; returns whether any was closed. */
  private trim(keep: number): boolean {
    let evicted = false;
    for (const h of this.open.keys()) {
      if (this.open.size <= keep) break;
      if (!h.idle) continue;
      this.open.delete(h);
      h.evict();
      evicted = true;
    }
    return evicted;
  }
}
