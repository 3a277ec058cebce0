/**
 * A small tmpfs for tests of a full or nearly full disk: mounted under a new temp directory (needs root
 * and a working `mount`); `skipReason` says why not when it cannot be, for `describe.skipIf`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface Tmpfs {
  /** The temp directory holding the mount point (config files go here, off the small disk). */
  root: string;
  /** The mount point. */
  mnt: string;
  skipReason: string | undefined;
  /** Unmounts (lazily if busy) and removes the temp directory. */
  dispose(): void;
}

export function mountTmpfs(name: string, sizeMiB: number): Tmpfs {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), `edc-${name}-`));
  const mnt = path.join(root, 'mnt');
  fs.mkdirSync(mnt);
  const skipReason = mount(mnt, sizeMiB);
  if (skipReason) console.warn(`${name} tests skipped: ${skipReason}`);
  return {
    root,
    mnt,
    skipReason,
    dispose() {
      if (skipReason === undefined && spawnSync('umount', [mnt], { encoding: 'utf8' }).status !== 0) spawnSync('umount', ['-l', mnt]);
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

function mount(mnt: string, sizeMiB: number): string | undefined {
  if (process.platform !== 'linux') return `not linux (${process.platform})`;
  if (process.getuid?.() !== 0) return 'not running as root (tmpfs mount needs it)';
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', mnt], { encoding: 'utf8' });
  if (r.error) return `mount failed: ${r.error.message}`;
  if (r.status !== 0) return `mount -t tmpfs failed: ${(r.stderr || r.stdout).trim()}`;
  return undefined;
}
