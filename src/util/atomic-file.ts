import { mkdir, open, rename, stat } from 'node:fs/promises';
import { dirname, basename, join, resolve } from 'node:path';

/**
 * Replaces `path` with `text` so that a crash at any moment leaves either the old or the new file,
 * never a torn one: write a temp file beside it, fsync it, rename over the target, fsync the directory.
 */
export async function writeFileAtomic(path: string, text: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  await mkdirDurable(dir);
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

/**
 * `mkdir -p` whose new directories survive a power loss: after creating each one, its parent is
 * fsync'ed, so the name is on disk before anything is written inside it.
 */
export async function mkdirDurable(dir: string): Promise<void> {
  const missing: string[] = [];
  for (let d = resolve(dir); !(await isDirectory(d)); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) {
    await mkdir(d).catch((e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    });
    await fsyncDir(dirname(d));
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
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
