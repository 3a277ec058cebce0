/**
 * Graceful shutdown under load: the real CLI (`sync = interval` (100 ms), the default mode, so the shutdown has
 * to flush and sync what the interval has not) receives SIGTERM while 4 loops push NDJSON through
 * RHILEX's sample rule. It must exit 0; the next open must take the clean path (the store's
 * `RecoveryReport.clean === true`, nothing scanned: observed by opening the data directory in-process
 * with `openData`, since the service does not report it); and every push answered 200 must be stored.
 * Three rounds on the same data directory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { openData } from '../../src/server.js';
import {
  checkStore,
  lastData,
  newPushState,
  prng,
  readAll,
  setupPipeline,
  sleep,
  startPushers,
  startService,
  writeConfig,
  type Pipeline,
  type ServiceChild,
} from './support/service.mjs';

const ROUNDS = 3;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-shutdown-'));
const { file } = writeConfig(dir, { store: { sync: 'interval', sync_interval_ms: 100, segment_bytes: 65536 }, logLevel: 'info' });
let svc: ServiceChild | undefined;
let cutPushes: string[] | undefined;

afterAll(async () => {
  if (svc && svc.child.exitCode === null && svc.child.signalCode === null) await svc.kill('SIGKILL');
  fs.rmSync(dir, { recursive: true, force: true });
});

async function recoveryOf(model: string) {
  const { config } = await loadConfig({ file, env: {} });
  const { store, registry } = await openData(config);
  try {
    const log = registry.log(model);
    return { ...log.recovery, lostRanges: [...log.recovery.lostRanges] };
  } finally {
    await store.close();
  }
}

describe('SIGTERM under load', () => {
  it(`exits 0, restarts on the clean path (no scan), and keeps every push answered 200 (${ROUNDS} rounds)`, async () => {
    const seed = Number(process.env.SHUTDOWN_SEED ?? Date.now() % 1e9);
    // Printed first: a failed run can be replayed with SHUTDOWN_SEED.
    console.info(`shutdown: seed ${seed}`);
    const rand = prng(seed);
    const state = newPushState();
    svc = await startService(file);
    const pipeline: Pipeline = await setupPipeline(svc.base);
    const refusals = new Map<string, number>();
    /** Pushes stored by the service but never answered: a graceful stop should answer them. */
    const cut = new Set<string>();
    for (let round = 1; round <= ROUNDS; round++) {
      const ackedBefore = state.answers.ok;
      const pushers = startPushers(svc.base, pipeline, state, {
        round,
        rand,
        concurrency: 4,
        maxLines: 50,
        maxPushes: 5000,
        // A push refused because the service is stopping is not acknowledged: fine, but count it.
        onStatus: (a) => {
          const key = `${a.status} ${a.body?.msg ?? a.text.slice(0, 80)}`;
          refusals.set(key, (refusals.get(key) ?? 0) + 1);
          return 'stop';
        },
      });
      // Under load first (a few pushes answered: waited for, however long a busy machine takes), then
      // SIGTERM at a random moment.
      for (let waited = 0; state.answers.ok < ackedBefore + 3 && waited < 60_000; waited += 20) await sleep(20);
      expect(state.answers.ok, 'some pushes were acknowledged during the round').toBeGreaterThanOrEqual(ackedBefore + 3);
      await sleep(Math.floor(rand() * 800));
      const t0 = Date.now();
      // The stop is waited for (the ceiling only turns a hang into a failure): that it ends, exits 0 and
      // leaves a clean store is the behaviour; how long a busy machine makes it take is not.
      const exit = await Promise.race([svc.kill('SIGTERM'), sleep(120_000).then(() => 'timeout' as const)]);
      const stopMs = Date.now() - t0;
      expect(exit, `shutdown did not finish:\n${svc.log.slice(-20).join('\n')}`).toEqual({ code: 0, signal: null });
      expect(svc.log.some((l) => l.includes('stopped cleanly')), svc.log.slice(-20).join('\n')).toBe(true);
      // Every push loop ends once the service is gone (a refusal or a closed connection).
      const ended = await Promise.race([pushers.done.then(() => true), sleep(60_000).then(() => false)]);
      expect(ended, 'the push loops ended after the stop').toBe(true);

      const recovery = await recoveryOf(pipeline.model);
      expect(recovery).toMatchObject({ clean: true, scannedBytes: 0, truncatedBytes: 0, lostRanges: [] });

      svc = await startService(file);
      const read = await readAll(svc.base, pipeline.model);
      const check = checkStore(read, await lastData(svc.base, pipeline.model), state.pushes);
      expect(check.problems).toEqual([]);
      // Pushes whose records were stored although the client got no answer (connection cut).
      for (const r of read.records) {
        const push = state.pushes.get(r.resistivity);
        if (push && !push.acked && r.dissolved_oxygen === 0) cut.add(`push ${r.resistivity} (${push.error ?? 'no answer'})`);
      }
      // Anything that was not a plain connection error or a refusal during the shutdown window.
      expect(state.anomalies.filter((a) => !/HTTP (503|409)/.test(a))).toEqual([]);
      state.anomalies.length = 0;
      console.info(
        `shutdown round ${round}: stopped in ${stopMs} ms, ${check.records} records, ${check.ackedRecords} acked all present, ` +
          `${check.unackedStored} unacknowledged stored, clean reopen`,
      );
    }
    if (refusals.size > 0) console.info(`shutdown: refusals while stopping: ${JSON.stringify(Object.fromEntries(refusals))}`);
    const final = await svc.kill('SIGTERM');
    expect(final).toEqual({ code: 0, signal: null });
    cutPushes = [...cut];
  }, 600_000);

  // BUG (src/http/server.ts close(), called first by stop() in src/server.ts): app.close() drops every
  // open connection at once, before the script engine drains, so pushes in flight at SIGTERM are stored
  // (and durable) but their clients only see a reset connection, and retrying duplicates them.
  it('pushes in flight at SIGTERM are answered, not cut (their records are stored)', () => {
    expect(cutPushes, 'the SIGTERM rounds did not finish').toBeDefined();
    expect(cutPushes, 'stored pushes whose connection was cut').toEqual([]);
  });
});
