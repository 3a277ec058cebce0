/**
 * BatchApplier on real model logs: the records of a worker's packed result appended in order, and per log
 * the payloads whose records it holds (what a push waits on for durability), each once, also when one
 * payload's records go to two models in turn.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { BatchApplier } from '../../src/scripts/batch-apply.js';
import { RuleStatsBook } from '../../src/scripts/shared/stats.js';
import { OpPacker, unpackOps } from '../../src/scripts/shared/protocol.js';
import { openHarness, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const rules = [{ uuid: 'R1', version: 1, actions: '', success: '', failed: '' }];

describe('BatchApplier', () => {
  it('appends packed and unpacked ops alike and lists each log’s payloads once, in order', async () => {
    h = await openHarness();
    const a = await h.model([{ name: 'v', type: 'INTEGER' }]);
    const b = await h.model([{ name: 'v', type: 'INTEGER' }]);
    const packer = new OpPacker();
    // Payload 0 saves to a, b, then a again; payload 1 only to b; payload 2 twice to a; payload 3 nothing.
    const plan: Array<[number, string, number]> = [[0, a, 1], [0, b, 2], [0, a, 3], [1, b, 4], [2, a, 5], [2, a, 6]];
    for (const [payload, model, v] of plan) packer.add(payload, 0, model, 'save', { v });
    const packed = structuredClone(packer.finish());
    for (const ops of [packed, unpackOps(packed)]) {
      const applier = new BatchApplier({ inendUuid: 'I', models: h.registry, stats: new RuleStatsBook(), ruleName: () => 'r', inendName: () => 'i' });
      const applied = applier.apply(rules, { ops, errors: [], summaries: [{ invocations: 4, failures: 0, histogram: [] }], debug: [] });
      const byModel = new Map([...applied.touched].map(([log, t]) => [log === h!.registry.log(a) ? 'a' : 'b', t.payloads]));
      expect(byModel).toEqual(new Map([['a', [0, 2]], ['b', [0, 1]]]));
      expect(applied.failures.size).toBe(0);
    }
    expect((await h.records(a)).map((r) => r.v)).toEqual([1, 3, 5, 6, 1, 3, 5, 6]);
    expect((await h.records(b)).map((r) => r.v)).toEqual([2, 4, 2, 4]);
  });
});
