import { defineConfig } from 'vitest/config';

// Browser tests (test/e2e): the real service from dist/ plus Debian's headless Chromium, one file at a time.
export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/support/fresh-dist.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 180_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
