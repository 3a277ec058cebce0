/**
 * Vitest global setup: the compiled code that tests run outside vitest's own transform is the code in
 * src/. Worker threads (the piscina Lua workers) and child processes (the CLI, the crash children)
 * load plain JavaScript from dist/, so a test run after an edit to src/ would otherwise test the
 * previous build. Before any test runs (and before each rerun in watch mode), every src/**\/*.ts is
 * compared with its dist/ output; if one is missing or older, `tsc -p tsconfig.json` builds dist/ once
 * (`npm run build`, a few seconds), and the run fails loudly if dist/ is still stale after that.
 * docs/architecture.md, "Worker code under test", says why this and not a TypeScript loader.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function typeScriptSources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return typeScriptSources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The src/ files (relative to `root`) whose dist/ output is missing or older than they are. */
export function staleOutputs(root: string = REPO_ROOT): string[] {
  const srcDir = join(root, 'src');
  return typeScriptSources(srcDir).filter((source) => {
    const output = join(root, 'dist', relative(srcDir, source).replace(/\.ts$/, '.js'));
    try {
      return statSync(output).mtimeMs < statSync(source).mtimeMs;
    } catch {
      return true;
    }
  }).map((source) => relative(root, source));
}

function build(): { ok: boolean; output: string } {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: REPO_ROOT, encoding: 'utf8' });
  return { ok: run.status === 0, output: `${run.stdout ?? ''}${run.stderr ?? ''}${run.error?.message ?? ''}` };
}

export function ensureFreshDist(): void {
  const stale = staleOutputs();
  if (stale.length === 0) return;
  const shown = `${stale.slice(0, 3).join(', ')}${stale.length > 3 ? ` and ${stale.length - 3} more` : ''}`;
  process.stderr.write(`[fresh-dist] dist/ is older than ${shown}: building (tsc -p tsconfig.json)\n`);
  const { ok, output } = build();
  // tsc emits despite type errors: the tests then run what src/ says, and typecheck reports the errors.
  if (!ok) process.stderr.write(`[fresh-dist] tsc reported errors (dist/ was written anyway):\n${output}\n`);
  const still = staleOutputs();
  if (still.length > 0) {
    throw new Error(`dist/ is still older than src/ after a build (${still.join(', ')}): run npm run build and fix what it reports\n${output}`);
  }
}

export default function setup(project: TestProject): void {
  ensureFreshDist();
  project.onTestsRerun(() => ensureFreshDist());
}
