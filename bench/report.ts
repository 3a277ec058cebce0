import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { cpus, totalmem, arch, platform, release } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root, from both bench/ (tsx) and dist-bench/bench/ (compiled). */
export const repoRoot = (() => {
  const here = dirname(fileURLToPath(import.meta.url));
  return here.includes('dist-bench') ? join(here, '..', '..') : join(here, '..');
})();

export function machineLine(): string {
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const memGiB = (totalmem() / 2 ** 30).toFixed(0);
  return `${cpu}, ${cpus().length} cores, ${memGiB} GiB, ${platform()} ${release()} ${arch()}, Node ${process.version}`;
}

export interface Figure {
  name: string;
  value: number;
  unit: string;
  baseline?: number;
  /** How the ratio reads: higher-is-better ratios divide ours by the baseline, lower-is-better the reverse. */
  better?: 'higher' | 'lower';
  target?: string;
  /** The same figure for other systems measured in the same run (a column each), by name. */
  peers?: Record<string, number>;
}

export function ratioOf(f: Figure, other = f.baseline): number | undefined {
  if (other === undefined || other === 0 || f.value === 0) return undefined;
  return f.better === 'lower' ? other / f.value : f.value / other;
}

/** The peer columns of a table: every peer name any figure has, in first-seen order. */
function peerNames(figures: readonly Figure[]): string[] {
  return [...new Set(figures.flatMap((f) => Object.keys(f.peers ?? {})))];
}

/** A peer's cell: its value and how many times better ours is, `–` when it was not measured. */
function peerCell(f: Figure, peer: string): string {
  const value = f.peers?.[peer];
  if (value === undefined) return '–';
  const ratio = ratioOf(f, value);
  return `${formatNumber(value)} ${f.unit}${ratio === undefined ? '' : ` (${ratio.toFixed(1)}x)`}`;
}

export function formatNumber(n: number): string {
  if (Math.abs(n) >= 1000) return Math.round(n).toLocaleString('en-US');
  if (Math.abs(n) >= 10) return n.toFixed(1);
  return n.toPrecision(3);
}

export function printTable(title: string, figures: readonly Figure[]): void {
  console.log(`\n${title}`);
  const peers = peerNames(figures);
  console.table(
    figures.map((f) => {
      const ratio = ratioOf(f);
      return {
        figure: f.name,
        ours: `${formatNumber(f.value)} ${f.unit}`,
        baseline: f.baseline === undefined ? '' : `${formatNumber(f.baseline)} ${f.unit}`,
        ratio: ratio === undefined ? '' : `${ratio.toFixed(1)}x`,
        ...Object.fromEntries(peers.map((p) => [p, peerCell(f, p)])),
        target: f.target ?? '',
      };
    }),
  );
}

function markdownTable(figures: readonly Figure[], baselineName: string): string {
  const peers = peerNames(figures);
  const rows = figures.map((f) => {
    const ratio = ratioOf(f);
    const base = f.baseline === undefined ? '–' : `${formatNumber(f.baseline)} ${f.unit}`;
    const cells = [f.name, `${formatNumber(f.value)} ${f.unit}`, base, ratio === undefined ? '–' : `${ratio.toFixed(1)}x`];
    return `| ${[...cells, ...peers.map((p) => peerCell(f, p)), f.target ?? ''].join(' | ')} |`;
  });
  const header = ['figure', 'edge-datacenter', baselineName, 'ratio', ...peers.map((p) => `${p} (x: ours better by)`), 'target'];
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---|').join('')}`, ...rows].join('\n');
}

/**
 * Writes the flat `{name: number}` results file and replaces this benchmark's section of
 * docs/performance.md, so every run leaves the numbers and the machine side by side.
 */
export async function writeResults(
  key: string,
  title: string,
  baselineName: string,
  figures: readonly Figure[],
  notes: string,
): Promise<void> {
  const flat: Record<string, number> = {};
  for (const f of figures) {
    flat[f.name] = f.value;
    if (f.baseline !== undefined) flat[`${f.name} (baseline)`] = f.baseline;
    const ratio = ratioOf(f);
    if (ratio !== undefined) flat[`${f.name} (ratio)`] = Number(ratio.toFixed(2));
    for (const [peer, value] of Object.entries(f.peers ?? {})) flat[`${f.name} (${peer})`] = value;
  }
  const resultsPath = join(repoRoot, 'bench', 'results', `${key}.json`);
  await mkdir(dirname(resultsPath), { recursive: true });
  await writeFile(resultsPath, JSON.stringify(flat, null, 2) + '\n');

  const docPath = join(repoRoot, 'docs', 'performance.md');
  let doc: string;
  try {
    doc = await readFile(docPath, 'utf8');
  } catch {
    doc = '# Performance\n\nEvery section is written by its benchmark; run it again to refresh it.\n';
  }
  const begin = `<!-- ${key}:begin -->`;
  const end = `<!-- ${key}:end -->`;
  const section = [
    begin,
    `## ${title}`,
    '',
    `Measured ${new Date().toISOString().slice(0, 10)} on ${machineLine()}.`,
    '',
    markdownTable(figures, baselineName),
    '',
    notes,
    end,
  ].join('\n');
  const start = doc.indexOf(begin);
  const stop = doc.indexOf(end);
  doc = start >= 0 && stop > start ? doc.slice(0, start) + section + doc.slice(stop + end.length) : `${doc.trimEnd()}\n\n${section}\n`;
  await writeFile(docPath, doc);
  console.log(`\nwrote ${resultsPath} and docs/performance.md`);
}
