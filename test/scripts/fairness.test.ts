/**
 * One slow input does not hold an unrelated one: input A's rule busy-loops 150 ms on every payload
 * (under the default 200 ms limit) and A is pushed without pause; input B's one-line pushes still
 * answer within 500 ms (p99; before the fix 1.8 s). One worker, the default on a 2-core machine (cores - 1), so B can only ever
 * wait for the invocation A is running: tasks of a slow rule carry one payload, and a freed worker
 * goes to the input holding the fewest. Real engine, real worker thread.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { inputWithRule, openHarness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const SLOW_MS = 150;
const RUN_MS = 4000;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

describe('fairness between inputs', () => {
  it('B answers within 500 ms (p99) while A runs a 150 ms rule on every payload, pushed without pause', async () => {
    h = await openHarness({ workers: 1, timeoutMs: 200, hardTimeoutMs: 2000 });
    const model = await h.model([{ name: 'v', type: 'STRING' }]);
    const a = await inputWithRule(
      h,
      `Actions = { function(args)
        local started = tonumber(time:TsUnixNano())
        while tonumber(time:TsUnixNano()) - started < ${SLOW_MS} * 1e6 do end
        return true, args
      end }`,
    );
    const b = await inputWithRule(h, `Actions = { function(args) return true, rds:Save("${model}", { v = args }) end }`);
    const harness = h;
    const until = Date.now() + RUN_MS;
    let aAccepted = 0;
    // Four clients keep A's queue full: every push of 4 waits behind the others.
    const aClients = Array.from({ length: 4 }, async () => {
      while (Date.now() < until) {
        const result = await harness.engine.push(a.inend, Array.from({ length: 4 }, (_, i) => `a${i}`));
        aAccepted += result.accepted;
      }
    });
    const latencies: number[] = [];
    // A device on B pushing one line at a time, at random moments.
    const bClient = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 300));
      let n = 0;
      while (Date.now() < until) {
        const started = performance.now();
        expect(await harness.engine.push(b.inend, [`b${n++}`])).toMatchObject({ accepted: 1 });
        latencies.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, Math.random() * SLOW_MS));
      }
    })();
    await Promise.all([bClient, ...aClients]);
    expect(latencies.length).toBeGreaterThan(20);
    expect(percentile(latencies, 99), `B latencies ${latencies.map(Math.round).join(' ')}`).toBeLessThan(500);
    // A kept its worker busy all along (it was not starved to make room for B).
    expect(aAccepted).toBeGreaterThan((RUN_MS / SLOW_MS) * 0.5);
    expect(h.engine.faults()).toEqual([]);
  });
});
