import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { LONG_FILES } from './vitest.long.config.js';

// `npm test`: everything but the browser tests (vitest.e2e.config.ts) and the long runs (vitest.long.config.ts,
// `npm run test:long`, which also runs the long part of its SPLIT_FILES).
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/e2e/**', ...LONG_FILES],
    // Worker threads and child processes run dist/: rebuilt here when older than src/.
    globalSetup: ['test/support/fresh-dist.ts'],
    pool: 'forks',
    // Two files at a time also on 2 cores (vitest's default there is one): many tests wait on timers,
    // sockets and child processes, and none asserts a duration a busy machine could stretch.
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    // Ceilings for a busy machine (a run took 16 minutes at load 4-10), not claims: no test asserts how
    // long it took; a test's own waits have their ceilings.
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
