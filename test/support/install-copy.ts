/**
 * A copy of the install in a temp directory, for tests that need a uWebSockets.js other than the shared
 * one: dist/ and package.json copied, every package linked from the shared node_modules except
 * uWebSockets.js, which is copied without its binaries; the caller then puts what it wants in `binDir`.
 * The shared node_modules is never touched.
 */
import { cp, mkdir, readdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';

export const ROOT = join(import.meta.dirname, '..', '..');
export const SHARED_NODE_MODULES = join(ROOT, 'node_modules');
/** The uWS binary this Node loads: platform, CPU and ABI. */
export const HOST_UWS_BINARY = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;

export interface InstallCopy {
  dir: string;
  cli: string;
  /** The copy's uWebSockets.js/dist/bin, empty. */
  binDir: string;
  /** The shared install's uWS binaries. */
  sharedBinDir: string;
}

export async function copyInstall(dir: string): Promise<InstallCopy> {
  await cp(join(ROOT, 'dist'), join(dir, 'dist'), { recursive: true });
  await cp(join(ROOT, 'package.json'), join(dir, 'package.json'));
  await mkdir(join(dir, 'node_modules'));
  for (const entry of await readdir(SHARED_NODE_MODULES)) {
    if (entry !== 'uWebSockets.js') await symlink(join(SHARED_NODE_MODULES, entry), join(dir, 'node_modules', entry));
  }
  const shared = join(SHARED_NODE_MODULES, 'uWebSockets.js');
  const uws = join(dir, 'node_modules', 'uWebSockets.js');
  await mkdir(join(uws, 'dist', 'bin'), { recursive: true });
  await cp(join(shared, 'package.json'), join(uws, 'package.json'));
  for (const file of await readdir(join(shared, 'dist'))) {
    if (file !== 'bin') await cp(join(shared, 'dist', file), join(uws, 'dist', file));
  }
  return { dir, cli: join(dir, 'dist', 'cli.js'), binDir: join(uws, 'dist', 'bin'), sharedBinDir: join(shared, 'dist', 'bin') };
}
