import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, basename, join, resolve } from 'node:path';
import { MetadataWriteError } from '../errors.js';

/** Temp files of writeFileAtomic: `.<name>.<pid>.<ms>.tmp`. */
const TEMP_FILE = /^\..+\.\d+\.\d+\.tmp$/;

/**
 * Replaces `path` with `text` so that a crash at any moment leaves either the old or the new file,
 * never a torn one: write a temp file beside it, fsync it, rename over the target, fsync the directory.
 * The rename is the one commit point. A failure before it removes the temp file and throws
 * MetadataWriteError (503 naming the file): nothing changed, so the caller leaves its memory as it was.
 * After it the change is made, whatever the directory fsync says (a failure there is a warning), so the
 * caller's memory must follow.
 */
export async function writeFileAtomic(path: string, text: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  const tmpPath = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  try {
    await mkdirDurable(dir);
    const file = await open(tmpPath, 'w', 0o600);
    try {
      await file.writeFile(text);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(tmpPath, path);
  } catch (err) {
    await rm(tmpPath, { force: true }).catch(() => {});
    throw new MetadataWriteError(path, err);
  }
  await fsyncDir(dir).catch((err: unknown) =>
    process.emitWarning(`${path} was replaced, but the fsync of ${dir} failed (${errnoText(err)}): the change may not survive a power loss`),
  );
}

/** Removes temp files a failed or interrupted writeFileAtomic left in `dir`. */
export async function removeTempFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir)) if (TEMP_FILE.test(name)) await rm(join(dir, name), { force: true });
}

function errnoText(err: unknown): string {
  return (err as NodeJS.ErrnoException)?.code ?? (err as Error)?.message ?? String(err);
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
