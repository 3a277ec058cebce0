/**
 * Whole-service kill -9: the quick version of `npm run soak:crash-service` (see service-crash.mjs),
 * plus a check that the checker itself notices lost, duplicated, reordered and foreign records.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkStore, cliPath, type Push, type StoredRecord } from './support/service.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const ROUNDS = 8;

describe('whole service, kill -9 while pushes run', () => {
  it('every push answered 200 is fully stored after each restart; ids 1..N; queryLastData is the newest', () => {
    expect(fs.existsSync(cliPath), 'dist/cli.js missing: run `npx tsc -p tsconfig.json` (npm test does)').toBe(true);
    // A number of rounds, not a time budget: each round waits for its first acknowledged push, so a busy
    // machine makes the run longer, never thinner. --seconds is only a ceiling here.
    const r = spawnSync(process.execPath, [path.join(here, 'service-crash.mjs'), '--rounds', String(ROUNDS), '--seconds', '540', '--quiet'], {
      encoding: 'utf8',
      timeout: 600_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const summary = JSON.parse(r.stdout.trim().split('\n').pop() as string) as {
      rounds: number;
      failures: number;
      records: number;
      ackedRecords: number;
    };
    expect(summary.failures).toBe(0);
    expect(summary.rounds).toBe(ROUNDS);
    expect(summary.ackedRecords).toBeGreaterThan(0);
  }, 660_000);
});

describe('the checker', () => {
  const rec = (id: number, seq: number, pushNo: number, index: number): StoredRecord => ({
    id,
    create_at: '2026-01-01T00:00:00Z',
    temp: seq,
    resistivity: pushNo,
    conductivity: seq,
    dissolved_oxygen: index,
    ph_value: 1,
  });
  const lastOf = (r: StoredRecord) => ({ ...r, create_at: '2026-01-01 00:00:00' });
  const pushes = (): Map<number, Push> =>
    new Map([
      [1, { seqs: [1, 2], acked: true }],
      [2, { seqs: [3, 4], acked: true }],
      [3, { seqs: [5], acked: false }],
    ]);
  const good = [rec(1, 1, 1, 0), rec(2, 2, 1, 1), rec(3, 3, 2, 0), rec(4, 4, 2, 1)];

  it('accepts a correct store (an unacknowledged push may be absent or present; ids reported lost are skipped)', () => {
    expect(checkStore({ records: good, total: 4 }, lastOf(good[3]), pushes()).problems).toEqual([]);
    const withUnacked = [...good, rec(5, 5, 3, 0)];
    const c = checkStore({ records: withUnacked, total: 5 }, lastOf(withUnacked[4]), pushes());
    expect(c.problems).toEqual([]);
    expect(c.unackedStored).toBe(1);
  });

  it('reports a lost acknowledged record, a gap, a duplicate, disorder, a foreign push and a wrong latest', () => {
    const lost = good.slice(0, 3);
    expect(checkStore({ records: lost, total: 3 }, lastOf(lost[2]), pushes()).problems.join()).toMatch(/push 2 answered 200 for 2 records, 1 stored/);
    const gap = [good[0], good[1], rec(4, 3, 2, 0), rec(5, 4, 2, 1)];
    expect(checkStore({ records: gap, total: 4 }, lastOf(gap[3]), pushes()).problems.join()).toMatch(/gap/);
    const skipped = [good[0], good[1], rec(5, 3, 2, 0), rec(6, 4, 2, 1)];
    expect(checkStore({ records: skipped, total: 4 }, lastOf(skipped[3]), pushes(), [{ fromId: 3, toId: 3 }]).problems.join()).toMatch(/ids 3..4 are missing and not reported lost/);
    expect(checkStore({ records: skipped, total: 4 }, lastOf(skipped[3]), pushes(), [{ fromId: 4, toId: 4 }, { fromId: 3, toId: 3 }]).problems).toEqual([]);
    const dup = [...good, rec(5, 4, 2, 1)];
    expect(checkStore({ records: dup, total: 5 }, lastOf(dup[4]), pushes()).problems.join()).toMatch(/stored twice/);
    const swapped = [good[0], good[1], rec(3, 4, 2, 1), rec(4, 3, 2, 0)];
    expect(checkStore({ records: swapped, total: 4 }, lastOf(swapped[3]), pushes()).problems.join()).toMatch(/line order/);
    const foreign = [...good, rec(5, 9, 7, 0)];
    expect(checkStore({ records: foreign, total: 5 }, lastOf(foreign[4]), pushes()).problems.join()).toMatch(/never sent/);
    expect(checkStore({ records: good, total: 4 }, lastOf(good[2]), pushes()).problems.join()).toMatch(/queryLastData/);
    const p = pushes();
    p.set(3, { seqs: [5, 6], acked: false });
    const notPrefix = [...good, rec(5, 6, 3, 1)];
    expect(checkStore({ records: notPrefix, total: 5 }, lastOf(notPrefix[4]), p).problems.join()).toMatch(/not a prefix/);
  });
});
