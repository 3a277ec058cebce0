import { afterEach, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors.js';
import { inputWithRule, openHarness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Every stored n, in id order. */
async function storedNs(harness: Harness, model: string, count: number): Promise<number[]> {
  const out: number[] = [];
  for (let page = 1; out.length < count; page++) {
    const { records } = await harness.registry.log(model).page({ current: page, size: 1000, order: 'asc' });
    if (records.length === 0) break;
    for (const r of records) out.push(r.n as number);
  }
  return out;
}

describe('input queue', () => {
  it('takes batches off a long queue in order, and counts what waits as it drains (issue 32: no copy of the queue per batch)', async () => {
    h = await openHarness({ queueMax: 7000, workers: 1 });
    const model = await h.model([{ name: 'n', type: 'INTEGER' }]);
    const { inend } = await inputWithRule(h, `Actions = { function(args) return true, rds:Save("${model}", { n = tonumber(args) }) end }`);
    const pushes: Array<Promise<{ accepted: number; failed: number }>> = [];
    let next = 0;
    for (let push = 0; push < 6; push++) {
      pushes.push(h.engine.push(inend, Array.from({ length: 1000 }, () => String(next++))));
    }
    // 6000 wait: a push of 1001 more does not fit, one of 1000 does.
    expect(() => h!.engine.push(inend, Array.from({ length: 1001 }, () => '0'))).toThrow(UnavailableError);
    pushes.push(h.engine.push(inend, Array.from({ length: 1000 }, () => String(next++))));
    // Pushes made while the queue drains land behind what waits.
    await pushes[0];
    pushes.push(h.engine.push(inend, Array.from({ length: 500 }, () => String(next++))));
    const results = await Promise.all(pushes);
    expect(results.reduce((sum, r) => sum + r.accepted, 0)).toBe(next);
    expect(results.every((r) => r.failed === 0)).toBe(true);
    expect(await storedNs(h, model, next)).toEqual(Array.from({ length: next }, (_, i) => i));
    // Drained: a full queue's worth fits again.
    expect(await h.engine.push(inend, Array.from({ length: 7000 }, (_, i) => String(next + i)))).toMatchObject({ accepted: 7000, failed: 0 });
  });
});
