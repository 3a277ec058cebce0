/**
 * The queue of one input. Payloads are batched into worker tasks (every rule reading the input runs
 * on each payload of the batch, in order); several batches may run at once on different workers,
 * but their records are appended strictly in arrival order: a finished batch waits until every
 * earlier batch of the input has been applied.
 */
import { InvalidArgumentError, StoreReadOnlyError, UnavailableError, WorkerLostError } from '../errors.js';
import type { ScriptPool } from './pool.js';
import type { RuleStatsBook } from './stats.js';
import { RepeatFilter, capMessage } from './repeat-filter.js';
import { InputCounters } from './input-stats.js';
import { named } from '../util/messages.js';
import { unpackResult, type BatchResult, type RuleScripts, type RunTask } from './protocol.js';
import type { LogFn, ModelSource, PushResult, RecordLog } from './types.js';

/**
 * A task carries about this much work: long enough to amortise the per-task cost (messaging, and
 * this thread's appends while the worker waits for its next batch), short enough to keep latency
 * low and far below the hard time limit, which a whole batch must fit in. It is also how long
 * another input may have to wait for a worker (see ScriptPool), unless one payload takes longer.
 */
export const BATCH_TARGET_MS = 25;
export const BATCH_PAYLOADS_MAX = 4096;

/**
 * Payloads that fill BATCH_TARGET_MS at the measured worker time per payload (all rules), at least
 * one (a rule that needs more than the target per payload runs one payload per task), and at most
 * twice the largest batch that completed since the rules last changed (`provenPayloads`): the first
 * batch of an input, of new rules or after a lost worker carries one payload, and sizes grow from there.
 */
export function batchLimit(msPerPayload: number | undefined, provenPayloads: number): number {
  if (msPerPayload === undefined || provenPayloads === 0) return 1;
  const fit = Math.floor(BATCH_TARGET_MS / Math.max(msPerPayload, 1e-6));
  return Math.min(BATCH_PAYLOADS_MAX, 2 * provenPayloads, Math.max(1, fit));
}
const PUSH_ERRORS_MAX = 10;

/** The parts of a task the engine fills in (models, read-only set, rule epoch). */
export type TaskContext = Omit<RunTask, 'kind' | 'rules' | 'payloads'>;

export interface DispatcherDeps {
  inendUuid: string;
  queueMax: number;
  pool: ScriptPool;
  models: ModelSource;
  stats: RuleStatsBook;
  rulesFor(inendUuid: string): RuleScripts[];
  /** Messages for people name rules and inputs by name and uuid (contract 18). */
  ruleName(ruleUuid: string): string | undefined;
  inendName(inendUuid: string): string | undefined;
  taskContext(): TaskContext;
  log?: LogFn;
}

export interface PushOptions {
  /** `wait=durable`: answer only once the push's records are on disk (contract 9). */
  waitDurable?: boolean;
}

class PushTicket {
  remaining: number;
  readonly result: PushResult = { accepted: 0, failed: 0, errors: [], durable: true };
  readonly done: Promise<PushResult>;
  private resolve!: (result: PushResult) => void;

  constructor(
    count: number,
    readonly waitDurable: boolean,
  ) {
    this.remaining = count;
    this.done = new Promise((resolve) => (this.resolve = resolve));
  }

  private readonly kept: number[] = [];

  /** `onDisk`: the payload's records (if any) were fdatasync'ed before this answer. */
  settle(index: number, error: string | undefined, storeReadOnly: string | undefined, onDisk: boolean): void {
    if (storeReadOnly !== undefined) this.result.storeReadOnly ??= storeReadOnly;
    if (!onDisk) this.result.durable = false;
    if (error === undefined) {
      this.result.accepted++;
      this.kept.push(index + 1);
    } else {
      this.result.failed++;
      if (this.result.errors.length < PUSH_ERRORS_MAX) this.result.errors.push({ index, message: error });
    }
    if (--this.remaining === 0) {
      this.result.errors.sort((a, b) => a.index - b.index);
      if (this.result.storeReadOnly !== undefined) this.result.kept = this.kept.sort((a, b) => a - b);
      this.resolve(this.result);
    }
  }
}

interface Entry {
  payload: string;
  ticket?: PushTicket;
  index: number;
}

/** What applying a batch left to settle: per payload its first error, read-only failures, logs to wait for. */
interface Applied {
  failures: Map<number, string>;
  readOnly: Map<number, string>;
  touched: Map<RecordLog, { lastId: number; payloads: Set<number> }>;
}

interface Batch {
  entries: Entry[];
  rules: RuleScripts[];
  result?: BatchResult;
}

