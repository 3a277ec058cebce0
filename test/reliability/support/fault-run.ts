/**
 * One fault scenario against the real Store: concurrent writers append records while a FaultIo fault is
 * armed, then healed; every append's outcome is recorded the way the push dispatcher reports it. The
 * store must become writable again by itself (no restart), and the log, read live and after a close and
 * reopen, must hold every acknowledged and every kept record exactly once and intact, and no record whose
 * append was refused. A writer resends a refused record (same sequence number) like a client resending
 * the lines called failed.
 *
 * Outcomes (src/scripts/dispatcher.ts): `acked` when save() returned an id and durable() resolved;
 * `kept` when save() returned an id and durable() rejected with StoreReadOnlyError (the record is in
 * memory and written when the disk works again: a push answers it as kept); `refused` when save() threw
 * (nothing was appended: a push answers it as failed).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Store } from '../../../src/store/store.js';
import { storeOptions } from '../../../src/store/base/constants.js';
import type { ModelLog } from '../../../src/store/log/model-log.js';
import type { Durability } from '../../../src/store/base/types.js';
import { StoreReadOnlyError } from '../../../src/errors.js';
import { type Fault, FaultIo } from './fault-io.js';
import { prng } from '../../support/prng.js';

export const FAULT_FIELDS = ['writer', 'seq', 'body'] as const;

export interface ScenarioSpec {
  name: string;
  fault: Fault | ((log: () => ModelLog, dir: string) => Fault);
  durability: Durability;
  segmentBytesMax?: number;
  writers?: number;
  /** Appending before the fault is armed. */
  warmMs?: number;
  /** How long a fault without `times` stays armed after it first fired. */
  faultMs?: number;
  /** Appending after the store is writable again, before the writers stop. */
  afterMs?: number;
  readOnlyRetryMs: number;
  /** Kill -9 while the fault is armed instead of healing: only acknowledged records must survive. */
  abandonDuringFault?: boolean;
}

export interface ScenarioResult {
  name: string;
  durability: Durability;
  acked: number;
  kept: number;
  /** Appends refused (save threw); each was resent until it went through. */
  refused: number;
  faultsFired: number;
  droppedBytes: number;
  wentReadOnly: boolean;
  /** From the end of the fault to the first acknowledgement of an append made after it. */
  timeToWritableMs: number | undefined;
  /** Problems found live and after reopening (empty = all good). */
  problems: string[];
  lost: number;
  duplicated: number;
  corrupted: number;
}

type Outcome = 'acked' | 'kept' | 'refused' | 'pending' | 'failed';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function body(seq: number): string {
  return `record-${seq}-`.padEnd(48, String.fromCharCode(97 + (seq % 26)));
}

export async function runScenario(root: string, spec: ScenarioSpec): Promise<ScenarioResult> {
  const dir = fs.mkdtempSync(path.join(root, `${spec.name.replace(/\W+/g, '-')}-${spec.durability}-`));
  const io = new FaultIo();
  const options = storeOptions({ rootDir: dir, durability: spec.durability, syncIntervalMs: 50, segmentBytesMax: spec.segmentBytesMax ?? 1024 * 1024 });
  let store = await Store.open(options, { fileIo: io, readOnlyRetryMs: spec.readOnlyRetryMs });
  let log = await store.openModel('m', { fields: [...FAULT_FIELDS] });
  const outcome = new Map<number, Outcome>();
  const problems: string[] = [];
  let nextSeq = 1;
  let stop = false;
  let wentReadOnly = false;
  let refusedAppends = 0;
  let healedAt: number | undefined;
  let writableAt: number | undefined;

  /** Appends batches of 1-16 records (like pushes of NDJSON lines), then waits for the last one. */
  const writer = async (w: number): Promise<void> => {
    const resend: number[] = [];
    const rand = prng(w + 1);
    while (!stop) {
      const batch = resend.splice(0, 1 + Math.floor(rand() * 16));
      while (batch.length === 0 || (batch.length < 16 && rand() < 0.8)) batch.push(nextSeq++);
      const startedAt = performance.now();
      const appended: number[] = [];
      let lastId = 0;
      let refused = false;
      for (const seq of batch) {
        if (!refused) {
          try {
            lastId = log.save({ writer: w, seq, body: body(seq) });
            appended.push(seq);
            outcome.set(seq, 'pending');
            continue;
          } catch (e) {
            if (!(e instanceof StoreReadOnlyError)) problems.push(`save of ${seq} threw ${(e as Error).message}`);
            wentReadOnly = true;
            refused = true;
          }
        }
        // Like the worker after a refused save: the rest of the batch is refused too.
        outcome.set(seq, 'refused');
        refusedAppends++;
        resend.push(seq);
      }
      if (appended.length > 0) {
        let result: Outcome;
        try {
          await log.durable(lastId, { rejectWhenReadOnly: true });
          result = 'acked';
          if (healedAt !== undefined && writableAt === undefined && startedAt >= healedAt) writableAt = performance.now();
        } catch (e) {
          if (e instanceof StoreReadOnlyError) {
            wentReadOnly = true;
            result = 'kept';
          } else {
            result = 'failed';
            if (!stop) problems.push(`durable of ${lastId} rejected: ${(e as Error).message}`);
          }
        }
        for (const seq of appended) outcome.set(seq, result);
      }
      if (log.state === 'read-only') wentReadOnly = true;
      if (refused) await sleep(5);
    }
    // A resend still owed when the run stops is a refused record: it must not be stored.
  };

  const loops = Array.from({ length: spec.writers ?? 8 }, (_, w) => writer(w));
  await sleep(spec.warmMs ?? 100);
  // And until a batch was acknowledged before the fault (a busy machine may need longer than warmMs).
  for (const ceiling = performance.now() + 60_000; ![...outcome.values()].includes('acked') && performance.now() < ceiling; ) await sleep(5);
  const fault = typeof spec.fault === 'function' ? spec.fault(() => log, path.join(dir, 'm')) : spec.fault;
  io.arm(fault);
  const armedAt = performance.now();
  while (io.fired === 0 || (fault.times === undefined ? performance.now() - io.firstFiredAt! < (spec.faultMs ?? 300) : io.fired < fault.times)) {
    // Ceilings (here and below) only turn a hang into a failure: a busy machine makes each wait longer.
    if (performance.now() - armedAt > 60_000) {
      stop = true;
      await Promise.all(loops);
      await store.abandon();
      throw new Error(`${spec.name}: the fault never fired (${io.fired} of ${fault.times ?? 'any'} in 60 s)`);
    }
    await sleep(2);
  }

  if (spec.abandonDuringFault) {
    await sleep(20);
    stop = true;
    await store.abandon(); // rejects the waiting durable() promises
    await Promise.all(loops);
  } else {
    io.heal();
    healedAt = performance.now();
    while (writableAt === undefined && performance.now() - healedAt < 60_000) await sleep(2);
    if (writableAt === undefined) problems.push('not writable again within 60 s of the fault ending');
    await sleep(spec.afterMs ?? 100);
    stop = true;
    await Promise.all(loops);
    // The kept records are written once the disk works: wait for them without the read-only shortcut.
    await Promise.race([log.durable(), sleep(60_000).then(() => problems.push('kept records not durable within 60 s'))]);
    check('live', await readAll(log), outcome, problems, false);
    await store.close();
  }

  store = await Store.open(options, { readOnlyRetryMs: spec.readOnlyRetryMs });
  log = await store.openModel('m', { fields: [...FAULT_FIELDS] });
  if (log.recovery.lostRanges.length > 0) problems.push(`reopen lost ids ${JSON.stringify(log.recovery.lostRanges)}`);
  const counts = check('reopened', await readAll(log), outcome, problems, spec.abandonDuringFault === true);
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });

  let acked = 0;
  let kept = 0;
  for (const o of outcome.values()) {
    if (o === 'acked') acked++;
    else if (o === 'kept') kept++;
  }
  return {
    name: spec.name,
    durability: spec.durability,
    acked,
    kept,
    refused: refusedAppends,
    faultsFired: io.fired,
    droppedBytes: io.droppedBytes,
    wentReadOnly,
    timeToWritableMs: writableAt !== undefined && healedAt !== undefined ? Math.round(writableAt - healedAt) : undefined,
    problems,
    ...counts,
  };
}

