/**
 * The store-race storm (storm.mjs) in `npm test`: the real service with 64 KiB segments under pushes,
 * pages, latest reads, aggregations, exports, retention and a clear every second, one model and then two side by side
 * sharing a budget of one idle sealed-segment file (sealed_fds_max = 1), so reads open and evict files.
 * `node test/reliability/storm.mjs --seconds 15 --models 2` runs one storm by hand.
 */
import { describe, expect, it } from 'vitest';
import { runStorm, stormMinimums } from './storm.mjs';

const seconds = Number(process.env.STORM_SECONDS ?? 10);

describe('store race storm through HTTP', () => {
  it.each([
    [1, 64],
    [2, 1],
  ])(`%i model(s), sealed_fds_max %i, for ${seconds} s: no 5xx, no refused push, every acknowledged record kept once, also after a restart`, async (models, sealedFdsMax) => {
    const { problems, counts } = await runStorm({ seconds, models, sealedFdsMax });
    expect(problems, JSON.stringify(problems).slice(0, 2000)).toEqual([]);
    expect(counts.status5xx).toBe(0);
    expect(counts.refused).toBe(0);
    // The storm runs on past its seconds until it did this much (stormMinimums): a loaded machine makes it longer.
    const min = stormMinimums(models, seconds);
    expect(counts.pushes).toBeGreaterThanOrEqual(min.pushes);
    expect(counts.clears).toBeGreaterThanOrEqual(min.clears);
    expect(counts.pages + counts.exports + counts.lastReads).toBeGreaterThanOrEqual(min.reads);
    expect(counts.aggregates).toBeGreaterThanOrEqual(min.aggregates);
  }, (seconds + 900) * 1000);
});
