/**
 * The queue of one input. Payloads are batched into worker tasks (batch-sizing.ts, batch-run.ts); several
 * batches may run at once on different workers, but their records are appended strictly in arrival
 * order (batch-apply.ts): a finished batch waits until every earlier batch of the input has been
 * applied. A full queue refuses a push whole (503); pushes are answered as push-answers.ts says.
 */
import { InvalidArgumentError, UnavailableError } from '../errors.js';
import { named } from '../util/messages.js';
import { BatchApplier } from './batch-apply.js';
import { BatchRunner, type TaskContext } from './batch-run.js';
import { BatchSizing } from './batch-sizing.js';
import { InputCounters } from './input-stats.js';
import type { ScriptPool } from './pool/pool.js';
import type { BatchResult, RuleScripts } from './shared/protocol.js';
import { isBodyPayloads, payloadCount, slotsTaskPayloads, type PushPayloads } from './payloads.js';
import { PushTicket, settlePayloads, type QueuedPayload } from './push-answers.js';
import type { RuleStatsBook } from './shared/stats.js';
import type { LogFn, ModelSource, PushResult } from './shared/types.js';

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

interface Batch {
  entries: QueuedPayload[];
  rules: RuleScripts[];
  result?: BatchResult;
}

/**
 * Taken slots are cleared and skipped (the head index moves); the array is cut, its waiting tail copied to a
 * new one, only once at least this many and half of it were taken, so each payload is copied at most about
 * once. Cutting it at every batch copied the whole queue each time: with 100,000 queued payloads and batches
 * of 100-200, that was over a quarter of the main thread's samples (issue 32).
 */
const QUEUE_COMPACT_MIN = 1024;

export class InputDispatcher {
  /** Waiting payloads are queue[head..]; the ones before head were taken and are cleared. */
  private queue: QueuedPayload[] = [];
  private head = 0;
  /** Batches sent and not yet applied, in arrival order (finished ones wait for earlier ones). */
  private readonly inFlight: Batch[] = [];
  /** Batches a worker is running: a worker slot freed by a finished batch is refilled before the store is written. */
  private running = 0;
  private pumpScheduled = false;
  /** Batches applied to the store whose pushes wait for durability. */
  private settling = 0;
  private idleWaiters: Array<() => void> = [];
  private readonly sizing = new BatchSizing();
  private readonly runner: BatchRunner;
  private readonly applier: BatchApplier;
  /** Health for the lists of the UI (inends/stats). */
  readonly counters = new InputCounters();

  constructor(private readonly deps: DispatcherDeps) {
    this.runner = new BatchRunner({ inendUuid: deps.inendUuid, pool: deps.pool, sizing: this.sizing, taskContext: deps.taskContext });
    this.applier = new BatchApplier(deps);
  }

  get queued(): number {
    return this.queue.length - this.head;
  }

  /** Accepts all payloads or none; resolves once every one is stored (durably when the store syncs every write). */
  push(payloads: PushPayloads, options: PushOptions = {}): Promise<PushResult> {
    const { queueMax } = this.deps;
    const count = payloadCount(payloads);
    if (count === 0) return Promise.resolve({ accepted: 0, failed: 0, errors: [], durable: true });
    this.applier.refuseWhileReadOnly();
    if (count > queueMax) {
      throw new InvalidArgumentError(`payloads: at most ${queueMax} per push for input ${this.inputLabel()}, got ${count}`);
    }
    if (this.queued + count > queueMax) {
      throw new UnavailableError(`input ${this.inputLabel()} queue is full (${this.queued} of ${queueMax} payloads waiting), retry later`, 1);
    }
    this.counters.received();
    const ticket = new PushTicket(count, options.waitDurable === true);
    if (isBodyPayloads(payloads)) {
      const { body, starts, ends } = payloads;
      for (let index = 0; index < count; index++) this.queue.push({ text: undefined, body, start: starts[index], end: ends[index], ticket, index });
    } else {
      for (let index = 0; index < count; index++) this.queue.push({ text: payloads[index], body: undefined, start: 0, end: 0, ticket, index });
    }
    this.schedulePump();
    return ticket.done;
  }

  /** For simulators: takes what fits, returns how many. */
  offer(payloads: string[]): number {
    const room = Math.max(0, this.deps.queueMax - this.queued);
    const taken = payloads.slice(0, room);
    if (payloads.length > 0) this.counters.received();
    for (const text of taken) this.queue.push({ text, body: undefined, start: 0, end: 0, ticket: undefined, index: 0 });
    if (taken.length > 0) this.schedulePump();
    return taken.length;
  }

  /** Resolves when nothing is queued or running. */
  idle(): Promise<void> {
    if (this.queued === 0 && this.inFlight.length === 0 && this.settling === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private inputLabel(): string {
    return named(this.deps.inendName(this.deps.inendUuid), this.deps.inendUuid);
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
    while (this.queued > 0 && this.running < this.deps.pool.size) {
      const rules = this.deps.rulesFor(this.deps.inendUuid);
      const entries = this.take(this.sizing.limitFor(rules));
      const batch: Batch = { entries, rules };
      this.inFlight.push(batch);
      this.running++;
      void this.runner
        .run(rules, slotsTaskPayloads(entries))
        .then((result) => {
          this.running--;
          batch.result = result;
          // Refill the worker first, so it runs the next batch while this thread appends this one.
          this.pump();
          this.applyFinished();
        });
    }
    this.notifyIdle();
  }

  /** The first `limit` (at least 1) waiting payloads, out of the queue; costs what it takes, not what waits. */
  private take(limit: number): QueuedPayload[] {
    const { queue, head } = this;
    if (limit < 1 || head > queue.length) throw new Error(`queue: taking ${limit} at ${head} of ${queue.length}`);
    if (head === 0 && queue.length <= limit) {
      this.queue = [];
      return queue;
    }
    const end = Math.min(queue.length, head + limit);
    const entries = queue.slice(head, end);
    if (end === queue.length) {
      this.queue = [];
      this.head = 0;
    } else if (end >= QUEUE_COMPACT_MIN && end * 2 >= queue.length) {
      this.queue = queue.slice(end);
      this.head = 0;
    } else {
      // Taken entries are let go of (their tickets and payloads) before the array is cut.
      queue.fill(undefined as unknown as QueuedPayload, head, end);
      this.head = end;
    }
    return entries;
  }

  /** Applies finished batches at the head of the line, in order, then settles their pushes once durable. */
  private applyFinished(): void {
    while (this.inFlight.length > 0 && this.inFlight[0].result !== undefined) {
      const batch = this.inFlight.shift()!;
      this.settling++;
      const applied = this.applier.apply(batch.rules, batch.result!);
      void settlePayloads(batch.entries, applied, this.counters).finally(() => {
        this.settling--;
        this.notifyIdle();
      });
    }
    this.pump();
  }

  private notifyIdle(): void {
    if (this.queued > 0 || this.inFlight.length > 0 || this.settling > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}
