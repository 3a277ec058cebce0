/**
 * Worker threads and child processes run dist/; the global setup (test/support/fresh-dist.ts) rebuilds
 * it when it is older than src/, so the code they run is the code in src/.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { staleOutputs } from './support/fresh-dist.js';

let root: string | undefined;
afterEach(() => {
  if (root) rmSync(root, { recursive: true, force: true });
  root = undefined;
});

function file(path: string, ageS: number): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, '');
  const when = Date.now() / 1000 - ageS;
  utimesSync(path, when, when);
}

describe('fresh dist', () => {
  it('finds every source whose output is missing or older, and nothing else', () => {
    root = mkdtempSync(join(tmpdir(), 'fresh-dist-'));
    file(join(root, 'src/a.ts'), 100);
    file(join(root, 'dist/a.js'), 50); // built after the last edit
    file(join(root, 'src/scripts/b.ts'), 10);
    file(join(root, 'dist/scripts/b.js'), 50); // edited after the build
    file(join(root, 'src/scripts/c.ts'), 100); // never built
    file(join(root, 'src/types.d.ts'), 10); // no output of its own
    expect(staleOutputs(root).sort()).toEqual(['src/scripts/b.ts', 'src/scripts/c.ts']);
  });

  it('leaves no stale output in this checkout by the time tests run', () => {
    expect(staleOutputs()).toEqual([]);
  });
});
