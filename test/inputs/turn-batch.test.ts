/**
 * TurnBatches (src/inputs/turn-batch.ts): the messages of one turn of the event loop are handed on
 * together after the poll phase; a batch at 512 messages or 4 Mi characters is handed on at once and the
 * next one started; flush hands on what is gathered, once; every message arrives once, in order, with
 * its item.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BATCH_CHARS_MAX, BATCH_MESSAGES_MAX, TurnBatches } from '../../src/inputs/turn-batch.js';

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('TurnBatches', () => {
  it('hands on a turn together, a full batch at once, and each message once with its item', async () => {
    const handed: Array<{ payloads: string[]; items: number[] }> = [];
    const batches = new TurnBatches<number>((payloads, items) => handed.push({ payloads, items }));
    for (let i = 0; i < 2 * BATCH_MESSAGES_MAX + 6; i++) batches.add(`m${i}`, i);
    expect(handed.map((h) => h.payloads.length)).toEqual([BATCH_MESSAGES_MAX, BATCH_MESSAGES_MAX]);
    await turn();
    expect(handed.map((h) => h.payloads.length)).toEqual([BATCH_MESSAGES_MAX, BATCH_MESSAGES_MAX, 6]);
    expect(handed.flatMap((h) => h.items)).toEqual(Array.from({ length: 2 * BATCH_MESSAGES_MAX + 6 }, (_, i) => i));
    expect(handed.every((h) => h.payloads.every((p, k) => p === `m${h.items[k]}`))).toBe(true);
  });

  it('starts a new batch before the characters would pass the bound; flush hands on once', async () => {
    const handed: number[][] = [];
    const batches = new TurnBatches<number>((_payloads, items) => handed.push(items));
    const quarter = 'x'.repeat(BATCH_CHARS_MAX / 4);
    for (let i = 0; i < 5; i++) batches.add(quarter, i);
    expect(handed).toEqual([[0, 1, 2, 3]]);
    batches.flush();
    batches.flush();
    await turn();
    expect(handed).toEqual([[0, 1, 2, 3], [4]]);
    batches.add('late', 5);
    await turn();
    expect(handed).toEqual([[0, 1, 2, 3], [4], [5]]);
  });

  it('any sequence of adds, flushes and turns hands on every message once, in order, within the bounds', async () => {
    const step = fc.oneof(
      fc.record({ add: fc.integer({ min: 0, max: Math.floor(BATCH_CHARS_MAX / 3) }) }),
      fc.constant({ flush: true as const }),
      fc.constant({ turn: true as const }),
      fc.record({ many: fc.integer({ min: 1, max: 1200 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 30 }), async (steps) => {
        const handed: Array<{ payloads: string[]; items: number[] }> = [];
        const batches = new TurnBatches<number>((payloads, items) => handed.push({ payloads, items }));
        let next = 0;
        for (const s of steps) {
          if ('add' in s) batches.add('y'.repeat(s.add), next++);
          else if ('many' in s) for (let i = 0; i < s.many; i++) batches.add('z', next++);
          else if ('flush' in s) batches.flush();
          else await turn();
        }
        await turn();
        expect(handed.flatMap((h) => h.items)).toEqual(Array.from({ length: next }, (_, i) => i));
        for (const h of handed) {
          expect(h.payloads.length).toBeGreaterThan(0);
          expect(h.payloads.length).toBeLessThanOrEqual(BATCH_MESSAGES_MAX);
          // A single payload over the bound goes alone; otherwise a batch stays within it.
          if (h.payloads.length > 1) expect(h.payloads.reduce((n, p) => n + p.length, 0)).toBeLessThanOrEqual(BATCH_CHARS_MAX);
        }
      }),
      { numRuns: 60 },
    );
  });
});
