/**
 * The data disk: room for the run before it starts, what kind of filesystem it is (a tmpfs answers an
 * fdatasync from memory), and the latency of fdatasync, which bounds `sync = always` and the cost of
 * every sync of `interval`.
 */
import { closeSync, fdatasyncSync, openSync, unlinkSync, writeSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { BenchError } from '../errors.js';

const MIB = 1_048_576;
/**
 * Free space the run needs: its data stays under 200 MiB (retention of 64 MiB a model, 16 MiB segments,
 * a day of 864,000 records), and below the service's disk_reserve_bytes (256 MiB) it refuses writes.
 */
export const FREE_BYTES_MIN = 512 * MIB;

/** statfs `type` of the filesystems a gateway's data may be on (linux/magic.h). */
const FILESYSTEMS: Record<number, string> = {
  0xef53: 'ext2/3/4',
  0x58465342: 'xfs',
  0x9123683e: 'btrfs',
  0xf2f52010: 'f2fs',
  0x24051905: 'ubifs',
  0x72b6: 'jffs2',
  0x4d44: 'vfat',
  0x2011bab0: 'exfat',
  0x5346544e: 'ntfs',
  0x01021994: 'tmpfs',
  0x794c7630: 'overlayfs',
  0x6969: 'nfs',
  0x65735546: 'fuse',
};

/** The filesystem of `dir` by name (its magic number in hex when not one of the above). */
export async function filesystemOf(dir: string): Promise<string> {
  const { type } = await statfs(dir);
  return FILESYSTEMS[type] ?? `0x${type.toString(16)}`;
}

/** Refuses to start where the run would fill the disk, naming the flag that picks another one. */
export async function checkRoom(dir: string): Promise<void> {
  const s = await statfs(dir);
  const free = s.bavail * s.bsize;
  if (free < FREE_BYTES_MIN) {
    throw new BenchError(
      `${dir} has ${Math.floor(free / MIB)} MiB free; the bench needs ${FREE_BYTES_MIN / MIB} MiB (its data stays under 200 MiB and the service keeps 256 MiB in reserve): give a directory with room with --dir`,
    );
  }
}

/**
 * Milliseconds of each fdatasync of a 4 KiB file in `dir` after a 100-byte write into it, as the store
 * writes into segment space it has already zeroed: `count` of them, or fewer when `budgetMs` runs out
 * (an SD card may take 20 ms each). Blocking calls: nothing else runs in the bench meanwhile.
 */
export function fdatasyncLatencies(dir: string, count: number, budgetMs: number): number[] {
  const file = join(dir, 'fdatasync-probe');
  const fd = openSync(file, 'w+');
  try {
    writeSync(fd, Buffer.alloc(4096), 0, 4096, 0);
    fdatasyncSync(fd);
    const record = Buffer.alloc(100, 0x5a);
    const out: number[] = [];
    const deadline = performance.now() + budgetMs;
    for (let i = 0; i < count && (out.length < 10 || performance.now() < deadline); i++) {
      record.writeUInt32LE(i, 0);
      writeSync(fd, record, 0, record.length, (i * record.length) % 4000);
      const t0 = performance.now();
      fdatasyncSync(fd);
      out.push(performance.now() - t0);
    }
    return out;
  } finally {
    closeSync(fd);
    unlinkSync(file);
  }
}
