/**
 * `edge-datacenter bench` from a production install, as a gateway gets it: the `npm pack` tarball
 * unpacked, `npm ci --omit=dev` (no TypeScript, no devDependencies, no bench/ or test/), then a
 * `--quick` run writes both reports with every figure present and numeric, removes its temporary data,
 * and `--compare` of a report with itself prints 1.00 for every figure. Structure and presence only:
 * the figures depend on the machine and its load.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FIGURES, REPORT_FORMAT, type FigureKey, type Report } from '../../src/bench/report.js';
import { ROOT } from '../support/install-copy.js';

let dir: string;
let pkg: string;

function run(command: string, args: string[], cwd: string): string {
  const r = spawnSync(command, args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

/** A command that may take a while, without blocking vitest's worker (its timeout must still fire). */
function runAsync(command: string, args: string[], cwd: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.once('exit', (status) => resolve({ status, stdout, stderr }));
  });
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-bench-install-'));
  // --ignore-scripts: prepack would rebuild dist/ and write npm-shrinkwrap.json into the shared working
  // tree; the test suite's global setup has built dist/, and the shrinkwrap prepack copies is put beside
  // the unpacked package below, where npm ci reads it as it would from the tarball.
  const tarball = run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir], ROOT).trim().split('\n').pop() as string;
  run('tar', ['-xzf', join(dir, tarball)], dir);
  pkg = join(dir, 'package');
  await copyFile(join(ROOT, 'package-lock.json'), join(pkg, 'npm-shrinkwrap.json'));
  const ci = await runAsync('npm', ['ci', '--omit=dev', '--no-audit', '--no-fund'], pkg);
  if (ci.status !== 0) throw new Error(`npm ci --omit=dev exited with ${ci.status}:\n${ci.stderr}`);
}, 300_000);

afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** The report's Markdown table rows by label: the cell after the label. */
function markdownValues(md: string): Map<string, string> {
  return new Map([...md.matchAll(/^\| (.+?) \| (.+?) \|$/gm)].map((m) => [m[1], m[2]]));
}

describe('bench from a production install', () => {
  it('is an install without devDependencies, bench/ or test/, with the sample rule the bench runs', async () => {
    const modules = await readdir(join(pkg, 'node_modules'));
    for (const dev of ['typescript', 'vitest', 'tinybench', 'fast-check', 'better-sqlite3']) expect(modules).not.toContain(dev);
    const top = await readdir(pkg);
    for (const absent of ['bench', 'test']) expect(top).not.toContain(absent);
    expect(existsSync(join(pkg, 'fixtures', 'lua', 'rhilex-sample.lua'))).toBe(true);
    expect(await readdir(join(pkg, 'src')), 'only the UI files of src/').toEqual(['ui']);
    expect(existsSync(join(pkg, 'dist', 'bench', 'command.js'))).toBe(true);
  });

  it('--quick writes a JSON and a Markdown report with every figure, removes its data, and --compare with itself gives 1.00', async () => {
    const out = join(dir, 'reports');
    const scratch = join(dir, 'scratch');
    await mkdir(out);
    await mkdir(scratch);
    const r = await runAsync(process.execPath, [join(pkg, 'dist', 'cli.js'), 'bench', '--quick', '--out', out, '--dir', scratch], pkg);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toContain('bench [');

    const files = (await readdir(out)).sort();
    expect(files).toHaveLength(2);
    const [json, md] = files;
    expect(json).toMatch(/^edge-datacenter-bench-.+-\d{4}-\d{2}-\d{2}\.json$/);
    expect(md).toBe(json.replace(/\.json$/, '.md'));
    expect(await readdir(scratch), 'the temporary data directory is removed').toEqual([]);

    const report = JSON.parse(await readFile(join(out, json), 'utf8')) as Report;
    expect(report.format).toBe(REPORT_FORMAT);
    expect(report.device.cpuModel.length).toBeGreaterThan(0);
    expect(report.device.cores).toBeGreaterThan(0);
    expect(report.device.memoryBytes).toBeGreaterThan(0);
    expect(report.device.kernel.length).toBeGreaterThan(0);
    expect(report.device).toMatchObject({ node: process.version, arch: process.arch });
    expect(['uws', 'node']).toContain(report.service.transport);
    expect(Object.keys(report.figures).sort()).toEqual(Object.keys(FIGURES).sort());
    for (const [key, value] of Object.entries(report.figures)) {
      expect(typeof value, key).toBe('number');
      expect(Number.isFinite(value) && value > 0, `${key} = ${value}`).toBe(true);
    }

    const text = await readFile(join(out, md), 'utf8');
    expect(text).toContain(`${report.device.cpuModel}, ${report.device.cores} cores`);
    expect(text).toContain(`HTTP transport ${report.service.transport}`);
    const rows = markdownValues(text);
    for (const key of Object.keys(FIGURES) as FigureKey[]) {
      const { label, unit } = FIGURES[key];
      expect(rows.get(label), label).toMatch(new RegExp(`^[0-9][0-9,.]* ${unit}$`));
    }

    const same = await runAsync(process.execPath, [join(pkg, 'dist', 'cli.js'), 'bench', '--in', join(out, json), '--compare', join(out, json)], pkg);
    expect(same.status, same.stderr).toBe(0);
    for (const { label } of Object.values(FIGURES)) {
      expect(same.stdout).toMatch(new RegExp(`^\\| ${label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\|[^|\\n]*\\|[^|\\n]*\\| 1\\.00 \\|`, 'm'));
    }
  }, 240_000);
});
