/**
 * Seeded interleavings of two models' logs in one store: appends (every other one packed, as the rules' batches store them), update-lasts, durable waits, pages,
 * latest reads, exports, aggregations, retention, clear, clean restarts and crashes (kill -9 emulation), with tiny
 * segments so that seals come every few records, and a budget of one to three fds for sealed segments
 * (shared by both models), so that reads open and evict segment files all the time. Operations start in schedule order without waiting for
 * each other; `advance` lets the scheduler release file operations, so reads, seals, retention and
 * clears overlap in every order the seed picks. Every read is checked against the model as it was when
 * the read was called, and the run ends with both logs compared whole before and after a restart.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { expect } from 'vitest';
import { Store } from '../../../src/store/store.js';
import { storeOptions } from '../../../src/store/base/constants.js';
import type { ModelLog } from '../../../src/store/log/model-log.js';
import type { RecordView } from '../../../src/store/base/types.js';
import { FIELDS, ModelOfLog, checkRecord, pageIds } from './model.js';
import { ScheduledIo, openFilesUnder } from './scheduled-io.js';
import { ValuePacker } from '../../../src/store/format/value-pack.js';

const MODELS = ['a', 'b'] as const;
const SEGMENT_BYTES = 256;
const CLOCK_MARGIN_MS = 60_000;

/** How often the runs reached what they are meant to race (the test checks it is not zero). */
export const coverage = { runsWithCompactedSegments: 0 };

export type Op =
  | { k: 'append'; m: number; n: number }
  | { k: 'update'; m: number }
  | { k: 'durable'; m: number }
  | { k: 'page'; m: number; current: number; size: number; order: 'asc' | 'desc' }
  | { k: 'latest'; m: number }
  | { k: 'export'; m: number }
  | { k: 'aggregate'; m: number; buckets: number }
  | { k: 'retention'; m: number; maxRecords: number }
  | { k: 'clear'; m: number }
  | { k: 'restart'; crash: boolean }
  | { k: 'advance'; steps: number };

const model = fc.integer({ min: 0, max: 1 });

export const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ k: fc.constant('append' as const), m: model, n: fc.integer({ min: 1, max: 12 }) }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('update' as const), m: model }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('durable' as const), m: model }) },
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('page' as const),
      m: model,
      current: fc.integer({ min: 1, max: 4 }),
      size: fc.constantFrom(1, 3, 10, 1000),
      order: fc.constantFrom('asc' as const, 'desc' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('latest' as const), m: model }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('export' as const), m: model }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('aggregate' as const), m: model, buckets: fc.constantFrom(1, 50, 9000) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('retention' as const), m: model, maxRecords: fc.constantFrom(0, 10, 30) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('clear' as const), m: model }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('restart' as const), crash: fc.boolean() }) },
  { weight: 6, arbitrary: fc.record({ k: fc.constant('advance' as const), steps: fc.integer({ min: 1, max: 8 }) }) },
);

export const scheduleArb = fc.array(opArb, { minLength: 1, maxLength: 40, size: 'medium' });

/** Settles `p` by releasing scheduled file operations one at a time; fails when nothing can make progress. */
async function driveUntil<T>(s: fc.Scheduler, p: Promise<T>, what: string): Promise<T> {
  let settled = false;
  p.then(
    () => (settled = true),
    () => (settled = true),
  );
  let idleTicks = 0;
  await tick();
  while (!settled) {
    if (s.count() > 0) {
      await s.waitNext(1);
      await tick();
      idleTicks = 0;
    } else {
      // Nothing scheduled: only real time (store open, timers) can move it on.
      await new Promise((r) => setTimeout(r, 1));
      if (++idleTicks > 5000) throw new Error(`stuck: ${what} never settles and no file operation is pending`);
    }
  }
  return p;
}