interface Stored {
  id: number;
  writer: unknown;
  seq: unknown;
  body: unknown;
}

async function readAll(log: ModelLog): Promise<{ records: Stored[]; error?: string }> {
  const records: Stored[] = [];
  try {
    for await (const r of log.iterate()) records.push(r as unknown as Stored);
  } catch (e) {
    return { records, error: (e as Error).message };
  }
  return { records };
}

/**
 * Every acked (and, unless the process was killed, every kept) record once and intact; no refused one;
 * ids without holes. Returns the counts of lost, duplicated and corrupted records.
 */
function check(
  when: string,
  { records, error }: { records: Stored[]; error?: string },
  outcome: Map<number, Outcome>,
  problems: string[],
  killed: boolean,
): { lost: number; duplicated: number; corrupted: number } {
  const problem = (m: string): void => {
    if (problems.length < 30) problems.push(`${when}: ${m}`);
  };
  let corrupted = 0;
  let duplicated = 0;
  let lost = 0;
  if (error !== undefined) {
    corrupted++;
    problem(`reading the log failed: ${error}`);
  }
  const seen = new Set<number>();
  records.forEach((r, i) => {
    if (i > 0 && r.id !== records[i - 1].id + 1) problem(`id ${records[i - 1].id} is followed by ${r.id}`);
    const seq = r.seq as number;
    if (typeof seq !== 'number' || r.body !== body(seq)) {
      corrupted++;
      problem(`id ${r.id} is corrupt: ${JSON.stringify(r).slice(0, 120)}`);
      return;
    }
    if (seen.has(seq)) {
      duplicated++;
      problem(`seq ${seq} stored twice`);
    }
    seen.add(seq);
    const o = outcome.get(seq);
    if (o === 'refused') problem(`seq ${seq} was refused (answered failed) but is stored`);
    if (o === undefined) problem(`seq ${seq} was never appended`);
  });
  for (const [seq, o] of outcome) {
    const mustBeThere = o === 'acked' || (o === 'kept' && !killed);
    if (mustBeThere && !seen.has(seq)) {
      lost++;
      problem(`${o} seq ${seq} is missing`);
    }
  }
  return { lost, duplicated, corrupted };
}

/** One line per scenario for the log and docs/reliability.md. */
export function summaryLine(r: ScenarioResult): string {
  return (
    `fault ${r.name} [${r.durability}]: fired ${r.faultsFired}, acked ${r.acked}, kept ${r.kept}, refused ${r.refused}, ` +
    `lost ${r.lost}, duplicated ${r.duplicated}, corrupted ${r.corrupted}, dropped ${r.droppedBytes} B, ` +
    `read-only ${r.wentReadOnly ? 'yes' : 'no'}, writable again after ${r.timeToWritableMs ?? '-'} ms`
  );
}
