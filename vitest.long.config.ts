import { defineConfig } from 'vitest/config';

/**
 * `npm run test:long`: the long runs `npm test` leaves out (issue 31), so that `npm test` stays within
 * 6 minutes on an idle 2-core machine. Every test runs in one of the two suites.
 */

/**
 * Whole files only test:long runs: kill -9 rounds, storms, the 3-node uplink cluster with kills and
 * outages, and the files that take over ~20 s on an idle 2-core machine (1,100 attribute changes, each a
 * models.json write and fsync, twice; a quick benchmark of an install).
 */
export const LONG_FILES = [
  'test/deploy/bench-install.test.ts',
  'test/models/attribute-churn.test.ts',
  'test/reliability/inputs-crash.test.ts',
  'test/reliability/restore-kill.test.ts',
  'test/reliability/service-crash.test.ts',
  'test/reliability/storm.test.ts',
  'test/store/crash.test.ts',
  'test/uplink/backlog.test.ts',
  'test/uplink/gateway-kill.test.ts',
];

/**
 * Files both suites run, split by test/support/suite.ts LONG_SUITE: the store's interleavings (a short
 * seeded run in npm test, 1000 schedules here) and the uplink cluster cases (steady state, clear,
 * update-last and the close grace in npm test; a killed leader, a lost quorum and a long outage here).
 */
export const SPLIT_FILES = ['test/store/interleave.test.ts', 'test/uplink/uplink.test.ts'];

export default defineConfig({
  test: {
    include: [...LONG_FILES, ...SPLIT_FILES],
    env: { EDC_TEST_SUITE: 'long' },
    // Worker threads and child processes run dist/: rebuilt here when older than src/.
    globalSetup: ['test/support/fresh-dist.ts'],
    pool: 'forks',
    // Ceilings for a busy machine, not claims: a test's own waits have theirs.
    testTimeout: 600_000,
    hookTimeout: 300_000,
  },
});