/** Lets microtasks and setImmediate callbacks (the writer's deferred pump) run. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

class Run {
  private store!: Store;
  private logs: ModelLog[] = [];
  private readonly models = MODELS.map((name) => new ModelOfLog(name));
  private readonly pending = new Set<Promise<void>>();
  private readonly failures: unknown[] = [];
  private seq = 0;
  /** Every record is stamped at or after this. */
  private readonly startMs = Date.now();

  constructor(
    private readonly s: fc.Scheduler,
    private readonly dir: string,
    private readonly sealedFdsMax: number,
  ) {}

  async open(): Promise<void> {
    const io = new ScheduledIo(this.s);
    const options = storeOptions({ rootDir: this.dir, durability: 'always', segmentBytesMax: SEGMENT_BYTES, sealedFdsMax: this.sealedFdsMax });
    const opening = Store.open(options, { fileIo: io });
    this.store = await driveUntil(this.s, opening, 'store open');
    this.logs = [];
    for (const name of MODELS) this.logs.push(await this.store.openModel(name, { fields: [...FIELDS] }));
  }

  async apply(op: Op): Promise<void> {
    if (op.k === 'advance') return this.advance(op.steps);
    if (op.k === 'restart') return this.restart(op.crash);
    const log = this.logs[op.m];
    const m = this.models[op.m];
    switch (op.k) {
      case 'append':
        for (let i = 0; i < op.n; i++) {
          const values = m.values(++this.seq);
          // Every other record as the rules' batches store it: packed bytes, appended as they are.
          m.saved(this.seq % 2 === 0 ? savePacked(log, values) : log.save(values), values);
        }
        break;
      case 'update': {
        const seq = ++this.seq;
        // No visible record (cleared, or retention and a crash left none): update-last saves.
        const last = log.latest() === undefined ? undefined : m.newestValues();
        if (last === undefined) {
          const values = m.values(seq);
          m.saved(log.updateLast(values), values);
        } else {
          const change = { seq, dev: `u${seq}` };
          m.updated(log.updateLast(change), { ...last, ...change });
        }
        break;
      }
      case 'durable': {
        const acked = m.ackPoint();
        this.track(
          log.durable().then(acked, (e: Error) => {
            // Only a restart or crash may cut a wait short; the records are then checked by recovery.
            if (!/is closed/.test(e.message)) throw e;
          }),
        );
        break;
      }
      case 'page':
        this.track(this.page(log, m, op));
        break;
      case 'latest': {
        const st = log.stats();
        const snap = m.snapshot(st.firstId, st.lastId);
        const view = log.latest();
        if (snap.lastId === 0) expect(view).toBeUndefined();
        else checkRecord({ ...snap, firstId: snap.lastId }, view as RecordView, `${m.name} latest`);
        break;
      }
      case 'export':
        this.track(this.export(log, m));
        break;
      case 'aggregate':
        this.track(this.aggregate(log, m, op.buckets));
        break;
      case 'retention':
        log.setRetention({ maxRecords: op.maxRecords, maxBytes: 0, maxAgeMs: 0 });
        this.track(log.enforceRetention());
        break;
      case 'clear':
        m.cleared();
        this.track(log.clear());
        break;
    }
    for (const l of this.logs) expect(l.stats().state, `${l.modelId} stays writable (no fault is injected)`).toBe('ok');
    this.throwFailures();
  }

  /** Waits for everything in flight, then compares both logs whole, before and after a clean restart. */
  async finish(): Promise<void> {
    await driveUntil(this.s, Promise.all([...this.pending]), 'operations in flight');
    await driveUntil(this.s, Promise.all(this.logs.map((l) => l.compactionIdle())), 'compaction');
    this.throwFailures();
    // No read in flight: each model's active segment, and at most the budget of idle sealed ones.
    const segmentsOpen = openFilesUnder(this.dir).filter((f) => /\.z?log$/.test(f));
    if (MODELS.some((m) => fs.existsSync(`${this.dir}/${m}`) && fs.readdirSync(`${this.dir}/${m}`).some((n) => n.endsWith('.zlog')))) coverage.runsWithCompactedSegments++;
    expect(segmentsOpen.length, `segment files open: ${segmentsOpen.join(', ')}`).toBeLessThanOrEqual(MODELS.length + this.sealedFdsMax);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < MODELS.length; i++) {
        expect(this.logs[i].stats().state, MODELS[i]).toBe('ok');
        await this.checkWhole(i);
      }
      await this.restart(false);
    }
    await driveUntil(this.s, this.store.close(), 'store close');
    // Segment fds are closed with an async close(2): give the thread pool a moment.
    for (let i = 0; i < 100 && openFilesUnder(this.dir).length > 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(openFilesUnder(this.dir), 'every file the store opened is closed').toEqual([]);
  }

  private async advance(steps: number): Promise<void> {
    for (let i = 0; i < steps && this.s.count() > 0; i++) {
      await this.s.waitNext(1);
      await tick();
    }
    this.throwFailures();
  }

  private async restart(crash: boolean): Promise<void> {
    await driveUntil(this.s, crash ? this.store.abandon() : this.store.close(), crash ? 'crash' : 'close');
    await this.open();
    for (let i = 0; i < MODELS.length; i++) {
      const log = this.logs[i];
      if (!crash) {
        expect(log.findingsAtOpen().lostRanges, `${MODELS[i]}: nothing lost at a clean open`).toEqual([]);
        continue;
      }
      const firstId = log.stats().firstId;
      const records = await driveUntil(this.s, collect(log), 'read after crash');
      this.models[i].recovered(firstId, records, log.findingsAtOpen().lostRanges);
    }
    this.throwFailures();
  }

  private async checkWhole(i: number): Promise<void> {
    const log = this.logs[i];
    const st = log.stats();
    const snap = this.models[i].snapshot(st.firstId, st.lastId);
    const records = await driveUntil(this.s, collect(log), 'full read');
    expect(records.map((r) => r.id)).toEqual(ModelOfLog.liveIds(snap, snap.firstId, snap.lastId));
    for (const r of records) checkRecord(snap, r, `${MODELS[i]} whole`);
  }

  private async page(log: ModelLog, m: ModelOfLog, op: Op & { k: 'page' }): Promise<void> {
    const st = log.stats();
    const snap = m.snapshot(st.firstId, st.lastId);
    const what = `${m.name} page ${op.current}/${op.size} ${op.order}`;
    const page = await log.page({ current: op.current, size: op.size, order: op.order });
    expect(page.total, what).toBe(ModelOfLog.liveIds(snap, snap.firstId, snap.lastId).length);
    expect(page.records.map((r) => r.id), what).toEqual(pageIds(snap, op.current, op.size, op.order));
    for (const r of page.records) checkRecord(snap, r, what);
  }

  private async export(log: ModelLog, m: ModelOfLog): Promise<void> {
    const st = log.stats();
    const snap = m.snapshot(st.firstId, st.lastId);
    const records = await collect(log);
    expect(records.map((r) => r.id), `${m.name} export`).toEqual(ModelOfLog.liveIds(snap, snap.firstId, snap.lastId));
    for (const r of records) checkRecord(snap, r, `${m.name} export`);
  }

  /**
   * Buckets over everything written since the run began: as many records as the snapshot holds, and their
   * seq values (the newest one's in any version a read may show).
   */
  private async aggregate(log: ModelLog, m: ModelOfLog, buckets: number): Promise<void> {
    const st = log.stats();
    const snap = m.snapshot(st.firstId, st.lastId);
    const what = `${m.name} aggregate into ${buckets}`;
    // A minute of margin each side: a small step back of the machine's clock stamps records with the newest
    // record's time (clamped), which may lie past the clock now.
    const fromMs = this.startMs - CLOCK_MARGIN_MS;
    const toMs = Date.now() + CLOCK_MARGIN_MS;
    const intervalMs = Math.max(1, Math.ceil((toMs - fromMs) / buckets));
    const answer = await log.aggregate({ fromMs, toMs, intervalMs, fields: ['seq'] });
    const ids = ModelOfLog.liveIds(snap, snap.firstId, snap.lastId);
    expect(answer.reduce((n, b) => n + b.count, 0), what).toBe(ids.length);
    expect(answer.reduce((n, b) => n + b.stats[0].n, 0), what).toBe(ids.length);
    if (ids.length === 0) return;
    const older = ids.filter((id) => id !== snap.lastId).reduce((n, id) => n + Number(snap.entries[id - 1]?.versions.at(-1)?.seq), 0);
    const newest = answer.reduce((n, b) => n + b.stats[0].sum, 0) - older;
    const shown = snap.entries[snap.lastId - 1]?.versions.slice(snap.lastVersions - 1).map((v) => v.seq);
    expect(shown, `${what}: seq of the newest record`).toContain(newest);
  }

  private track(p: Promise<unknown>): void {
    const q: Promise<void> = p.then(
      () => undefined,
      (e: unknown) => void this.failures.push(e),
    );
    this.pending.add(q);
    void q.finally(() => this.pending.delete(q));
  }

  private throwFailures(): void {
    if (this.failures.length > 0) throw this.failures[0];
  }
}

