/**
 * The built CLI (`dist/cli.js`, from `npx tsc -p tsconfig.json`): printing the default configuration,
 * and `serve` starting on a temp config, answering /healthz and exiting 0 on SIGTERM.
 */
import { spawn, spawnSync } from 'node:child_process';
import ExcelJS from 'exceljs';
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readFile } from 'node:fs/promises';
import { writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfigText, loadConfig } from '../../src/config/index.js';
import { checkRecord } from '../../src/models/record-check.js';
import { openData } from '../../src/server.js';
import { parseCsv } from '../support/client.js';
import { writeTestConfig } from '../support/service.js';
import { tiedCommand } from '../support/tied-spawn.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

describe('cli', () => {
  it('dist/cli.js is built', () => {
    expect(existsSync(CLI), 'run npx tsc -p tsconfig.json first').toBe(true);
  });

  it('config --print-defaults prints the default ini and exits 0', () => {
    const r = spawnSync(process.execPath, [CLI, 'config', '--print-defaults'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(defaultConfigText());
    expect(r.stdout).toContain('[plugin.http_server]');
    expect(r.stdout).toContain('dataschema_secrets');
    // D15: a key that is accepted but not applied says so where it is set.
    expect(r.stdout).toMatch(/; Accepted for compatibility, not applied: an idle keep-alive connection closes after 10 s\n; [^\n]*\nidle_timeout_s = 60\n/);
  });

  it('usage errors exit 2', () => {
    const r = spawnSync(process.execPath, [CLI, 'frobnicate'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown command');
    const e = spawnSync(process.execPath, [CLI, 'export'], { encoding: 'utf8' });
    expect(e.status).toBe(2);
    expect(e.stderr).toContain('--model');
  });

  it('serve starts, logs a start-up summary with ISO times, answers /healthz, and exits 0 on SIGTERM', async () => {
    const { dir, file } = await writeTestConfig();
    await writeFile(file, (await readFile(file, 'utf8')).replace('log_level = silent', 'log_level = info'));
    const child = spawn(...tiedCommand(process.execPath, [CLI, 'serve', '--config', file]), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      const address = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no address printed; stdout: ${out} stderr: ${err}`)), 15_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
        child.once('exit', (code) => reject(new Error(`exited early with ${code}: ${err}`)));
      });
      const summary = out.split('\n').find((l) => l.includes('published models'));
      expect(JSON.parse(summary as string)).toMatchObject({
        time: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        publishedModels: 0,
        records: 0,
        sync: 'none',
        freeDiskBytes: expect.any(Number),
        msg: expect.stringMatching(/^0 published models, 0 records, sync none, \d+ MiB free in /),
      });
      const r = await fetch(`${address}/healthz`);
      expect(r.status).toBe(200);
      expect(((await r.json()) as { data: { status: string } }).data.status).toBe('ok');
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('help prints the usage and exits 0', () => {
    const r = spawnSync(process.execPath, [CLI, 'help'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Usage:\n/);
    expect(r.stdout).toBe(spawnSync(process.execPath, [CLI, '--help'], { encoding: 'utf8' }).stdout);
  });

  it('offline commands say to stop the service or use the HTTP API while it holds the data directory; --from > --to is an error', async () => {
    const { dir, file } = await writeTestConfig();
    const { config } = await loadConfig({ file, env: {} });
    const { store } = await openData(config);
    try {
      const cases: Array<[string[], string]> = [
        [['export', '--model', 'SCHEMA22222222'], 'export works on the store directly; stop the service first or use the HTTP API (GET /api/v1/datacenter/exportData)'],
        [['backup', '--model', 'SCHEMA22222222'], 'backup works on the store directly; stop the service first or use the HTTP API (GET /api/v1/datacenter/backup)'],
        [['import', '--model', 'SCHEMA22222222', '--in', file], 'stop the service first or use the HTTP API (POST /api/v1/datacenter/importData)'],
      ];
      for (const [args, message] of cases) {
        const r = spawnSync(process.execPath, [CLI, ...args, '--config', file], { encoding: 'utf8' });
        expect(r.status, r.stderr).toBe(1);
        expect(r.stderr).toMatch(new RegExp(`^edge-datacenter: data directory \\S+ is in use by process ${process.pid}`));
        expect(r.stderr).toContain(message);
      }
      const backwards = spawnSync(process.execPath, [CLI, 'export', '-m', 'SCHEMA22222222', '--from', '5', '--to', '3', '-c', file], { encoding: 'utf8' });
      expect(backwards.status).toBe(2);
      expect(backwards.stderr).toMatch(/^--from must be at most --to \(3\), got 5\n/);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('export writes the store read path to a file (CSV, JSONL and XLSX) and exits 0', async () => {
    const { dir, file } = await writeTestConfig();
    try {
      const { config } = await loadConfig({ file, env: {} });
      const { store, registry } = await openData(config);
      const model = await registry.create({ name: 'cli model' });
      await registry.createAttribute({ schemaId: model.uuid, name: 'v', type: 'INTEGER' });
      await registry.createAttribute({ schemaId: model.uuid, name: 'note', type: 'STRING' });
      await registry.publish(model.uuid);
      const published = registry.get(model.uuid);
      const log = registry.log(model.uuid);
      for (let i = 1; i <= 500; i++) {
        const checked = checkRecord(published, { v: i, note: i === 2 ? 'a,b "c"' : i === 3 ? '=1+2' : `n${i}` }, 'save');
        if (!checked.ok) throw new Error(checked.error);
        log.save(checked.record);
      }
      await store.close();

      const out = join(dir, 'out.csv');
      const r = spawnSync(process.execPath, [CLI, 'export', '--model', model.uuid, '--format', 'csv', '--out', out, '--config', file], {
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toContain(`exported 500 records of ${model.uuid}`);
      const text = await readFile(out, 'utf8');
      expect(text.charCodeAt(0)).toBe(0xfeff);
      const rows = parseCsv(text.slice(1));
      expect(rows[0]).toEqual(['id', 'create_at', 'v', 'note']);
      expect(rows).toHaveLength(501);
      expect(rows[2]).toEqual(['2', expect.stringMatching(/Z$/), '2', 'a,b "c"']);
      expect(rows[3][3]).toBe("'=1+2");
      const rawCsv = spawnSync(process.execPath, [CLI, 'export', '-m', model.uuid, '--formulas', 'raw', '--from', '3', '--to', '3', '-c', file], {
        encoding: 'utf8',
      });
      expect(rawCsv.status, rawCsv.stderr).toBe(0);
      expect(parseCsv(rawCsv.stdout.slice(1))[1][3]).toBe('=1+2');
      const badMode = spawnSync(process.execPath, [CLI, 'export', '-m', model.uuid, '--formulas', 'off', '-c', file], { encoding: 'utf8' });
      expect(badMode.status).toBe(1);
      expect(badMode.stderr).toContain("'formulas' must be escape (the default) or raw");

      const j = spawnSync(process.execPath, [CLI, 'export', '-m', model.uuid, '-f', 'jsonl', '--from', '10', '--to', '12', '-c', file], {
        encoding: 'utf8',
      });
      expect(j.status, j.stderr).toBe(0);
      expect(j.stdout.trimEnd().split('\n').map((l) => JSON.parse(l).v)).toEqual([10, 11, 12]);

      const xlsxOut = join(dir, 'out.xlsx');
      const x = spawnSync(process.execPath, [CLI, 'export', '-m', model.uuid, '-f', 'xlsx', '--out', xlsxOut, '-c', file], { encoding: 'utf8' });
      expect(x.status, x.stderr).toBe(0);
      expect(x.stderr).toContain(`exported 500 records of ${model.uuid}`);
      const book = new ExcelJS.Workbook();
      await book.xlsx.readFile(xlsxOut);
      const sheet = book.worksheets[0];
      expect(sheet.rowCount).toBe(501);
      expect(sheet.getRow(4).getCell(3).value).toBe(3);
      expect(sheet.getRow(4).getCell(4).value).toEqual({ richText: [{ text: '=1+2' }] });

      const unknown = spawnSync(process.execPath, [CLI, 'export', '--model', 'SCHEMA22222222', '--config', file], { encoding: 'utf8' });
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toBe(`edge-datacenter: model SCHEMA22222222 not found in data directory ${config.main.dataDir} (give the service's configuration file with --config)\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('serve on a first start says where the generated credentials are; SIGINT exits 0', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edc-cli-'));
    const file = join(dir, 'min.ini');
    await writeFile(file, `[main]\ndata_dir = ${join(dir, 'data')}\nlog_level = silent\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n`);
    const child = spawn(...tiedCommand(process.execPath, [CLI, '--config', file]), { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no address printed: ${out}`)), 15_000);
        child.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('listening on')) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      expect(out).toContain('First start');
      expect(out).toContain(join(dir, 'data', 'credentials.ini'));
      const exited = new Promise<string>((resolve) => child.once('exit', (code, signal) => resolve(`${code} ${signal}`)));
      child.kill('SIGINT');
      expect(await exited, err).toBe('0 null');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
      await rm(dir, { recursive: true, force: true });
    }
  });
});
