import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const here = path.dirname(fileURLToPath(import.meta.url));
const compiled = path.join(here, '../../dist/store/index.js');

describe('kill -9 harness', () => {
  it('every durable record survives SIGKILL at random moments, without gaps or bad CRCs', () => {
    expect(fs.existsSync(compiled), 'dist/store missing: run `npx tsc -p tsconfig.json` (npm test does)').toBe(true);
    const r = spawnSync(process.execPath, [path.join(here, 'soak-crash.mjs'), '--rounds', '24', '--seconds', '18', '--quiet'], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop() as string) as { rounds: number; failures: number; records: number };
    expect(summary.failures).toBe(0);
    expect(summary.rounds).toBeGreaterThanOrEqual(20);
    expect(summary.records).toBeGreaterThan(0);
  }, 60_000);
});
