/**
 * `edge-datacenter bench` without running a bench: its service runs with the V8 flags of `npm run serve`
 * and the systemd unit, bad flags exit 2 naming the flag and the rule before anything runs, report files
 * are not overwritten, and --compare of two reports prints a ratio per figure. The run itself, from a production install, is
 * test/deploy/bench-install.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { plan } from '../../src/bench/options.js';
import { FIGURES, REPORT_FORMAT, reportBase, type FigureKey, type Report } from '../../src/bench/report.js';
import { SERVICE_ENV, SERVICE_NODE_FLAGS } from '../../src/bench/service.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

function bench(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, 'bench', ...args], { encoding: 'utf8', cwd: dir ?? tmpdir() });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A report as the bench writes it, each figure `scale` times its index + 1. */
function report(scale: number): Report {
  const keys = Object.keys(FIGURES) as FigureKey[];
  return {
    format: REPORT_FORMAT,
    date: '2026-11-29T10:00:00.000Z',
    device: { cpuModel: 'Cortex-A72', cores: 4, memoryBytes: 4 * 2 ** 30, kernel: '6.1.0', node: 'v20.19.0', arch: 'arm64', hostname: 'gw-1', dataFilesystem: 'ext2/3/4' },
    service: { version: '0.1.0', transport: 'uws' },
    run: { plannedSeconds: 120, seconds: 121, loadAverage: [0.1, 1.9], workload: {} },
    figures: Object.fromEntries(keys.map((k, i) => [k, scale * (i + 1)])) as Report['figures'],
  };
}

describe('bench', () => {
  it('starts its service with the V8 flags and environment of scripts/start.mjs and of the systemd unit in docs/deploy.md', async () => {
    const start = /^const NODE_FLAGS = \[([^\]]*)\];$/m.exec(await readFile(join(ROOT, 'scripts', 'start.mjs'), 'utf8'));
    expect(start?.[1].split(',').map((f) => f.trim().replace(/^'|'$/g, ''))).toEqual(SERVICE_NODE_FLAGS);
    const deploy = await readFile(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    expect(deploy).toContain(`ExecStart=/usr/bin/node ${SERVICE_NODE_FLAGS.join(' ')} /opt/edge-datacenter/current/dist/cli.js serve`);
    const env = /^const SERVE_ENV = \{ ([^}]*) \};$/m.exec(await readFile(join(ROOT, 'scripts', 'start.mjs'), 'utf8'));
    expect(Object.fromEntries((env?.[1] ?? '').split(',').map((pair) => pair.split(':').map((part) => part.trim().replace(/^'|'$/g, ''))))).toEqual(SERVICE_ENV);
    for (const [name, value] of Object.entries(SERVICE_ENV)) expect(deploy).toContain(`Environment=${name}=${value}`);
  });

  it('refuses bad flags with exit 2, naming the flag and the rule, before running', () => {
    const cases: Array<[string[], string]> = [
      [['--seconds', 'abc'], '--seconds must be a whole number of seconds from 20 to 3600, got "abc"'],
      [['--seconds', '5'], '--seconds must be a whole number of seconds from 20 to 3600, got "5"'],
      [['--seconds', '1.5e2'], 'got "1.5e2"'],
      [['--quick', '--seconds', '30'], 'give --quick or --seconds, not both'],
      [['--out', '/nonexistent/reports'], '--out must be an existing directory, got "/nonexistent/reports"'],
      [['--dir', '/nonexistent/data'], '--dir must be an existing directory'],
      [['--in', 'mine.json'], 'give --compare OTHER too'],
      [['--in', 'mine.json', '--compare', 'other.json', '--quick'], '--seconds and --quick do not apply'],
    ];
    for (const [args, message] of cases) {
      const r = bench(...args);
      expect(r.status, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.stderr).toContain('edge-datacenter bench [--seconds N | --quick]');
    }
  });

  it('--compare of a file that is not a report exits 1 naming the file', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-bench-'));
    await writeFile(join(dir, 'other.json'), '{"figures":{}}');
    await writeFile(join(dir, 'mine.json'), JSON.stringify(report(1)));
    const wrong = bench('--in', 'mine.json', '--compare', 'other.json');
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`edge-datacenter bench: other.json is not a report of edge-datacenter bench (format ${REPORT_FORMAT})`);
    const missing = bench('--in', 'mine.json', '--compare', 'absent.json');
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('cannot read the report absent.json');
  });

  it('--compare prints every figure of both reports and their ratio', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-bench-'));
    await writeFile(join(dir, 'mine.json'), JSON.stringify(report(3)));
    await writeFile(join(dir, 'other.json'), JSON.stringify(report(2)));
    const r = bench('--in', 'mine.json', '--compare', 'other.json');
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('this:  mine.json');
    expect(r.stdout).toContain('Cortex-A72, 4 cores, 4.0 GiB, linux 6.1.0 arm64, Node v20.19.0, HTTP transport uws');
    for (const f of Object.values(FIGURES)) expect(r.stdout).toMatch(new RegExp(`^\\| ${escape(f.label)} \\|[^\\n]*\\| 1\\.50 \\| ${f.better} \\|$`, 'm'));
  });

  it('names a second report of the same day apart from the first', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edc-bench-'));
    const date = new Date('2026-11-29T10:00:00Z');
    const first = reportBase(dir, date, 'gw 1');
    expect(first).toBe(join(dir, 'edge-datacenter-bench-gw_1-2026-11-29'));
    await writeFile(`${first}.json`, '{}');
    expect(reportBase(dir, date, 'gw 1')).toBe(`${first}-2`);
  });

  it('shares a run between its parts with room for starts and the import', () => {
    for (const total of [20, 120, 600]) {
      const parts = Object.values(plan(total)).reduce((a, b) => a + b, 0);
      expect(parts).toBeLessThanOrEqual(total * 0.9);
      expect(parts).toBeGreaterThanOrEqual(total * 0.8);
    }
  });
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
