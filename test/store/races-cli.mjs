#!/usr/bin/env node
/**
 * npm run test:races -- [--seed N] [--runs R] [--minutes M]
 * Runs the seeded interleaving test (test/store/interleave.test.ts) with R schedules from seed N. With
 * --minutes it keeps going with seeds N+1, N+2, ... until the time is up. A failure prints fast-check's
 * report (seed, path and the shrunk schedule) and exits 1.
 */
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: { seed: { type: 'string' }, runs: { type: 'string' }, minutes: { type: 'string' } },
});
const firstSeed = Number(values.seed ?? Date.now() % 2 ** 31);
const runs = Number(values.runs ?? 10_000);
const minutes = Number(values.minutes ?? 0);
for (const [name, v] of [['--seed', firstSeed], ['--runs', runs], ['--minutes', minutes]]) {
  if (!Number.isSafeInteger(v) || v < 0) {
    console.error(`${name} must be a non-negative integer`);
    process.exit(2);
  }
}

const endMs = Date.now() + minutes * 60_000;
let total = 0;
for (let seed = firstSeed; ; seed++) {
  const r = spawnSync('npx', ['vitest', 'run', 'test/store/interleave.test.ts'], {
    stdio: 'inherit',
    env: { ...process.env, RACES_SEED: String(seed), RACES_RUNS: String(runs), RACES_TIMEOUT_MS: String(24 * 3_600_000) },
  });
  if (r.status !== 0) {
    console.error(`races: seed ${seed} failed after ${total} schedules passed with earlier seeds`);
    process.exit(1);
  }
  total += runs;
  console.log(`races: seed ${seed} passed; ${total} schedules from seeds ${firstSeed}..${seed}`);
  if (Date.now() >= endMs) break;
}
