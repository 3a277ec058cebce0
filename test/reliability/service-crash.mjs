// Whole-service kill -9 harness. The real CLI (`dist/cli.js serve`) runs as a child with `[store] sync =
// always` and 64 KiB segments; the parent builds model + attributes + publish + an HTTP input + RHILEX's
// sample rule once, then each round: 4 loops push NDJSON batches (1..50 lines) whose payloads carry
// increasing sequence numbers, the child is SIGKILLed at a random moment (0..1400 ms after the round's
// first acknowledged push, waited for however long a busy machine takes: a round always kills a service
// under load),
// restarted on the same data dir, and the parent checks over HTTP (queryDataList asc, pages of 1000;
// queryLastData) that every line of every push answered 200 is stored exactly once, that each such push
// occupies consecutive ids in line order, that ids increase from 1 and skip only ids recovery reported lost
// (schema/detail's recovery.lostRanges: ids a reader may have seen before the kill, never handed out twice,
// so never an acknowledged record's), that no record comes from a
// push never sent, and that queryLastData is the record with the highest id.
//   node test/reliability/service-crash.mjs [--rounds N] [--seconds S] [--seed N] [--quiet]
// (needs `npx tsc -p tsconfig.json` first; `npm run soak:crash-service` does both).
// Prints one line per round and a JSON summary last; exits 1 on the first failed check.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkStore, lastData, lostRanges, newPushState, prng, readAll, setupPipeline, sleep, startPushers, startService, writeConfig } from './support/service.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const rounds = arg('rounds', 100);
const seconds = arg('seconds', 600);
const seed = arg('seed', Date.now() % 1e9);
const quiet = process.argv.includes('--quiet');
const rand = prng(seed);
const say = (line) => {
  if (!quiet) process.stderr.write(`${line}\n`);
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-service-crash-'));
const { file } = writeConfig(dir, { store: { sync: 'always', segment_bytes: 65536 } });
const started = Date.now();
const state = newPushState();
const summary = { rounds: 0, failures: 0, seed, records: 0, pushesSent: 0, ackedPushes: 0, ackedRecords: 0, unackedStored: 0, cutPushes: 0, restartMsMax: 0, seconds: 0 };
let svc;

function finish(code, extra = {}) {
  summary.seconds = Math.round((Date.now() - started) / 100) / 10;
  summary.pushesSent = state.pushes.size;
  process.stdout.write(`${JSON.stringify({ ...summary, ...extra })}\n`);
  if (code === 0) fs.rmSync(dir, { recursive: true, force: true });
  else process.stderr.write(`data kept in ${dir}\n`);
  process.exit(code);
}

try {
  svc = await startService(file);
  const pipeline = await setupPipeline(svc.base);
  say(`service-crash: seed ${seed}, data ${dir}, model ${pipeline.model}`);
  for (let round = 1; round <= rounds && (Date.now() - started) / 1000 < seconds; round++) {
    const ackedAtStart = state.answers.ok;
    const pushers = startPushers(svc.base, pipeline, state, { round, rand, concurrency: 4, maxLines: 50, maxPushes: 20000 });
    const killAfter = Math.floor(rand() * 1400);
    // The round's first acknowledged push (a generous ceiling only turns a hang into a failure).
    let pushersEnded = false;
    void pushers.done.then(() => (pushersEnded = true));
    const ackDeadline = Date.now() + 120_000;
    while (state.answers.ok === ackedAtStart && !pushersEnded && state.anomalies.length === 0) {
      if (Date.now() > ackDeadline) throw new Error(`round ${round}: no push acknowledged within 120 s (answers ${JSON.stringify(state.answers)})`);
      await sleep(10);
    }
    await sleep(killAfter);
    const ackedBefore = state.answers.ok;
    await svc.kill('SIGKILL');
    const ended = await Promise.race([pushers.done.then(() => true), sleep(60_000).then(() => false)]);
    if (!ended) throw new Error(`round ${round}: pushes did not end within 60 s after the kill`);
    summary.cutPushes += state.answers.network;
    state.answers.network = 0;
    const t0 = Date.now();
    svc = await startService(file);
    summary.restartMsMax = Math.max(summary.restartMsMax, Date.now() - t0);
    const check = checkStore(await readAll(svc.base, pipeline.model), await lastData(svc.base, pipeline.model), state.pushes, await lostRanges(svc.base, pipeline.model));
    summary.rounds = round;
    Object.assign(summary, { records: check.records, ackedPushes: check.ackedPushes, ackedRecords: check.ackedRecords, unackedStored: check.unackedStored });
    const problems = [...state.anomalies, ...check.problems];
    say(
      `round ${round}: killed ${killAfter} ms after the round's first ack, ${ackedBefore} pushes acked so far, ${check.records} records, ` +
        `${check.ackedRecords} acked records all present: ${problems.length === 0 ? 'yes' : 'NO'}`,
    );
    if (problems.length > 0) {
      summary.failures++;
      process.stderr.write(`round ${round} failed (seed ${seed}):\n  ${problems.join('\n  ')}\n--- service log ---\n${svc.log.slice(-30).join('\n')}\n`);
      await svc.kill('SIGKILL');
      finish(1, { problems });
    }
  }
  const exit = await svc.kill('SIGTERM');
  if (exit.code !== 0) {
    summary.failures++;
    process.stderr.write(`final SIGTERM: exit ${exit.code ?? exit.signal}\n${svc.log.slice(-30).join('\n')}\n`);
    finish(1);
  }
  finish(0);
} catch (err) {
  summary.failures++;
  process.stderr.write(`service-crash: ${err?.stack ?? err}\n${svc ? svc.log.slice(-30).join('\n') : ''}\n`);
  if (svc) svc.child.kill('SIGKILL');
  finish(1);
}
