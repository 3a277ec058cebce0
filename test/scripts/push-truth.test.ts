/**
 * Push answers are true when the store turns read-only (contract 19): `accepted` counts what is stored
 * and kept, `failed` what was not stored and never will be, and the push says the store is read-only
 * (503 over HTTP) with the kept lines. A client that resends exactly the failed lines stores each record
 * once. Real engine, worker and store; the disk fault is injected through the store's FileIo.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { FaultyIo, sleep } from '../store/helpers.js';
import { SAMPLE_MODEL_ATTRIBUTES, inputWithRule, modbusPayload, openHarness, sampleScript, type Harness } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** Until the model's store is writable again: it retries after readOnlyRetryMs, later on a busy machine (the ceiling only ends a hang). */
async function writable(harness: Harness, model: string): Promise<void> {
  for (const until = Date.now() + 60_000; harness.registry.log(model).state !== 'ok' && Date.now() < until; ) await sleep(10);
}

const lines = (from: number, n: number): string[] => Array.from({ length: n }, (_, i) => modbusPayload({ t1: from + i, t2: from + i, t3: from + i }));

describe('push counts under a read-only store', () => {
  it('records appended before the disk failed are kept, not failed; resending the failed lines stores each once', async () => {
    const io = new FaultyIo();
    h = await openHarness({ workers: 1 }, { durability: 'always', fileIo: io });
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const { inend } = await inputWithRule(h, await sampleScript(model));
    io.failWrites = 'ENOSPC';
    const first = await h.engine.push(inend, lines(1, 20));
    expect(first.storeReadOnly).toMatch(/disk full/);
    // Lines appended in the batch whose write failed are kept; later batches see the store read-only
    // and fail (how many go in the first batch is the dispatcher's business).
    expect(first.accepted).toBeGreaterThan(0);
    expect(first.accepted + first.failed).toBe(20);
    expect(first.kept).toEqual(Array.from({ length: first.accepted }, (_, i) => i + 1));
    io.failWrites = undefined;
    await writable(h, model); // the store retries and writes what it kept
    expect(await h.engine.push(inend, lines(1 + first.accepted, first.failed))).toMatchObject({ accepted: first.failed, failed: 0 });
    expect((await h.records(model)).map((r) => r.temp)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('a push admitted while writable whose records the worker refused as read-only says so, and counts them failed', async () => {
    const io = new FaultyIo();
    h = await openHarness({ workers: 1 }, { durability: 'always', fileIo: io });
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const a = await inputWithRule(h, await sampleScript(model));
    // This rule ignores rds errors: before the fix its push answered accepted for records never stored.
    const quiet = `Actions = { function(args) local t = json:J2T(args); rds:Save("${model}", { temp = t[1].value }); return true, args end }`;
    const b = await inputWithRule(h, quiet);
    io.failWrites = 'ENOSPC';
    const first = await h.engine.push(a.inend, lines(1, 5));
    expect(first.storeReadOnly).toBeDefined();
    const second = await h.engine.push(b.inend, lines(100, 7)); // b's dispatcher has not written to the model yet
    expect(second.storeReadOnly).toBeDefined();
    expect(second).toMatchObject({ accepted: 0, failed: 7, kept: [] });
    io.failWrites = undefined;
    await writable(h, model);
    const resent = await h.engine.push(b.inend, lines(100, 7)); // exactly the failed lines
    expect(resent).toMatchObject({ accepted: 7, failed: 0 });
    expect((await h.records(model)).map((r) => r.temp)).toEqual([...first.kept!, 100, 101, 102, 103, 104, 105, 106]);
  });
});
