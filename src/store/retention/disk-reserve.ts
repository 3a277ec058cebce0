/**
 * `[store] disk_reserve_bytes` (contract 14): below that much free space on the store's filesystem, writes
 * are refused (503, like a read-only model: nothing acknowledged is lost, reads go on) until space returns.
 * A fresh install with unlimited retention therefore stops writing before the disk is full, instead of
 * filling it for the rest of the system. Free space is read with statfs once a second: at the store's
 * write rate that is far less than the default reserve.
 */
import fs from 'node:fs';

export const DISK_CHECK_INTERVAL_MS = 1000;

export interface DiskSpace {
  freeBytes: number;
  totalBytes: number;
}

export class DiskReserve {
  private space: DiskSpace | undefined;
  private lowSinceMs: number | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly rootDir: string,
    readonly reserveBytes: number,
    private readonly warn: (message: string) => void,
  ) {}

  /** Reads the free space now (so the first write already knows), then once a second; a reserve of 0 only reports it. */
  start(): void {
    this.apply(readSpace(this.rootDir));
    this.timer = setInterval(() => void this.check(), DISK_CHECK_INTERVAL_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  get current(): DiskSpace | undefined {
    return this.space;
  }

  /** Since when free space has been below the reserve; undefined while writes are allowed. */
  get lowSince(): number | undefined {
    return this.lowSinceMs;
  }

  /** Why writes are refused, for the 503 and /healthz; undefined while they are allowed. */
  get reason(): string | undefined {
    if (this.lowSinceMs === undefined || this.space === undefined) return undefined;
    return `free disk ${mib(this.space.freeBytes)} MiB is below the reserve of ${mib(this.reserveBytes)} MiB ([store] disk_reserve_bytes): writes wait for space`;
  }

  private async check(): Promise<void> {
    try {
      this.apply(spaceOf(await fs.promises.statfs(this.rootDir)));
    } catch (err) {
      this.warn(`disk reserve: cannot read the free space of ${this.rootDir}: ${(err as Error).message}`);
    }
  }

  private apply(space: DiskSpace | undefined): void {
    if (space === undefined) return;
    this.space = space;
    const low = this.reserveBytes > 0 && space.freeBytes < this.reserveBytes;
    if (low && this.lowSinceMs === undefined) {
      this.lowSinceMs = Date.now();
      this.warn(this.reason as string);
    } else if (!low && this.lowSinceMs !== undefined) {
      this.lowSinceMs = undefined;
      this.warn(`free disk ${mib(space.freeBytes)} MiB is above the reserve again: writes resume`);
    }
  }
}

function readSpace(dir: string): DiskSpace | undefined {
  try {
    return spaceOf(fs.statfsSync(dir));
  } catch {
    return undefined;
  }
}

/** Free bytes as an unprivileged process may use them (`bavail`), and the filesystem's size. */
function spaceOf(s: fs.StatsFs): DiskSpace {
  return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
}

function mib(bytes: number): number {
  return Math.floor(bytes / 1_048_576);
}
