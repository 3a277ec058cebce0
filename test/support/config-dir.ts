/** A temp directory per test (made before, removed after) and a config file written into it and loaded. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { loadConfig } from '../../src/config/index.js';

export interface ConfigDir {
  /** The current test's directory. */
  readonly path: string;
  /** Writes `text` as `<path>/edge.ini` and loads it with `env` as the environment. */
  load(text: string, env?: NodeJS.ProcessEnv): ReturnType<typeof loadConfig>;
}

export function useConfigDir(prefix: string): ConfigDir {
  let path = '';
  beforeEach(async () => {
    path = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(async () => {
    await rm(path, { recursive: true, force: true });
  });
  return {
    get path() {
      return path;
    },
    async load(text, env = {}) {
      const file = join(path, 'edge.ini');
      await writeFile(file, text);
      return loadConfig({ file, env });
    },
  };
}
