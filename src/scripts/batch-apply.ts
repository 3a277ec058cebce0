/**
 * Applies what a batch's rules produced: their records appended to the models' logs, their invocations
 * and errors counted in the rule stats, their errors and debug lines logged (repeats held back).
 */
import { StoreReadOnlyError, UnavailableError } from '../errors.js';
import { named } from '../util/messages.js';
import { recordOf } from './shared/op-values.js';
import { forEachOp, type BatchResult, type RuleScripts } from './shared/protocol.js';
import { RepeatFilter, capMessage } from './shared/repeat-filter.js';
import type { RuleStatsBook } from './shared/stats.js';
import type { LogFn, ModelSource, RecordLog } from './shared/types.js';

/** What applying a batch left to settle: per payload its first error, read-only failures, refusals, logs to wait for. */
export interface Applied {
  failures: Map<number, string>;
  readOnly: Map<number, string>;
  /**
   * Payloads a model refused for a moment (writes held by an import, a restore's swap, a full write
   * queue), with the refusal: not stored, and the push must answer 503 so the client sends them again.
   */
  refused: Map<number, UnavailableError>;
  touched: Map<RecordLog, Touched>;
}

/** Per log a batch wrote to: the last id it appended and the payloads whose records it holds, in increasing order, each once. */
export interface Touched {
  lastId: number;
  payloads: number[];
}

export interface BatchApplierDeps {
  inendUuid: string;
  models: ModelSource;
  stats: RuleStatsBook;
  /** Messages for people name rules and inputs by name and uuid (contract 18). */
  ruleName(ruleUuid: string): string | undefined;
  inendName(inendUuid: string): string | undefined;
  log?: LogFn;
}

export class BatchApplier {
  /** Models this input's rules have written to: a push is refused up front while one is read-only. */
  private readonly targetModels = new Set<string>();
  private readonly repeats = new RepeatFilter();

  constructor(private readonly deps: BatchApplierDeps) {}

  /** Throws StoreReadOnlyError (503) while a model this input writes to is read-only: nothing is accepted. */
  refuseWhileReadOnly(): void {
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

  /** Appends the records the batch's `rules` made; returns each payload's first error and the logs to wait for. */
  apply(rules: RuleScripts[], result: BatchResult): Applied {
    const { stats, log, models } = this.deps;
    const failures = new Map<number, string>();
    const readOnly = new Map<number, string>();
    const refused = new Map<number, UnavailableError>();
    const fail = (payload: number, ruleUuid: string, message: string, line?: number): void => {
      if (failures.has(payload)) return;
      // Capped again with its prefix: the 1 KB of contract 18 is the whole message's.
      failures.set(payload, capMessage(`rule ${named(this.deps.ruleName(ruleUuid), ruleUuid)}: ${line !== undefined ? `line ${line}: ` : ''}${message}`));
    };
    result.summaries.forEach((summary, r) => stats.addSummary(rules[r].uuid, summary));
    for (const raw of result.errors) {
      const e = { ...raw, message: capMessage(raw.message) };
      const rule = rules[e.rule].uuid;
      stats.addError(rule, e);
      fail(e.payload, rule, e.message, e.line);
      const admitted = this.repeats.admit(rule, e.message);
      if (admitted === undefined) continue;
      const repeated = admitted.repeats > 0 ? { repeatedSinceLastLine: admitted.repeats } : {};
      log?.('warn', { ...this.logNames(rule), ...(e.line !== undefined ? { line: e.line } : {}), ...repeated }, e.message);
    }
    for (const d of result.debug) log?.('info', this.logNames(rules[d.rule].uuid), d.message);
    // The store turned read-only after this push was admitted: rds refused these payloads' records in the
    // worker (whatever the script did with the error). Not stored, and the push must answer 503.
    for (const p of result.readOnlyPayloads ?? []) {
      const message = 'store read-only: the record was refused while the disk could not be written';
      if (!failures.has(p)) failures.set(p, message);
      readOnly.set(p, message);
    }
    const touched = new Map<RecordLog, Touched>();
    // The registry cannot change while this runs: look each model's log up once per batch, not per record.
    const logs = new Map<string, RecordLog>();
    // Ops of one model come in runs: the log and its entry of the previous op serve the next one.
    let model: string | undefined;
    let target: RecordLog | undefined;
    let entry: Touched | undefined;
    forEachOp(result.ops, (op) => {
      try {
        if (op.modelId !== model || target === undefined) {
          target = logs.get(op.modelId);
          if (target === undefined) {
            target = models.log(op.modelId);
            logs.set(op.modelId, target);
          }
          model = op.modelId;
          entry = touched.get(target);
        }
        const id = op.kind === 'save' ? target.savePacked(op.keys, op.bytes, op.start, op.end) : target.updateLast(recordOf(op));
        if (entry === undefined) {
          this.targetModels.add(op.modelId);
          entry = { lastId: 0, payloads: [] };
          touched.set(target, entry);
        }
        if (id > entry.lastId) entry.lastId = id;
        // Ops come in payload order (the worker runs payload by payload): a payload this log lists already is its last.
        const { payloads } = entry;
        if (payloads.length === 0 || payloads[payloads.length - 1] !== op.payload) payloads.push(op.payload);
      } catch (err) {
        const rule = rules[op.rule].uuid;
        const message = (err as Error).message;
        stats.reclassifyAsFailure(rule, message);
        fail(op.payload, rule, message);
        if (err instanceof StoreReadOnlyError) {
          if (!readOnly.has(op.payload)) readOnly.set(op.payload, message);
        } else if (err instanceof UnavailableError && !refused.has(op.payload)) refused.set(op.payload, err);
        log?.('warn', { ...this.logNames(rule), model: op.modelId }, message);
      }
    });
    return { failures, readOnly, refused, touched };
  }

  /** Log lines carry the names beside the uuids (an operator reads names). */
  private logNames(ruleUuid: string): Record<string, string> {
    const { inendUuid, ruleName, inendName } = this.deps;
    return { rule: ruleUuid, ruleName: ruleName(ruleUuid) ?? '', inend: inendUuid, inendName: inendName(inendUuid) ?? '' };
  }
}
