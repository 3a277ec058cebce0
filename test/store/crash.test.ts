import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = path.join(here, '../../dist/store/index.js');
const ROUNDS = 24;

describe('kill -9 harness', () => {
  it('every durable record survives SIGKILL at random moments, without gaps or bad CRCs', () => {
    expect(fs.existsSync(compiled), 'dist/store missing: run `npx tsc -p tsconfig.json` (npm test does)').toBe(true);
    // A number of rounds, not a time budget (a busy machine makes the run longer, never thinner): --seconds
    // is only a ceiling here. Each kill comes 20-270 ms after the child said it is appending.
    const r = spawnSync(process.execPath, [path.join(here, 'soak-crash.mjs'), '--rounds', String(ROUNDS), '--seconds', '540', '--quiet'], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop() as string) as { rounds: number; failures: number; records: number };
    expect(summary.failures).toBe(0);
    expect(summary.rounds).toBe(ROUNDS);
    expect(summary.records).toBeGreaterThan(0);
  }, 660_000);
});
