/**
 * Contract section 15, all or nothing under kill -9: the real CLI (`dist/cli.js restore` / `import`) is
 * killed at points spread over its run, from reading the first lines to the commit and the swap at the
 * end; the next open (in this process, as the service would) finds the model exactly as it was before or
 * exactly as the input makes it, never a part, and no staging or ready directory left behind.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { openData } from '../../src/server.js';
import { tiedCommand } from '../support/tied-spawn.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));
const UUID = 'SCHEMAKR9D6XAB';
const RECORDS = 150_000;
const T0 = 1_700_000_000_000;

/** Rounds killed after the commit point, finished by the next open (timing decides; logged, not asserted). */
let rolledForward = 0;
const root = mkdtempSync(join(tmpdir(), 'edc-restore-kill-'));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  console.log(`restore-kill: ${rolledForward} rounds were killed after the commit and finished by the next open`);
});

const model = {
  uuid: UUID,
  name: 'killed',
  description: '',
  published: true,
  createdAt: new Date(T0).toISOString(),
  attributes: [
    { uuid: 'PROPERA2B3C4D5', name: 'temp', label: '', type: 'FLOAT', rw: 'R', unit: '', description: '', rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 } },
    { uuid: 'PROPERE6F7G8H9', name: 'seq', label: '', type: 'INTEGER', rw: 'R', unit: '', description: '', rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 } },
  ],
};

function backupFile(name: string, records: number, mark: number): string {
  const lines = [JSON.stringify({ format: 'edge-datacenter-backup/1', model, records })];
  for (let i = 1; i <= records; i++) lines.push(`{"id":${i},"create_at_ms":${T0 + i},"temp":${mark},"seq":${i}}`);
  const file = join(root, name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

function importFile(records: number): string {
  const lines: string[] = [];
  for (let i = 1; i <= records; i++) lines.push(`{"create_at":${T0 + 10_000_000 + i},"temp":3,"seq":${i}}`);
  const file = join(root, 'import.jsonl');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

function config(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'edc.ini');
  writeFileSync(file, `[main]\ndata_dir = ${join(dir, 'data')}\nadmin_token = kill-test-admin-token-0123456789\nlog_level = silent\n[store]\nsync = always\n`);
  return file;
}

function runCli(ini: string, args: string[]): { status: number | null; stderr: string } {
  const r = spawnSync(process.execPath, [CLI, ...args, '--config', ini], { encoding: 'utf8' });
  return { status: r.status, stderr: r.stderr };
}

/** Runs the CLI and kills it with SIGKILL after `delayMs`; resolves with whether it had finished first. */
function killAfter(ini: string, args: string[], delayMs: number): Promise<{ finished: boolean; ms: number }> {
  return new Promise((resolve) => {
    const t = performance.now();
    const child = spawn(...tiedCommand(process.execPath, [CLI, ...args, '--config', ini]), { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), delayMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ finished: code === 0, ms: performance.now() - t });
    });
  });
}

/** What the next open finds: the model's records as [temp, seq] sums, or undefined when there is no model. */
async function state(ini: string): Promise<{ total: number; firstId: number; lastId: number; temps: Set<number>; seqOk: boolean } | undefined> {
  const { config: cfg } = await loadConfig({ file: ini, env: {} });
  const storeDir = join(cfg.main.dataDir, 'store');
  if (existsSync(join(storeDir, `.ready-${UUID}`)) || existsSync(join(storeDir, UUID, 'RESTORE.json'))) rolledForward++;
  const { store, registry } = await openData(cfg);
  try {
    const leftovers = readdirSync(join(cfg.main.dataDir, 'store')).filter((n) => /^\.(staging|ready)-/.test(n));
    expect(leftovers).toEqual([]);
    if (!registry.list().some((m) => m.uuid === UUID)) {
      expect(existsSync(join(cfg.main.dataDir, 'store', UUID))).toBe(false);
      return undefined;
    }
    const log = registry.log(UUID);
    const temps = new Set<number>();
    let seqOk = true;
    let expectedId = log.stats().firstId;
    for await (const r of log.iterate()) {
      temps.add(r.temp as number);
      if (r.id !== expectedId++) seqOk = false;
    }
    const s = log.stats();
    return { total: s.total, firstId: s.firstId, lastId: s.lastId, temps, seqOk };
  } finally {
    await store.close();
  }
}

/** Delays spread over a full run of `args`, the last ones around its end (the commit and the swap), the last one after it. */
async function delaysFor(ini: string, args: string[]): Promise<number[]> {
  const t = performance.now();
  const r = runCli(ini, args);
  expect(r.status, r.stderr).toBe(0);
  const ms = performance.now() - t;
  // The last round is never killed in practice (20x the probe): under a load that grows after the probe,
  // every other round may be killed before the commit, and a whole run must still give the new data.
  return [0.15, 0.35, 0.55, 0.7, 0.8, 0.88, 0.93, 0.97, 1.0, 1.5, 20].map((f) => Math.round(ms * f));
}