export class InputDispatcher {
  private queue: Entry[] = [];
  /** Batches sent and not yet applied, in arrival order (finished ones wait for earlier ones). */
  private readonly inFlight: Batch[] = [];
  /** Batches a worker is running: a worker slot freed by a finished batch is refilled before the store is written. */
  private running = 0;
  /** Moving average of the worker time per payload of this input's batches, for the current rules. */
  private msPerPayload: number | undefined;
  /** The largest batch completed since `rulesKey` changed or a worker was lost. */
  private provenPayloads = 0;
  /** The rule versions the sizing was measured with. */
  private rulesKey = '';
  private pumpScheduled = false;
  /** Batches applied to the store whose pushes wait for durability. */
  private settling = 0;
  private idleWaiters: Array<() => void> = [];
  /** Models this input's rules have written to: a push is refused up front while one is read-only. */
  private readonly targetModels = new Set<string>();
  private readonly repeats = new RepeatFilter();
  /** Health for the lists of the UI (inends/stats). */
  readonly counters = new InputCounters();

  constructor(private readonly deps: DispatcherDeps) {}

  get queued(): number {
    return this.queue.length;
  }

  /** Accepts all payloads or none; resolves once every one is stored (durably when the store syncs every write). */
  push(payloads: string[], options: PushOptions = {}): Promise<PushResult> {
    const { queueMax, inendUuid } = this.deps;
    if (payloads.length === 0) return Promise.resolve({ accepted: 0, failed: 0, errors: [], durable: true });
    this.refuseWhileReadOnly();
    if (payloads.length > queueMax) {
      throw new InvalidArgumentError(`payloads: at most ${queueMax} per push for input ${this.inputLabel()}, got ${payloads.length}`);
    }
    if (this.queue.length + payloads.length > queueMax) {
      throw new UnavailableError(`input ${this.inputLabel()} queue is full (${this.queue.length} of ${queueMax} payloads waiting), retry later`, 1);
    }
    this.counters.received();
    const ticket = new PushTicket(payloads.length, options.waitDurable === true);
    payloads.forEach((payload, index) => this.queue.push({ payload, ticket, index }));
    this.schedulePump();
    return ticket.done;
  }

  /** Log lines carry the names beside the uuids (an operator reads names). */
  private logNames(ruleUuid: string): Record<string, string> {
    const { inendUuid, ruleName, inendName } = this.deps;
    return { rule: ruleUuid, ruleName: ruleName(ruleUuid) ?? '', inend: inendUuid, inendName: inendName(inendUuid) ?? '' };
  }

  private inputLabel(): string {
    return named(this.deps.inendName(this.deps.inendUuid), this.deps.inendUuid);
  }

  /** Throws StoreReadOnlyError (503) while a model this input writes to is read-only: nothing is accepted. */
  private refuseWhileReadOnly(): void {
    for (const modelId of this.targetModels) {
      let target: RecordLog;
      try {
        target = this.deps.models.log(modelId);
      } catch {
        this.targetModels.delete(modelId);
        continue;
      }
      if (target.state === 'read-only') throw new StoreReadOnlyError(modelId, target.stats().lastError ?? 'write failed');
    }
  }

