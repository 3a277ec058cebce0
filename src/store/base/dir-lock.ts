/**
 * One process per store directory. Two processes appending to the same segment files interleave frames
 * and reuse ids without an error, so the store takes `<rootDir>/.lock` for its lifetime: the file names
 * the holder's pid and the start time the kernel gives that process (so a recycled pid is not mistaken
 * for the holder). A lock whose holder is gone (kill -9, power loss) is taken over.
 *
 * Creation is atomic (a temp file hard-linked to the lock name: fails when it exists). A takeover of a
 * stale lock renames over it and reads it back; two processes taking over the same stale lock in the
 * same instant could both win that check. Local file systems only: pids are not meaningful across hosts.
 */
import fs from 'node:fs';
import { StateError } from '../../errors.js';

const LOCK_FILE = '.lock';

interface Holder {
  pid: number;
  /** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); '' where /proc is absent. */
  start: string;
}

export class DirLock {
  private released = false;

  private constructor(
    private readonly file: string,
    private readonly me: string,
  ) {}

  /** Takes the lock or throws StateError naming the directory and the holder. */
  static acquire(dir: string): DirLock {
    const file = `${dir}/${LOCK_FILE}`;
    const me = JSON.stringify({ pid: process.pid, start: startTime(process.pid) } satisfies Holder);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, me);
    try {
      if (tryLink(tmp, file)) return new DirLock(file, me);
      const holder = readHolder(file);
      if (holder !== undefined && alive(holder)) throw lockedError(dir, holder);
      fs.renameSync(tmp, file);
      const now = readHolder(file);
      if (now === undefined || JSON.stringify(now) !== me) throw lockedError(dir, now);
      return new DirLock(file, me);
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }

  /** Removes the lock file if it is still ours. */
  release(): void {
    if (this.released) return;
    this.released = true;
    try {
      if (fs.readFileSync(this.file, 'utf8') === this.me) fs.rmSync(this.file, { force: true });
    } catch {
      // already gone
    }
  }
}

function tryLink(tmp: string, file: string): boolean {
  try {
    fs.linkSync(tmp, file);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw e;
  }
}

function readHolder(file: string): Holder | undefined {
  try {
    const h = JSON.parse(fs.readFileSync(file, 'utf8')) as Holder;
    return Number.isSafeInteger(h?.pid) && typeof h.start === 'string' ? h : undefined;
  } catch {
    return undefined;
  }
}

function alive(h: Holder): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  return h.start === '' || startTime(h.pid) === h.start;
}

function startTime(pid: number): string {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count fields after the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

function lockedError(dir: string, holder: Holder | undefined): StateError {
  const by = holder === undefined ? 'another process' : `process ${holder.pid}`;
  return new StateError(`data directory ${dir} is in use by ${by} (another edge-datacenter?); stop it first`);
}
