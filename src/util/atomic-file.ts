import { mkdir, open, rename } from 'node:fs/promises';
import { dirname, basename, join } from 'node:path';

/**
 * Replaces `path` with `text` so that a crash at any moment leaves either the old or the new file,
 * never a torn one: write a temp file beside it, fsync it, rename over the target, fsync the directory.
 */
export async function writeFileAtomic(path: string, text: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const tmpPath = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  const file = await open(tmpPath, 'w', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(tmpPath, path);
  await fsyncDir(dir);
}

export async function fsyncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Serialises async jobs: each starts after the previous one settled, so writes never interleave. */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(job: () => Promise<T>): Promise<T> {
    const next = this.tail.then(job);
    this.tail = next.catch(() => undefined);
    return next;
  }
}
