/**
 * The straddle cache is one per process and outlives the summaries it caches blocks of: a summary that
 * its model dropped (close, clear, retention) must be free to go, or every closed store's summaries stay
 * in memory behind a cached block.
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { straddleCache } from '../../src/store/straddle-cache.js';
import { SegmentSummary } from '../../src/store/segment-summary.js';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function cacheOneBlock(): WeakRef<SegmentSummary> {
  const summary = new SegmentSummary(1, 6, 100_000);
  straddleCache.put(summary, 0, { lastId: 64, count: 64, columns: [], values: new Float64Array(64), others: [] });
  expect(straddleCache.get(summary, 0, 64, [])).toBeDefined();
  return new WeakRef(summary);
}

describe('straddle cache', () => {
  it('does not keep a summary alive once nothing else holds it', async () => {
    const ref = cacheOneBlock();
    for (let i = 0; i < 10 && ref.deref() !== undefined; i++) {
      await new Promise((r) => setTimeout(r, 10));
      gc();
    }
    expect(ref.deref()).toBeUndefined();
  });
});
