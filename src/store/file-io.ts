/**
 * The async file operations of the write path, behind a tiny interface so tests can inject faults
 * (ENOSPC, EIO) and count fdatasync calls. Recovery at open uses node:fs directly.
 */
import fs from 'node:fs';

export interface FileIo {
  /** Gathers all queued chunks of a segment into one syscall; may write fewer bytes than asked. */
  writev(fd: number, bufs: Buffer[], pos: number): Promise<number>;
  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  ftruncate(fd: number, len: number): Promise<void>;
}

export const nodeFileIo: FileIo = {
  writev: (fd, bufs, pos) =>
    new Promise((resolve, reject) => fs.writev(fd, bufs, pos, (e, n) => (e ? reject(e) : resolve(n)))),
  read: (fd, buf, off, len, pos) =>
    new Promise((resolve, reject) => fs.read(fd, buf, off, len, pos, (e, n) => (e ? reject(e) : resolve(n)))),
  fdatasync: (fd) => new Promise((resolve, reject) => fs.fdatasync(fd, (e) => (e ? reject(e) : resolve()))),
  ftruncate: (fd, len) => new Promise((resolve, reject) => fs.ftruncate(fd, len, (e) => (e ? reject(e) : resolve()))),
};

/** Writes all of `bufs` at `pos`, continuing after short writes. */
export async function writeFully(io: FileIo, fd: number, bufs: Buffer[], pos: number): Promise<void> {
  let total = 0;
  for (const b of bufs) total += b.length;
  let done = 0;
  while (done < total) {
    const n = await io.writev(fd, done === 0 ? bufs : remainder(bufs, done), pos + done);
    if (n <= 0) throw Object.assign(new Error('write returned 0 bytes'), { code: 'EIO' });
    done += n;
  }
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

/**
 * An open segment fd shared by the log and by readers. Retention and clear unlink files while an export
 * may still read them; the fd stays open until the last holder lets go.
 */
export class SegmentFile {
  private refs = 1;

  constructor(readonly fd: number) {}

  retain(): this {
    if (this.refs <= 0) throw new Error('store invariant violated: retain of a closed segment file');
    this.refs++;
    return this;
  }

  release(): void {
    this.refs--;
    if (this.refs === 0) fs.close(this.fd, () => {});
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
