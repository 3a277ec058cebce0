/**
 * The engine's file layer with every operation held until a seeded fast-check scheduler releases it, then
 * done synchronously on the real file system. All async I/O of the store (segment writes, reads,
 * fdatasyncs, seals, index and manifest writes, retention unlinks, clear's renames) therefore happens at
 * points the seed picks, and a schedule replays exactly. An operation on an fd checks, when it runs, that
 * the fd still names the file it named when the operation was called: an fd closed meanwhile, and maybe
 * reused for another file, fails the operation instead of reading or writing the wrong file.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Scheduler } from 'fast-check';
import { type FileIo, fsyncDirSync, writeFileAtomicSync } from '../../../src/store/base/file-io.js';

export class ScheduledIo implements FileIo {
  constructor(private readonly s: Scheduler) {}

  writev(fd: number, bufs: Buffer[], pos: number): Promise<number> {
    return this.stepOn(fd, `writev ${fdName(fd)}@${pos}`, () => fs.writevSync(fd, bufs, pos));
  }

  read(fd: number, buf: Buffer, off: number, len: number, pos: number): Promise<number> {
    return this.stepOn(fd, `read ${fdName(fd)}@${pos}+${len}`, () => fs.readSync(fd, buf, off, len, pos));
  }

  fdatasync(fd: number): Promise<void> {
    return this.stepOn(fd, `fdatasync ${fdName(fd)}`, () => fs.fdatasyncSync(fd));
  }

  ftruncate(fd: number, len: number): Promise<void> {
    return this.stepOn(fd, `ftruncate ${fdName(fd)} ${len}`, () => fs.ftruncateSync(fd, len));
  }

  createFile(file: string, head: Buffer): Promise<number> {
    return this.step(`create ${shortName(file)}`, () => {
      const fd = fs.openSync(file, 'w+');
      fs.writeSync(fd, head, 0, head.length, 0);
      fs.fdatasyncSync(fd);
      fsyncDirSync(path.dirname(file));
      return fd;
    });
  }

  replaceFile(file: string, data: Buffer): Promise<void> {
    return this.step(`replace ${shortName(file)}`, () => writeFileAtomicSync(path.dirname(file), path.basename(file), data));
  }

  overwrite(fd: number, data: Buffer, pos: number): Promise<void> {
    return this.stepOn(fd, `overwrite ${fdName(fd)}@${pos}`, () => {
      fs.writeSync(fd, data, 0, data.length, pos);
      fs.fdatasyncSync(fd);
    });
  }

  rename(from: string, to: string): Promise<void> {
    return this.step(`rename ${shortName(from)}`, () => fs.renameSync(from, to));
  }

  remove(target: string): Promise<void> {
    return this.step(`remove ${shortName(target)}`, () => fs.rmSync(target, { recursive: true, force: true }));
  }

  fsyncDir(dir: string): Promise<void> {
    return this.step(`fsyncdir ${shortName(dir)}`, () => fsyncDirSync(dir));
  }

  private async step<T>(label: string, run: () => T): Promise<T> {
    await this.s.schedule(Promise.resolve(), label);
    return run();
  }

  private async stepOn<T>(fd: number, label: string, run: () => T): Promise<T> {
    const file = fileOf(fd);
    await this.s.schedule(Promise.resolve(), label);
    const now = fileOf(fd);
    if (now !== file) throw new Error(`${label}: fd ${fd} was closed while the operation waited (it now names ${now})`);
    return run();
  }
}

/** Device and inode of the file an fd names (a rename or unlink keeps them); 'closed' for a closed fd. */
function fileOf(fd: number): string {
  try {
    const st = fs.fstatSync(fd);
    return `${st.dev}:${st.ino}`;
  } catch {
    return 'closed';
  }
}

/** The last two path parts (`a/seg-0000000003.log`): enough to read a schedule. */
function shortName(file: string): string {
  return file.split('/').slice(-2).join('/');
}

function fdName(fd: number): string {
  try {
    return shortName(fs.readlinkSync(`/proc/self/fd/${fd}`));
  } catch {
    return `fd ${fd} (closed)`;
  }
}

/** Paths under `dir` that this process still has open. */
export function openFilesUnder(dir: string): string[] {
  const open: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) open.push(target);
    } catch {
      // closed while listing
    }
  }
  return open;
}
