/**
 * One process per store directory. Two processes appending to the same segment files interleave frames
 * and reuse ids without an error, so the store takes `<rootDir>/.lock` for its lifetime: the file names
 * the holder's pid and the start time the kernel gives that process, and the holder keeps the file open
 * until it releases it. A lock whose holder is gone (kill -9, power loss) is taken over.
 *
 * A holder is alive when its pid exists and either it has the lock file open (one of /proc/<pid>/fd is
 * that inode, which a recycled pid never has) or its start time is the one in the file (a recycled pid's
 * differs). The open file is what holds under qemu user emulation, where a process reading its own
 * /proc/<pid>/stat gets qemu's answer (a start time qemu makes up) while other processes read the
 * kernel's: on start times alone, a second service there took over the lock of a live one. Node has no
 * flock(), so the open file is looked up rather than locked. The start time still decides where the
 * holder's fds cannot be listed (another user's process: EACCES; no /proc) and for lock files of versions
 * that kept no file open. It is read from /proc/<pid>/task/<pid>/stat (the main thread's entry: the same
 * field), which qemu passes through from the kernel, so it agrees under emulation too.
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
  /** Field 22 of /proc/<pid>/task/<pid>/stat (start time in clock ticks since boot); '' where /proc is absent. */
  start: string;
}

export class DirLock {
  private released = false;

  private constructor(
    private readonly file: string,
    private readonly me: string,
    /** The lock file, open while the lock is held: what shows other processes that this holder is alive. */
    private readonly fd: number,
  ) {}

  /** Takes the lock or throws StateError naming the directory and the holder. */
  static acquire(dir: string): DirLock {
    const file = `${dir}/${LOCK_FILE}`;
    const me = JSON.stringify({ pid: process.pid, start: startTime(process.pid) } satisfies Holder);
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, me);
    // Opened before it becomes the lock file, so the lock is never visible without its open file.
    const fd = fs.openSync(tmp, 'r');
    let held = false;
    try {
      if (tryLink(tmp, file)) {
        held = true;
        return new DirLock(file, me, fd);
      }
      const holder = readHolder(file);
      if (holder !== undefined && alive(holder, file)) throw lockedError(dir, holder);
      fs.renameSync(tmp, file);
      const now = readHolder(file);
      if (now === undefined || JSON.stringify(now) !== me) throw lockedError(dir, now);
      held = true;
      return new DirLock(file, me, fd);
    } finally {
      if (!held) fs.closeSync(fd);
      fs.rmSync(tmp, { force: true });
    }
  }

  /** Removes the lock file if it is still ours, and closes it. */
  release(): void {
    if (this.released) return;
    this.released = true;
    try {
      if (fs.readFileSync(this.file, 'utf8') === this.me) fs.rmSync(this.file, { force: true });
    } catch {
      // already gone
    }
    fs.closeSync(this.fd);
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

function alive(h: Holder, file: string): boolean {
  try {
    process.kill(h.pid, 0);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  if (hasOpen(h.pid, file)) return true;
  return h.start === '' || startTime(h.pid) === h.start;
}

/**
 * Whether process `pid` has `file` open. False where its fds cannot be listed (no /proc, another user's
 * process), which leaves the decision to the start time.
 */
function hasOpen(pid: number, file: string): boolean {
  let target: fs.Stats;
  let fds: string[];
  try {
    target = fs.statSync(file);
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      const s = fs.statSync(`/proc/${pid}/fd/${fd}`);
      return s.ino === target.ino && s.dev === target.dev;
    } catch {
      return false; // closed meanwhile
    }
  });
}

function startTime(pid: number): string {
  try {
    // task/<pid>/stat rather than <pid>/stat: qemu-user answers a process's own /proc/<pid>/stat itself,
    // with a start time of its own; the task entry it passes through as the kernel writes it.
    const stat = fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
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
