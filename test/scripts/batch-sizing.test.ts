/**
 * Batch sizes (batch-sizing.ts): about BATCH_TARGET_MS of measured worker time per task, at least one
 * payload, at most twice the largest batch proven and BATCH_PAYLOADS_MAX.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_PAYLOADS_MAX, BATCH_TARGET_MS, batchLimit, BatchSizing } from '../../src/scripts/batch-sizing.js';

const RULES = [{ uuid: 'R1', version: 1, actions: '', success: '', failed: '' }];

describe('batchLimit', () => {
  it('a task of a fast rule holds about 3 ms of work: the sample rule (~15 µs) gets ~200 payloads, not a whole push of 1000', () => {
    expect(BATCH_TARGET_MS).toBe(3);
    expect(batchLimit(0.015, 4096)).toBe(200);
    expect(batchLimit(0.003, 4096)).toBe(1000);
  });

  it('at least one payload, at most twice the proven batch and the maximum', () => {
    expect(batchLimit(undefined, 0)).toBe(1);
    expect(batchLimit(0.01, 0)).toBe(1);
    expect(batchLimit(5, 100)).toBe(1);
    expect(batchLimit(0.01, 30)).toBe(60);
    expect(batchLimit(1e-9, 1e9)).toBe(BATCH_PAYLOADS_MAX);
  });

  it('BatchSizing grows from one payload as batches complete', () => {
    const sizing = new BatchSizing();
    expect(sizing.limitFor(RULES)).toBe(1);
    sizing.measured(RULES, 1, 0.015);
    expect(sizing.limitFor(RULES)).toBe(2);
    for (let n = 2; n < 1000; n *= 2) sizing.measured(RULES, n, n * 0.015);
    expect(sizing.limitFor(RULES)).toBe(200);
  });
});