describe('kill -9 during restore and import', () => {
  it('dist/cli.js is built', () => {
    expect(existsSync(CLI), 'run npx tsc -p tsconfig.json first').toBe(true);
  });

  it('a restore that replaces a model leaves the old model or the new one, whole', async () => {
    const small = backupFile('small.jsonl', 1_000, 1);
    const big = backupFile('big.jsonl', RECORDS, 2);
    const template = join(root, 'template-restore');
    const ini = config(template);
    expect(runCli(ini, ['restore', '--in', small]).status).toBe(0);
    const probe = join(root, 'probe-restore');
    cpSync(template, probe, { recursive: true });
    const delays = await delaysFor(config(probe), ['restore', '--replace', '--in', big]);
    const outcomes: string[] = [];
    for (const [i, delay] of delays.entries()) {
      const dir = join(root, `restore-${i}`);
      cpSync(template, dir, { recursive: true });
      const round = config(dir);
      const run = await killAfter(round, ['restore', '--replace', '--in', big], delay);
      const s = await state(round);
      expect(s, `round ${i}`).toBeDefined();
      const got = s as NonNullable<typeof s>;
      expect(got.seqOk).toBe(true);
      if (got.total === RECORDS) {
        expect([...got.temps]).toEqual([2]);
        outcomes.push('new');
      } else {
        expect(run.finished).toBe(false);
        expect(got).toMatchObject({ total: 1_000, firstId: 1, lastId: 1_000 });
        expect([...got.temps]).toEqual([1]);
        outcomes.push('old');
      }
      rmSync(dir, { recursive: true, force: true });
    }
    expect(outcomes).toContain('old');
    expect(outcomes).toContain('new');
  }, 600_000);

  it('a restore of a new model leaves no model or the whole model', async () => {
    const big = backupFile('big.jsonl', RECORDS, 2);
    const template = join(root, 'template-new');
    config(template);
    const probe = join(root, 'probe-new');
    const delays = await delaysFor(config(probe), ['restore', '--in', big]);
    const outcomes: string[] = [];
    for (const [i, delay] of delays.entries()) {
      const dir = join(root, `new-${i}`);
      const round = config(dir);
      await killAfter(round, ['restore', '--in', big], delay);
      const s = await state(round);
      if (s === undefined) outcomes.push('none');
      else {
        expect(s).toMatchObject({ total: RECORDS, firstId: 1, lastId: RECORDS, seqOk: true });
        outcomes.push('new');
      }
      rmSync(dir, { recursive: true, force: true });
    }
    expect(outcomes).toContain('none');
    expect(outcomes).toContain('new');
  }, 600_000);

  it('an import leaves the model as it was or with every row', async () => {
    const small = backupFile('small.jsonl', 1_000, 1);
    const rows = importFile(RECORDS);
    const template = join(root, 'template-import');
    const ini = config(template);
    expect(runCli(ini, ['restore', '--in', small]).status).toBe(0);
    const probe = join(root, 'probe-import');
    cpSync(template, probe, { recursive: true });
    const args = ['import', '--model', UUID, '--format', 'jsonl', '--in', rows];
    const delays = await delaysFor(config(probe), args);
    const outcomes: string[] = [];
    for (const [i, delay] of delays.entries()) {
      const dir = join(root, `import-${i}`);
      cpSync(template, dir, { recursive: true });
      const round = config(dir);
      await killAfter(round, args, delay);
      const s = (await state(round)) as NonNullable<Awaited<ReturnType<typeof state>>>;
      expect(s.seqOk).toBe(true);
      if (s.total === 1_000 + RECORDS) {
        expect([...s.temps].sort()).toEqual([1, 3]);
        outcomes.push('all');
      } else {
        expect(s).toMatchObject({ total: 1_000, lastId: 1_000 });
        outcomes.push('nothing');
      }
      rmSync(dir, { recursive: true, force: true });
    }
    expect(outcomes).toContain('nothing');
    expect(outcomes).toContain('all');
  }, 600_000);

  it('a crash after the commit point is finished by the next open, at every step of the swap', async () => {
    for (const step of ['committed', 'swapped'] as const) {
      const dir = join(root, `steps-${step}`);
      const ini = config(dir);
      expect(runCli(ini, ['restore', '--in', backupFile('small.jsonl', 1_000, 1)]).status).toBe(0);
      const { config: cfg } = await loadConfig({ file: ini, env: {} });
      const { store } = await openData(cfg);
      const staging = store.stage(UUID, { fields: ['temp', 'seq'], types: ['FLOAT', 'INTEGER'] });
      for (let i = 1; i <= 500; i++) staging.append(i, T0 + i, { temp: 2, seq: i });
      await staging.commit(model);
      if (step === 'swapped') await store.adoptReady(UUID);
      await store.abandon();
      const s = await state(ini);
      expect(s, step).toMatchObject({ total: 500, firstId: 1, lastId: 500, seqOk: true });
      expect([...(s?.temps ?? [])]).toEqual([2]);
      expect(existsSync(join(cfg.main.dataDir, 'store', UUID, 'RESTORE.json'))).toBe(false);
    }
  });
});
