/**
 * Runs one batch of an input on a worker: every rule reading the input on each payload of the batch, in
 * order. A batch whose worker was ended (hard time limit, crash) is run again pair by pair, so only the
 * culprit fails.
 */
import { WorkerLostError } from '../errors.js';
import type { BatchSizing } from './batch-sizing.js';
import type { ScriptPool } from './pool/pool.js';
import { batchResult, forEachOp, onePayload, type BatchResult, type RecordOp, type RuleScripts, type RunTask, type TaskPayloads } from './shared/protocol.js';

/** The parts of a task the engine fills in (models, read-only set, rule epoch). */
export type TaskContext = Omit<RunTask, 'kind' | 'rules' | 'payloads' | 'models'> & Required<Pick<RunTask, 'models'>>;

export interface BatchRunnerDeps {
  inendUuid: string;
  pool: ScriptPool;
  /** Learns from every batch's worker time; starts over when a worker is lost. */
  sizing: BatchSizing;
  taskContext(): TaskContext;
}

export class BatchRunner {
  constructor(private readonly deps: BatchRunnerDeps) {}

  async run(rules: RuleScripts[], payloads: TaskPayloads): Promise<BatchResult> {
    if (rules.length === 0) return { ops: [], errors: [], summaries: [], debug: [] };
    try {
      const result = await this.deps.pool.run(this.task(rules, payloads), this.deps.inendUuid);
      if (result.elapsedMs !== undefined) this.deps.sizing.measured(rules, payloads.ends.length, result.elapsedMs);
      return batchResult(result);
    } catch (err) {
      if (err instanceof WorkerLostError) {
        // Something in the batch ran past the hard limit (or broke the worker): start small again.
        this.deps.sizing.reset();
        return this.rerunOneByOne(rules, payloads);
      }
      return failedResult(rules, payloads.ends.length, `rule runtime error: ${(err as Error).message}`);
    }
  }

  /**
   * A batch whose worker was ended (hard time limit, crash) returned nothing; running each
   * (payload, rule) pair alone finds the culprit and lets every other pair store its records.
   */
  private async rerunOneByOne(rules: RuleScripts[], payloads: TaskPayloads): Promise<BatchResult> {
    const ops: RecordOp[] = [];
    const merged: BatchResult = {
      ops,
      errors: [],
      summaries: rules.map(() => ({ invocations: 0, failures: 0, histogram: [] })),
      debug: [],
    };
    for (let p = 0; p < payloads.ends.length; p++) {
      for (let r = 0; r < rules.length; r++) {
        try {
          const single = batchResult(await this.deps.pool.run(this.task([rules[r]], onePayload(payloads, p)), this.deps.inendUuid));
          forEachOp(single.ops, (op) => ops.push({ ...op, payload: p, rule: r }));
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

  private task(rules: RuleScripts[], payloads: TaskPayloads): RunTask {
    return { kind: 'run', ...this.deps.taskContext(), rules, payloads };
  }
}

function failedResult(rules: RuleScripts[], payloads: number, message: string): BatchResult {
  return {
    ops: [],
    errors: Array.from({ length: payloads }, (_, payload) => rules.map((_r, rule) => ({ payload, rule, message }))).flat(),
    summaries: rules.map(() => ({ invocations: payloads, failures: payloads, histogram: [] })),
    debug: [],
  };
}
