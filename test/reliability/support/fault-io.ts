/**
 * The store's file layer with deterministic faults, for the in-process fault-injection suite. Every
 * file operation of the engine goes through the primitive steps below (pwrite, fdatasync, open, rename,
 * directory fsync), so a fault can hit a segment write, the fdatasync that acknowledges records, a seal
 * (index write, new segment file) or a manifest slot alike. A fault fires from its k-th matching call on
 * (`after` calls pass first) and goes on until `heal()` or until it has fired `times` times.
 *
 * Modes: `error` fails the call with `code`; `torn` writes part of the bytes, then fails; `short` writes
 * only part of the bytes and reports the shorter count (no error: the caller must continue). With
 * `dropPages`, a failed fdatasync also loses the bytes written since the file's last good fdatasync, as
 * Linux does after a writeback error (fsyncgate): the pages are marked clean and later reads return what
 * is on the disk, here zeros.
 */
import fs from 'node:fs';
import path from 'node:path';
import { NodeFileIo } from '../../../src/store/base/file-io.js';

export type FaultOp = 'pwrite' | 'fdatasync' | 'open' | 'rename' | 'fsyncdir';
export type FaultCode = 'EIO' | 'ENOSPC';

export interface Fault {
  op: FaultOp;
  code: FaultCode;
  mode?: 'error' | 'torn' | 'short';
  /** Matching calls that pass before the fault fires (0: the first one fails). */
  after?: number;
  /** How many calls fail; unlimited (until heal) when omitted. */
  times?: number;
  /** Only calls on files whose name matches (e.g. /\.log$/ for segment data). */
  file?: RegExp;
  /** Only calls for which this holds (e.g. while a seal is under way), given the file's path. */
  when?: (file: string) => boolean;
  /** fsyncgate: a failed fdatasync drops the bytes written since the last good one. */
  dropPages?: boolean;
}

const call = <T>(fn: (cb: (e: Error | null, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((e, v) => (e ? reject(e) : resolve(v))));

function injected(code: FaultCode, op: FaultOp, file: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`injected ${code} on ${op} of ${path.basename(file)}`), { code });
}

export class FaultIo extends NodeFileIo {
  private fault: Fault | undefined;
  private seen = 0;
  /** Calls the current fault failed (or shortened). */
  fired = 0;
  /** When the current fault first fired (performance.now()). */
  firstFiredAt: number | undefined;
  /** Bytes zeroed by page drops, over the life of this layer. */
  droppedBytes = 0;
  /**
   * The byte range of each file (by inode) written since its last good fdatasync: what a writeback error
   * loses. A range, not the size: writes into a preallocated file (sync = always) do not change the size.
   */
  private readonly unsynced = new Map<number, { from: number; to: number }>();

  arm(fault: Fault): void {
    this.fault = fault;
    this.seen = 0;
    this.fired = 0;
    this.firstFiredAt = undefined;
  }

  heal(): void {
    this.fault = undefined;
  }

  get armed(): boolean {
    return this.fault !== undefined;
  }

  /** The fault that hits this call, if any (counting the call when it matches). */
  private hit(op: FaultOp, file: string): Fault | undefined {
    const f = this.fault;
    if (f === undefined || f.op !== op || (f.file !== undefined && !f.file.test(file)) || f.when?.(file) === false) return undefined;
    this.seen++;
    if (this.seen <= (f.after ?? 0)) return undefined;
    if (f.times !== undefined && this.fired >= f.times) return undefined;
    this.fired++;
    this.firstFiredAt ??= performance.now();
    return f;
  }