/** Every record of the log; the export snapshot is taken in this call, before its first await. */
function collect(log: ModelLog): Promise<RecordView[]> {
  const it = log.iterate();
  const out: RecordView[] = [];
  const first = it.next();
  return (async () => {
    for (let r = await first; !r.done; r = await it.next()) out.push(r.value);
    return out;
  })();
}

export async function runSchedule(s: fc.Scheduler, ops: readonly Op[], sealedFdsMax: number): Promise<void> {
  const dir = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'interleave-'));
  try {
    const run = new Run(s, dir, sealedFdsMax);
    await run.open();
    for (const op of ops) await run.apply(op);
    await run.finish();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export interface InterleaveOptions {
  seed: number;
  runs: number;
  /** Called every `every` runs with the count so far. */
  progress?: (runsDone: number) => void;
  every?: number;
}

/** Runs the property; a failure throws fast-check's report: seed, path and the shrunk schedule. */
export async function checkInterleavings(o: InterleaveOptions): Promise<void> {
  let done = 0;
  await fc.assert(
    fc.asyncProperty(fc.scheduler(), scheduleArb, fc.integer({ min: 1, max: 3 }), async (s, ops, sealedFdsMax) => {
      await runSchedule(s, ops, sealedFdsMax);
      if (o.progress && ++done % (o.every ?? 100) === 0) o.progress(done);
    }),
    { seed: o.seed, numRuns: o.runs, endOnFailure: false, verbose: 1 },
  );
}

const packer = new ValuePacker();

/** ModelLog.savePacked of `values`, packed in the fields' order (which the log appends as they are). */
function savePacked(log: ModelLog, values: Record<string, unknown>): number {
  packer.arrayHeader(FIELDS.length);
  for (const field of FIELDS) packer.value(values[field]);
  const bytes = Buffer.from(packer.take());
  return log.savePacked(FIELDS, bytes, 0, bytes.length);
}
