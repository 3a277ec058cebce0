/**
 * docs/architecture.md stays true and short: every file and folder it names exists (a path from the
 * repository, from src/, or a module's name found under src/), and it fits on two screens.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DOC = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');

function allFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? allFiles(join(dir, e.name)) : [e.name]));
}

describe('docs/architecture.md', () => {
  it('names only files and folders that exist', () => {
    const names = new Set(allFiles(join(ROOT, 'src')));
    const named = [...DOC.matchAll(/`([\w./-]+\.(?:ts|js|md)|[\w./-]+\/)`/g)].map((m) => m[1]);
    const links = [...DOC.matchAll(/\]\(([\w.-]+\.md)(?:#[\w-]*)?\)/g)].map((m) => `docs/${m[1]}`);
    expect(named.length).toBeGreaterThan(30);
    const missing = [...named, ...links].filter(
      (p) => !existsSync(join(ROOT, p)) && !existsSync(join(ROOT, 'src', p)) && !(p.includes('/') ? false : names.has(basename(p))),
    );
    expect(missing).toEqual([]);
  });

  it('fits on two screens', () => {
    expect(DOC.split('\n').length).toBeLessThanOrEqual(100);
  });
});