  override async writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    const f = this.hit('pwrite', fdPath(fd));
    if (f === undefined) return this.wrote(fd, pos, await call<number>((cb) => fs.writev(fd, bufs, pos, cb)));
    const all = Buffer.concat(bufs);
    const part = all.subarray(0, Math.max(1, all.length >> 1));
    if (f.mode === 'short') return this.wrote(fd, pos, await call<number>((cb) => fs.write(fd, part, 0, part.length, pos, cb)));
    if (f.mode === 'torn') this.wrote(fd, pos, await call<number>((cb) => fs.write(fd, part, 0, part.length, pos, cb)));
    throw injected(f.code, 'pwrite', fdPath(fd));
  }

  private wrote(fd: number, pos: number, n: number): number {
    const ino = fs.fstatSync(fd).ino;
    const r = this.unsynced.get(ino);
    // A new object each time: an fdatasync tells by identity whether writes came in meanwhile.
    this.unsynced.set(ino, r === undefined ? { from: pos, to: pos + n } : { from: Math.min(r.from, pos), to: Math.max(r.to, pos + n) });
    return n;
  }

  override async fdatasync(fd: number): Promise<void> {
    const file = fdPath(fd);
    const { ino } = fs.fstatSync(fd);
    const written = this.unsynced.get(ino);
    const f = this.hit('fdatasync', file);
    if (f === undefined) {
      await call<void>((cb) => fs.fdatasync(fd, (e) => cb(e, undefined)));
      // Only what was written before it started is covered; writes during it append after that.
      const now = this.unsynced.get(ino);
      if (now === written) this.unsynced.delete(ino);
      else if (now !== undefined && written !== undefined) this.unsynced.set(ino, { from: Math.max(now.from, written.to), to: now.to });
      return;
    }
    if (f.dropPages) this.dropSince(fd, ino);
    throw injected(f.code, 'fdatasync', file);
  }

  /** Zeroes what was written since the last good fdatasync: the disk never got those pages. */
  private dropSince(fd: number, ino: number): void {
    const r = this.unsynced.get(ino);
    if (r === undefined) return;
    this.unsynced.delete(ino);
    const end = Math.min(r.to, fs.fstatSync(fd).size);
    if (end <= r.from) return;
    fs.writeSync(fd, Buffer.alloc(end - r.from), 0, end - r.from, r.from);
    this.droppedBytes += end - r.from;
  }

  override async createFile(file: string, head: Buffer): Promise<number> {
    const fd = await this.open(file, 'w+');
    try {
      await this.writeAll(fd, head, 0);
      await this.fdatasync(fd);
      await this.fsyncDir(path.dirname(file));
    } catch (e) {
      fs.closeSync(fd);
      throw e;
    }
    return fd;
  }

  override async replaceFile(file: string, data: Buffer): Promise<void> {
    const tmp = `${file}.tmp`;
    const fd = await this.open(tmp, 'w');
    try {
      await this.writeAll(fd, data, 0);
      await this.fdatasync(fd);
    } finally {
      fs.closeSync(fd);
    }
    await this.rename(tmp, file);
    await this.fsyncDir(path.dirname(file));
  }

  override async overwrite(fd: number, data: Buffer, pos: number): Promise<void> {
    await this.writeAll(fd, data, pos);
    await this.fdatasync(fd);
  }

  override async rename(from: string, to: string): Promise<void> {
    const f = this.hit('rename', from);
    if (f !== undefined) throw injected(f.code, 'rename', from);
    await fs.promises.rename(from, to);
  }

  override async fsyncDir(dir: string): Promise<void> {
    const f = this.hit('fsyncdir', dir);
    if (f !== undefined) throw injected(f.code, 'fsyncdir', dir);
    await super.fsyncDir(dir);
  }

  private async open(file: string, flags: string): Promise<number> {
    const f = this.hit('open', file);
    if (f !== undefined) throw injected(f.code, 'open', file);
    const fd = await call<number>((cb) => fs.open(file, flags, cb));
    this.unsynced.delete(fs.fstatSync(fd).ino);
    return fd;
  }

  private async writeAll(fd: number, data: Buffer, pos: number): Promise<void> {
    for (let done = 0; done < data.length; ) done += await this.writev(fd, [data.subarray(done)], pos + done);
  }
}

function fdPath(fd: number): string {
  try {
    return fs.readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return `fd ${fd}`;
  }
}
