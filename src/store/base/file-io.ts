/**
 * Every async file operation of the engine, behind one interface so tests can inject faults (ENOSPC,
 * EIO), count fdatasync calls, or run each operation at a point a seeded scheduler picks. The first four
 * touch segment data only; the rest create, replace and remove files. Recovery at open uses node:fs
 * directly (it runs before any write is accepted), and so do the open and close of sealed segments'
 * read-only fds (segment-file.ts): synchronous, so that a file is open before anything can unlink it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fsyncDir } from '../../util/atomic-file.js';

export interface FileIo {
  /** Gathers all queued chunks of a segment into one syscall; may write fewer bytes than asked. */
  writev(fd: number, bufs: Buffer[], pos: number): Promise<number>;
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  ftruncate(fd: number, len: number): Promise<void>;
  /** A new file holding `head`, fdatasync'ed, its name made durable by an fsync of the directory. */
  createFile(file: string, head: Buffer): Promise<number>;
  /** Replaces `file` with `data` so that a crash leaves the old or the new file (tmp, fsync, rename). */
  replaceFile(file: string, data: Buffer): Promise<void>;
  /** Overwrites bytes of an open file in place and fdatasyncs it (manifest slots). */
  overwrite(fd: number, data: Buffer, pos: number): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Removes a file or a directory tree; a missing one is fine. */
  remove(target: string): Promise<void>;
  fsyncDir(dir: string): Promise<void>;
}

const call = <T>(fn: (cb: (e: Error | null, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((e, v) => (e ? reject(e) : resolve(v))));

/** Metadata writes bypass the segment data methods, so a double watching segment writes sees only those. */
async function writeAndSync(fd: number, data: Buffer, pos: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const n = await call<number>((cb) => fs.write(fd, data, done, data.length - done, pos + done, cb));
    if (n <= 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO' });
    done += n;
  }
  await call<void>((cb) => fs.fdatasync(fd, (e) => cb(e, undefined)));
}

/** The real file system; test doubles extend it and override what they watch. */
export class NodeFileIo implements FileIo {
  writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    return call((cb) => fs.writev(fd, bufs, pos, cb));
  }

  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
    return call((cb) => fs.read(fd, buf, off, len, pos, cb));
  }

  fdatasync(fd: number): Promise<void> {
    return call<void>((cb) => fs.fdatasync(fd, (e) => cb(e, undefined)));
  }

  ftruncate(fd: number, len: number): Promise<void> {
    return call<void>((cb) => fs.ftruncate(fd, len, (e) => cb(e, undefined)));
  }

  async createFile(file: string, head: Buffer): Promise<number> {
    const fd = await call<number>((cb) => fs.open(file, 'w+', cb));
    try {
      await writeAndSync(fd, head, 0);
      await this.fsyncDir(path.dirname(file));
    } catch (e) {
      fs.close(fd, () => {});
      throw e;
    }
    return fd;
  }

  async replaceFile(file: string, data: Buffer): Promise<void> {
    const tmp = `${file}.tmp`;
    const fd = await call<number>((cb) => fs.open(tmp, 'w', cb));
    try {
      await writeAndSync(fd, data, 0);
    } finally {
      fs.closeSync(fd);
    }
    await fs.promises.rename(tmp, file);
    await this.fsyncDir(path.dirname(file));
  }

  overwrite(fd: number, data: Buffer, pos: number): Promise<void> {
    return writeAndSync(fd, data, pos);
  }

  rename(from: string, to: string): Promise<void> {
    return fs.promises.rename(from, to);
  }

  remove(target: string): Promise<void> {
    return fs.promises.rm(target, { recursive: true, force: true });
  }

  fsyncDir(dir: string): Promise<void> {
    return fsyncDir(dir);
  }
}

export const nodeFileIo: FileIo = new NodeFileIo();

/**
 * Writes all of `bufs` at `pos`, continuing after short writes; returns the end of what was written.
 * `ahead` (zeros that preallocate the file) rides the first writev only and may be cut short: a short
 * count (no room left, say) ends it as soon as the data itself is written.
 */
export async function writeFully(io: FileIo, fd: number, bufs: Buffer[], pos: number, ahead?: Buffer): Promise<number> {
  let total = 0;
  for (const b of bufs) total += b.length;
  let done = 0;
  while (done < total) {
    const iov = done > 0 ? remainder(bufs, done) : ahead === undefined ? bufs : [...bufs, ahead];
    const n = await io.writev(fd, iov, pos + done);
    if (n <= 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO' });
    done += n;
  }
  return pos + done;
}

function remainder(bufs: Buffer[], skip: number): Buffer[] {
  const out: Buffer[] = [];
  for (const b of bufs) {
    if (skip >= b.length) skip -= b.length;
    else {
      out.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
  }
  return out;
}

export async function readFully(io: FileIo, fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<void> {
  let done = 0;
  while (done < len) {
    const n = await io.read(fd, buf, off + done, len - done, pos + done);
    if (n <= 0) throw Object.assign(new Error(`short read at ${pos + done}`), { code: 'EIO' });
    done += n;
  }
}

/** readFully without the thread pool (recovery at open, and reads of a few KiB mostly in the page cache). */
export function readFullySync(fd: number, buf: Buffer, off: number, len: number, pos: number): void {
  for (let done = 0; done < len; ) {
    const n = fs.readSync(fd, buf, off + done, len - done, pos + done);
    if (n <= 0) throw Object.assign(new Error(`short read at ${pos + done}`), { code: 'EIO' });
    done += n;
  }
}

export function errorCode(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : 'EIO';
}

export function describeIoError(err: unknown, op: string): string {
  const code = errorCode(err);
  return code === 'ENOSPC' ? `disk full (ENOSPC) on ${op}` : `I/O error (${code}) on ${op}`;
}

export function fsyncDirSync(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export function writeFileAtomicSync(dir: string, name: string, data: Buffer): void {
  const tmp = `${dir}/${name}.tmp`;
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, data, 0, data.length, 0);
    fs.fdatasyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, `${dir}/${name}`);
  fsyncDirSync(dir);
}
