/**
 * Sealed segments are opened on demand: a model with thousands of segments opens, serves every record and
 * accepts writes in a process whose open-file limit is far below its segment count, and restarts under
 * that limit (clean, after a crash, and with every index file to rebuild). Real files, a real child
 * process under `prlimit --nofile`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { SEALED_FDS_MAX_DEFAULT } from '../../src/store/base/constants.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = path.join(here, '../../dist/store/index.js');
const FD_LIMIT = 256;
const SEGMENTS = 3000;
const root = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'fd-limit-'));

interface Summary {
  segments: number;
  total: number;
  lastId: number;
  clean: boolean;
  openFdsMax: number;
}

function child(...args: string[]): Summary {
  const r = spawnSync('prlimit', [`--nofile=${FD_LIMIT}:${FD_LIMIT}`, process.execPath, path.join(here, 'fd-limit-child.mjs'), ...args], {
    encoding: 'utf8',
    timeout: 600_000, // a ceiling: it took 75 s at load 11
  });
  expect(`${r.stderr}exit ${r.status}`, `child ${args.join(' ')}`).toBe('exit 0');
  return JSON.parse(r.stdout.trim()) as Summary;
}

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

describe(`a model with ${SEGMENTS} sealed segments under an open-file limit of ${FD_LIMIT}`, () => {
  it('is written, read whole and reopened (clean, after a crash, with its indexes rebuilt) within the limit', () => {
    expect(fs.existsSync(compiled), 'dist/store missing: run `npx tsc -p tsconfig.json` (npm test does)').toBe(true);
    const created = child('create', root, String(SEGMENTS));
    expect(created.segments).toBeGreaterThanOrEqual(SEGMENTS);
    // Node's own files (stdio, epoll, the thread pool's pipes) plus the store's: the cache, the active segment, the manifest.
    expect(created.openFdsMax).toBeLessThan(SEALED_FDS_MAX_DEFAULT + 40);

    const reopened = child('reopen', path.join(root), 'crash');
    expect(reopened.clean).toBe(true);
    expect(reopened.lastId).toBe(created.lastId + 50);
    expect(reopened.openFdsMax).toBeLessThan(SEALED_FDS_MAX_DEFAULT + 40);

    const afterCrash = child('reopen', root);
    expect(afterCrash.clean).toBe(false);
    expect(afterCrash.lastId).toBe(reopened.lastId + 50);

    const modelDir = path.join(root, 'many');
    for (const f of fs.readdirSync(modelDir)) if (f.endsWith('.idx')) fs.rmSync(path.join(modelDir, f));
    const rebuilt = child('reopen', root);
    expect(rebuilt.clean).toBe(false);
    expect(rebuilt.lastId).toBe(afterCrash.lastId + 50);
    expect(rebuilt.segments).toBeGreaterThanOrEqual(SEGMENTS);
  }, 660_000);
});