  /** For simulators: takes what fits, returns how many. */
  offer(payloads: string[]): number {
    const room = Math.max(0, this.deps.queueMax - this.queue.length);
    const taken = payloads.slice(0, room);
    if (payloads.length > 0) this.counters.received();
    for (const payload of taken) this.queue.push({ payload, index: 0 });
    if (taken.length > 0) this.schedulePump();
    return taken.length;
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (this.queue.length === 0 && this.inFlight.length === 0 && this.settling === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // Pushes made in the same turn of the event loop share a batch.
    queueMicrotask(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length > 0 && this.running < this.deps.pool.size) {
      const rules = this.deps.rulesFor(this.deps.inendUuid);
      const rulesKey = rulesKeyOf(rules);
      if (rulesKey !== this.rulesKey) {
        this.rulesKey = rulesKey;
        this.resetSizing();
      }
      const limit = batchLimit(this.msPerPayload, this.provenPayloads);
      const entries = this.queue.length <= limit ? this.queue : this.queue.slice(0, limit);
      this.queue = entries === this.queue ? [] : this.queue.slice(limit);
      const batch: Batch = { entries, rules };
      this.inFlight.push(batch);
      this.running++;
      void this.execute(batch).then((result) => {
        this.running--;
        batch.result = result;
        // Refill the worker first, so it runs the next batch while this thread appends this one.
        this.pump();
        this.applyFinished();
      });
    }
    this.notifyIdle();
  }

  private resetSizing(): void {
    this.msPerPayload = undefined;
    this.provenPayloads = 0;
  }

  private async execute(batch: Batch): Promise<BatchResult> {
    const { rules, entries } = batch;
    if (rules.length === 0) return { ops: [], errors: [], summaries: [], debug: [] };
    try {
      const result = await this.deps.pool.run(this.task(rules, entries.map((e) => e.payload)), this.deps.inendUuid);
      if (result.elapsedMs !== undefined && this.rulesKey === rulesKeyOf(rules)) {
        const sample = result.elapsedMs / entries.length;
        this.msPerPayload = this.msPerPayload === undefined ? sample : 0.7 * this.msPerPayload + 0.3 * sample;
        this.provenPayloads = Math.max(this.provenPayloads, entries.length);
      }
      return unpackResult(result);
    } catch (err) {
      if (err instanceof WorkerLostError) {
        // Something in the batch ran past the hard limit (or broke the worker): start small again.
        this.resetSizing();
        return this.rerunOneByOne(batch);
      }
      return failedResult(batch, `rule runtime error: ${(err as Error).message}`);
    }
  }

  /**
   * A batch whose worker was ended (hard time limit, crash) returned nothing; running each
   * (payload, rule) pair alone finds the culprit and lets every other pair store its records.
   */
  private async rerunOneByOne(batch: Batch): Promise<BatchResult> {
    const merged: BatchResult = {
      ops: [],
      errors: [],
      summaries: batch.rules.map(() => ({ invocations: 0, failures: 0, histogram: [] })),
      debug: [],
    };
    for (let p = 0; p < batch.entries.length; p++) {
      for (let r = 0; r < batch.rules.length; r++) {
        try {
          const single = unpackResult(await this.deps.pool.run(this.task([batch.rules[r]], [batch.entries[p].payload]), this.deps.inendUuid));
          for (const op of single.ops) merged.ops.push({ ...op, payload: p, rule: r });
          for (const e of single.errors) merged.errors.push({ ...e, payload: p, rule: r });
          for (const d of single.debug) merged.debug.push({ ...d, rule: r });
          if (single.readOnlyPayloads !== undefined) (merged.readOnlyPayloads ??= []).push(p);
          const s = merged.summaries[r];
          s.invocations += single.summaries[0].invocations;
          s.failures += single.summaries[0].failures;
          s.histogram = s.histogram.length === 0 ? single.summaries[0].histogram : s.histogram.map((c, i) => c + single.summaries[0].histogram[i]);
        } catch (err) {
          merged.summaries[r].invocations++;
          merged.summaries[r].failures++;
          merged.errors.push({ payload: p, rule: r, message: (err as Error).message });
        }
      }
    }
    return merged;
  }

  private task(rules: RuleScripts[], payloads: string[]): RunTask {
    return { kind: 'run', ...this.deps.taskContext(), rules, payloads };
  }

  /** Applies finished batches at the head of the line, in order, then settles their pushes once durable. */
  private applyFinished(): void {
    while (this.inFlight.length > 0 && this.inFlight[0].result !== undefined) {
      const batch = this.inFlight.shift()!;
      this.settling++;
      void this.settle(batch, this.apply(batch, batch.result!)).finally(() => {
        this.settling--;
        this.notifyIdle();
      });
    }
    this.pump();
  }

  /** Appends the batch's records; returns each payload's first error and the logs to wait for. */
  private apply(batch: Batch, result: BatchResult): Applied {
    const { stats, log, models } = this.deps;
    const failures = new Map<number, string>();
    const readOnly = new Map<number, string>();
    const fail = (payload: number, ruleUuid: string, message: string, line?: number): void => {
      if (failures.has(payload)) return;
      failures.set(payload, `rule ${named(this.deps.ruleName(ruleUuid), ruleUuid)}: ${line !== undefined ? `line ${line}: ` : ''}${message}`);
    };
    result.summaries.forEach((summary, r) => stats.addSummary(batch.rules[r].uuid, summary));
    for (const raw of result.errors) {
      const e = { ...raw, message: capMessage(raw.message) };
      const rule = batch.rules[e.rule].uuid;
      stats.addError(rule, e);
      fail(e.payload, rule, e.message, e.line);
      const admitted = this.repeats.admit(rule, e.message);
      if (admitted === undefined) continue;
      const repeated = admitted.repeats > 0 ? { repeatedSinceLastLine: admitted.repeats } : {};
      log?.('warn', { ...this.logNames(rule), ...(e.line !== undefined ? { line: e.line } : {}), ...repeated }, e.message);
    }
    for (const d of result.debug) log?.('info', this.logNames(batch.rules[d.rule].uuid), d.message);
    // The store turned read-only after this push was admitted: rds refused these payloads' records in the
    // worker (whatever the script did with the error). Not stored, and the push must answer 503.
    for (const p of result.readOnlyPayloads ?? []) {
      const message = 'store read-only: the record was refused while the disk could not be written';
      if (!failures.has(p)) failures.set(p, message);
      readOnly.set(p, message);
    }
    const touched = new Map<RecordLog, { lastId: number; payloads: Set<number> }>();
    // The registry cannot change while this runs: look each model's log up once per batch, not per record.
    const logs = new Map<string, RecordLog>();
    for (const op of result.ops) {
      const rule = batch.rules[op.rule].uuid;
      try {
        let target = logs.get(op.modelId);
        if (target === undefined) {
          target = models.log(op.modelId);
          logs.set(op.modelId, target);
        }
        const id = op.kind === 'save' ? target.save(op.record) : target.updateLast(op.record);
        this.targetModels.add(op.modelId);
        const entry = touched.get(target) ?? { lastId: 0, payloads: new Set<number>() };
        entry.lastId = Math.max(entry.lastId, id);
        entry.payloads.add(op.payload);
        touched.set(target, entry);
      } catch (err) {
        const message = (err as Error).message;
        stats.reclassifyAsFailure(rule, message);
        fail(op.payload, rule, message);
        if (err instanceof StoreReadOnlyError && !readOnly.has(op.payload)) readOnly.set(op.payload, message);
        log?.('warn', { ...this.logNames(rule), model: op.modelId }, message);
      }
    }
    return { failures, readOnly, touched };
  }

  /**
   * Contract 9: a push is answered once its records are stored and visible. It waits for their fdatasync
   * only under `sync = always`, or when it asked for `wait=durable`; the others are answered at once.
   */
  private async settle(batch: Batch, applied: Applied): Promise<void> {
    const { failures, readOnly, touched } = applied;
    const waits = (p: number): boolean => batch.entries[p].ticket?.waitDurable === true;
    const targetsOf = new Map<number, RecordLog[]>();
    for (const [target, { payloads }] of touched) for (const p of payloads) targetsOf.set(p, [...(targetsOf.get(p) ?? []), target]);
    const mustSync = (p: number): boolean => waits(p) || (targetsOf.get(p) ?? []).some((t) => t.durability === 'always');
    const settleEntry = (p: number, onDisk: boolean): void => {
      const entry = batch.entries[p];
      this.counters.settled(failures.get(p));
      entry.ticket?.settle(entry.index, failures.get(p), readOnly.get(p), onDisk);
    };
    batch.entries.forEach((_, p) => {
      if (!mustSync(p)) settleEntry(p, !targetsOf.has(p));
    });
    const synced = new Set<RecordLog>();
    await Promise.all(
      [...touched].map(async ([target, { lastId, payloads }]) => {
        if (![...payloads].some(mustSync)) return;
        try {
          // A push is answered now: a store that turns read-only (disk full) fails it with a 503 rather
          // than holding the client until space returns. The records stay accepted and are written then.
          await target.durable(lastId, { rejectWhenReadOnly: true });
          if (target.durability !== 'none') synced.add(target);
        } catch (err) {
          const message = (err as Error).message;
          for (const p of payloads) {
            // Read-only: the records are appended and stay in memory until space returns. They are kept,
            // not failed: a client that resent them would store them twice.
            if (err instanceof StoreReadOnlyError) {
              if (!readOnly.has(p)) readOnly.set(p, message);
            } else if (!failures.has(p)) failures.set(p, `store: ${message}`);
          }
        }
      }),
    );
    batch.entries.forEach((_, p) => {
      if (mustSync(p)) settleEntry(p, (targetsOf.get(p) ?? []).every((t) => synced.has(t)));
    });
  }

  private notifyIdle(): void {
    if (this.queue.length > 0 || this.inFlight.length > 0 || this.settling > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function rulesKeyOf(rules: RuleScripts[]): string {
  return rules.map((r) => `${r.uuid}@${r.version}`).join(',');
}

function failedResult(batch: Batch, message: string): BatchResult {
  return {
    ops: [],
    errors: batch.entries.flatMap((_, payload) => batch.rules.map((_r, rule) => ({ payload, rule, message }))),
    summaries: batch.rules.map(() => ({ invocations: batch.entries.length, failures: batch.entries.length, histogram: [] })),
    debug: [],
  };
}
