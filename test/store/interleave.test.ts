/**
 * The seeded interleaving test of the store (see interleave/run.ts). `npm test` runs a fixed seed and a
 * fixed number of schedules; `npm run test:races -- --seed N --runs R` runs more (RACES_SEED, RACES_RUNS).
 */
import { describe, expect, it } from 'vitest';
import { checkInterleavings, coverage } from './interleave/run.js';

const seed = Number(process.env.RACES_SEED ?? 20261123);
const runs = Number(process.env.RACES_RUNS ?? 1000);

describe('store under seeded interleavings', () => {
  it(`${runs} schedules from seed ${seed} match the model`, async () => {
    const t0 = Date.now();
    await checkInterleavings({
      seed,
      runs,
      every: runs >= 20_000 ? 5000 : 500,
      progress: (n) => console.log(`races: ${n}/${runs} schedules, ${Math.round((Date.now() - t0) / 1000)} s`),
    });
    console.log(`races: ${coverage.runsWithCompactedSegments} of ${runs} schedules ended with compacted segments`);
    expect(coverage.runsWithCompactedSegments).toBeGreaterThan(runs / 10);
  }, Number(process.env.RACES_TIMEOUT_MS ?? 150_000));
});
