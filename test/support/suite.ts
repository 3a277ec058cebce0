/**
 * Which suite is running: `npm test` (the default) or `npm run test:long`, whose configuration
 * (vitest.long.config.ts) sets EDC_TEST_SUITE=long. A file that both run (SPLIT_FILES there) keeps its
 * short part in `npm test` and its long part (more schedules, the longer cluster cases) in `test:long`.
 */
export const LONG_SUITE = process.env.EDC_TEST_SUITE === 'long';
