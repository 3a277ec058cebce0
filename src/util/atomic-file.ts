import { mkdir, open, readdir, rename, rm, stat } from 'node:fs/promises';
import { dirname, basename, join, resolve } from 'node:path';
import { MetadataWriteError } from '../errors.js';

/** Temp files of writeFileAtomic: `.<name>.<pid>.<ms>.tmp`. */
const TEMP_FILE = /^\..+\.\d+\.\d+\.tmp$/;

/**
 * Replaces `path` with `text` so that a crash at any moment leaves either the old or the new file,
 * never a torn one: write a temp file beside it, fsync it, rename over the target, fsync the directory.
 * It resolves only once the new file would survive a power loss. Any failure throws MetadataWriteError
 * (503 naming the file), so the caller leaves its memory as it was. A failure before the rename removes
 * the temp file and leaves the old file. A failed directory fsync comes after the rename: the new file is
 * in place but may not survive a power loss, so the change is refused all the same (a caller whose memory
 * mirrors the file puts the old content back with writeFileAtomicOrRestore).
 */
export async function writeFileAtomic(path: string, text: string | Uint8Array): Promise<void> {
  const dir = dirname(path);
  const tmpPath = join(dir, `.${basename(path)}.${process.pid}.${Date.now()}.tmp`);
  try {
    await mkdirDurable(dir);
    await writeSynced(tmpPath, text);
    await rename(tmpPath, path);
  } catch (err) {
    await rm(tmpPath, { force: true }).catch(() => {});
    throw new MetadataWriteError(path, err);
  }
  await fsyncDir(dir).catch((err: unknown) => {
    throw new MetadataWriteError(path, err);
  });
}

/**
 * writeFileAtomic for a file that holds the caller's whole state in memory (models.json, rules.json,
 * inends.json). When writing `text` fails, `previous` (the state memory keeps) is written back, so a
 * restart does not find a change that was answered 503 (a failed directory fsync leaves the new file in
 * place). That write is best effort and its own failure is not reported: the original error is what the
 * caller answers, and the next successful write replaces the file with memory's state anyway. Only a power
 * loss before then can bring back either version.
 */
export async function writeFileAtomicOrRestore(path: string, text: string, previous: string): Promise<void> {
  try {
    await writeFileAtomic(path, text);
  } catch (err) {
    await writeFileAtomic(path, previous).catch(() => {});
    throw err;
  }
}

async function writeSynced(path: string, text: string | Uint8Array): Promise<void> {
  const file = await open(path, 'w', 0o600);
  try {
    await file.writeFile(text);
    await file.sync();
  } finally {
    await file.close();
  }
}

/** Removes temp files a failed or interrupted writeFileAtomic left in `dir`. */
export async function removeTempFiles(dir: string): Promise<void> {
  for (const name of await readdir(dir)) if (TEMP_FILE.test(name)) await rm(join(dir, name), { force: true });
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
