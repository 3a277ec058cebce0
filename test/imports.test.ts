/**
 * The import graph of src/ has no cycle, type-only imports included: a cycle means two modules own one
 * concern between them (the worker protocol once lived half in scripts/types.ts, half in ops-pack.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import of each file, as paths of .ts files. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets = [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1]).replace(/\.js$/, '.ts'));
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
