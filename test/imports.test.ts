/**
 * The import graph of src/ has no cycle, type-only imports included: a cycle means two modules own one
 * concern between them (the worker protocol once lived half in scripts/types.ts, half in ops-pack.ts).
 * The folders keep the directions their README.md states: a folder whose README says it "May import:
 * every folder below" holds sub-folders, and each of those imports only the siblings its own README's
 * "May import:" line names, and never the files of the folder above it (the orchestrators). No folder
 * holds more than 16 modules directly. The script worker's modules load no npm package but wasmoon.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gm;

const UI_JS = join(SRC, 'ui/public/js');

/** TypeScript modules, and the UI's own ES modules (not its vendored ones). */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') || (entry.name.endsWith('.js') && path.startsWith(UI_JS)) ? [path] : [];
  });
}

/** Every relative import of each file, as paths of .ts files. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const module = (target: string): string => (existsSync(target) ? target : target.replace(/\.js$/, '.ts'));
    const targets = [...text.matchAll(IMPORT)].map((m) => module(resolve(dirname(file), m[1])));
    graph.set(file, targets);
  }
  return graph;
}

/** The groups of files that import each other (strongly connected components of more than one file, Tarjan). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (file: string): void => {
    index.set(file, index.size);
    low.set(file, index.get(file)!);
    stack.push(file);
    onStack.add(file);
    for (const target of graph.get(file) ?? []) {
      if (!index.has(target)) {
        visit(target);
        low.set(file, Math.min(low.get(file)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(file, Math.min(low.get(file)!, index.get(target)!));
      }
    }
    if (low.get(file) !== index.get(file)) return;
    const group: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      group.push(relative(SRC, member));
    } while (member !== file);
    if (group.length > 1) groups.push(group.sort());
  };
  for (const file of graph.keys()) if (!index.has(file)) visit(file);
  return groups.sort((a, b) => a[0].localeCompare(b[0]));
}

/** Known, and for src/http to undo: the export writer and its xlsx part import each other (types one way). */
const KNOWN_CYCLES: string[][] = [];

describe('src import graph', () => {
  it('has no cycle between files but the known one', () => {
    const graph = importGraph();
    expect(graph.size).toBeGreaterThan(50);
    expect(cycles(graph)).toEqual(KNOWN_CYCLES);
  });
});

/** The "May import:" line of a folder's README.md; undefined when it has none. */
function mayImport(dir: string): string | undefined {
  const readme = join(dir, 'README.md');
  if (!existsSync(readme)) return undefined;
  return /^May import: (.*?)\.?$/m.exec(readFileSync(readme, 'utf8'))?.[1];
}

/** Each layered folder (its README: "May import: every folder below") and the siblings each sub-folder may import. */
function layers(): Map<string, Map<string, Set<string>>> {
  const out = new Map<string, Map<string, Set<string>>>();
  const walk = (dir: string): void => {
    const subs = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory() && e.name !== 'vendor');
    if (mayImport(dir) === 'every folder below') {
      const allowed = new Map<string, Set<string>>();
      for (const sub of subs) {
        const line = mayImport(join(dir, sub.name));
        expect(line, `${relative(SRC, join(dir, sub.name))}/README.md has a "May import:" line`).toBeDefined();
        const names = (line as string).startsWith('nothing') ? [] : (line as string).split(',').map((n) => n.trim());
        for (const n of names) expect(subs.map((e) => e.name), `${relative(SRC, join(dir, sub.name))}/README.md names a sibling`).toContain(n);
        allowed.set(sub.name, new Set(names));
      }
      out.set(dir, allowed);
    }
    for (const sub of subs) walk(join(dir, sub.name));
  };
  walk(SRC);
  return out;
}

/** Imports that go against a folder's stated direction, as "from -> to". */
function againstDirection(graph: Map<string, string[]>): string[] {
  const bad: string[] = [];
  for (const [parent, allowed] of layers()) {
    const folderOf = (file: string): string | undefined => {
      const rel = relative(parent, file);
      if (rel.startsWith('..')) return undefined;
      return rel.includes(sep) ? rel.split(sep)[0] : '';
    };
    for (const [file, targets] of graph) {
      const from = folderOf(file);
      if (from === undefined || from === '') continue;
      for (const target of targets) {
        const to = folderOf(target);
        if (to === undefined || to === from) continue;
        if (to === '' || !(allowed.get(from) as Set<string>).has(to)) bad.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
      }
    }
  }
  return bad.sort();
}

describe('src folders', () => {
  it('import only in the directions their README.md states', () => {
    const graph = importGraph();
    expect(layers().size).toBeGreaterThanOrEqual(4);
    expect(againstDirection(graph)).toEqual([]);
  });

  it('src/inputs imports only scripts/shared, util, config and errors.ts: the engine imports it, never the reverse', () => {
    const graph = importGraph();
    const inputs = join(SRC, 'inputs');
    const allowed = [join(SRC, 'scripts/shared'), join(SRC, 'util'), join(SRC, 'config'), join(SRC, 'errors.ts'), inputs];
    const bad: string[] = [];
    let files = 0;
    for (const [file, targets] of graph) {
      if (!file.startsWith(inputs + sep)) continue;
      files++;
      for (const target of targets) if (!allowed.some((a) => target === a || target.startsWith(a + sep))) bad.push(`${relative(SRC, file)} -> ${relative(SRC, target)}`);
    }
    expect(files).toBeGreaterThanOrEqual(5);
    expect(bad).toEqual([]);
  });

  it('the script worker loads no npm package but wasmoon: each worker pays for what it imports (msgpackr alone was 5.9 MiB of RSS)', () => {
    const VALUE_IMPORT = /^\s*(?:import|export)\s(?!type\b)[^;]*?from\s+'([^']+)'/gm;
    const packages = new Set<string>();
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, target] of readFileSync(file, 'utf8').matchAll(VALUE_IMPORT)) {
        if (!target.startsWith('.')) packages.add(target);
        else visit(resolve(dirname(file), target).replace(/\.js$/, '.ts'));
      }
    };
    visit(join(SRC, 'scripts/lua/worker.ts'));
    expect(seen.size).toBeGreaterThan(10);
    expect([...packages].filter((p) => !p.startsWith('node:')).sort()).toEqual(['wasmoon']);
  });

  it('hold at most 16 modules each', () => {
    const crowded: string[] = [];
    const walk = (dir: string): void => {
      const entries = readdirSync(dir, { withFileTypes: true });
      const modules = entries.filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name)).length;
      if (modules > 16 && basename(dir) !== 'vendor') crowded.push(`${relative(SRC, dir) || 'src'}: ${modules}`);
      for (const e of entries) if (e.isDirectory()) walk(join(dir, e.name));
    };
    walk(SRC);
    expect(crowded).toEqual([]);
  });
});
