/**
 * A dry run (contract 18): a rule's scripts run on a payload in the real worker pool, under every limit
 * of a real run (soft and hard time limits, memory cap, records and bytes per invocation, payloads per
 * push), and the records come back instead of being appended. Nothing is stored, no stats are counted
 * and nothing is logged: an integrator can try a script as often as they like.
 */
import { InvalidArgumentError, WorkerLostError } from '../errors.js';
import { describeValue, mustBe } from '../util/messages.js';
import type { TaskContext } from './batch-run.js';
import { batchLimit } from './batch-sizing.js';
import { optionalText, requireBody } from './metadata-file.js';
import { splitPayloads } from './payloads.js';
import type { ScriptPool } from './pool/pool.js';
import { recordOf } from './shared/op-values.js';
import { batchResult, forEachOp, taskPayloads, type BatchResult, type RuleScripts } from './shared/protocol.js';
import { capMessage } from './shared/repeat-filter.js';
import { parseActions, parseCallback } from './rules.js';

/** Records the answer lists; `recordsTotal` counts them all. */
export const DRY_RUN_RECORDS_MAX = 1000;
/** Errors the answer lists; `errorsTotal` counts them all. */
export const DRY_RUN_ERRORS_MAX = 100;
const DEBUG_LINES_MAX = 100;
/** Workers cache compiled rules by uuid: every dry run is a new version of this one, never a live rule. */
const DRY_RUN_RULE = 'DRYRUN';
/** The pool shares workers fairly between owners: dry runs queue as one owner beside the inputs. */
const POOL_OWNER = 'dry-run';

export interface DryRunRecord {
  /** The payload (0-based; the NDJSON line among the non-blank ones) that produced the record. */
  index: number;
  model: string;
  modelName: string;
  op: 'save' | 'updateLast';
  /** As the store would append it: checked, converted and rounded; `id` and `create_at` are the store's. */
  record: Record<string, unknown>;
}

export interface DryRunError {
  /** The payload; absent for an error of the script itself (it does not compile). */
  index?: number;
  message: string;
  /** Line of the script (of `script` when the scripts do not compile). */
  line?: number;
  /** Which script does not compile. */
  script?: 'actions' | 'success' | 'failed';
}

export interface DryRunResult {
  payloads: number;
  /** What a push of the same body would answer: payloads stored without an error, payloads failed. */
  accepted: number;
  failed: number;
  records: DryRunRecord[];
  recordsTotal: number;
  errors: DryRunError[];
  errorsTotal: number;
  /** `Debug(...)` lines of the run, which a real run would log. */
  debug: string[];
}

export interface DryRunDeps {
  pool: ScriptPool;
  queueMax: number;
  taskContext(): TaskContext;
}

export interface DryRunRequest {
  scripts: Omit<RuleScripts, 'uuid' | 'version'>;
  payloads: string[];
}

/** Checks `{actions, payload, contentType?, success?, failed?}`; see docs/api.md. */
export function parseDryRun(input: unknown, queueMax: number): DryRunRequest {
  const body = requireBody(input);
  const scripts = { actions: parseActions(body.actions), success: parseCallback(body.success, 'success'), failed: parseCallback(body.failed, 'failed') };
  if (body.payload === undefined || body.payload === null) {
    throw new InvalidArgumentError(mustBe('payload', 'the push body to try (a string, or any JSON value to send as its JSON text)', body.payload));
  }
  const text = typeof body.payload === 'string' ? body.payload : JSON.stringify(body.payload);
  const contentType = optionalText(body.contentType, 'contentType', 200) || 'application/json';
  const payloads = splitPayloads(text, contentType);
  if (payloads.length === 0) throw new InvalidArgumentError(`payload is empty: give one payload (or NDJSON lines with contentType application/x-ndjson), got ${describeValue(text)}`);
  if (payloads.length > queueMax) {
    throw new InvalidArgumentError(`payload: at most ${queueMax} NDJSON lines, as for a push ([scripts] queue_max), got ${payloads.length}`);
  }
  return { scripts, payloads };
}

export class DryRunner {
  private version = 0;

  constructor(private readonly deps: DryRunDeps) {}

  async run(input: unknown): Promise<DryRunResult> {
    const { scripts, payloads } = parseDryRun(input, this.deps.queueMax);
    const answer = new DryRunAnswer(payloads.length, this.deps.taskContext().models);
    const compiled = await this.deps.pool.compile({ kind: 'compile', ...scripts });
    if (!compiled.ok) {
      const match = /^(actions|success|failed): line \d+: ([\s\S]*)$/.exec(compiled.error ?? '');
      answer.scriptError(match?.[2] ?? compiled.error ?? 'script does not compile', compiled.line, match?.[1] as DryRunError['script']);
      return answer.finish();
    }
    const rule: RuleScripts = { uuid: DRY_RUN_RULE, version: ++this.version, ...scripts };
    // Batches grow as a real input's do (batch-sizing.ts batchLimit), so a batch fits the hard time limit.
    let msPerPayload: number | undefined;
    let proven = 0;
    for (let start = 0; start < payloads.length; ) {
      const count = Math.min(batchLimit(msPerPayload, proven), payloads.length - start);
      const batch = payloads.slice(start, start + count);
      try {
        const started = performance.now();
        const result = await this.runTask(rule, batch);
        const sample = (result.elapsedMs ?? performance.now() - started) / count;
        msPerPayload = msPerPayload === undefined ? sample : 0.7 * msPerPayload + 0.3 * sample;
        proven = Math.max(proven, count);
        answer.add(result, start);
      } catch (err) {
        if (!(err instanceof WorkerLostError)) throw err;
        // As the dispatcher does: each payload alone, so only the one past the hard limit fails.
        msPerPayload = undefined;
        proven = 0;
        for (let p = 0; p < batch.length; p++) {
          try {
            answer.add(await this.runTask(rule, [batch[p]]), start + p);
          } catch (single) {
            if (!(single instanceof WorkerLostError)) throw single;
            answer.payloadError(start + p, single.message);
          }
        }
      }
      start += count;
    }
    return answer.finish();
  }

  private async runTask(rule: RuleScripts, payloads: string[]): Promise<BatchResult> {
    return batchResult(await this.deps.pool.run({ kind: 'run', ...this.deps.taskContext(), rules: [rule], payloads: taskPayloads(payloads) }, POOL_OWNER));
  }
}

/** The answer as it fills: per payload whether it failed, capped lists, totals. */
class DryRunAnswer {
  private readonly result: DryRunResult;
  private readonly failedPayloads = new Set<number>();
  private readonly modelNames: Map<string, string>;
  private scriptFailed = false;

  constructor(payloads: number, models: ReadonlyArray<{ uuid: string; name: string }>) {
    this.result = { payloads, accepted: 0, failed: 0, records: [], recordsTotal: 0, errors: [], errorsTotal: 0, debug: [] };
    this.modelNames = new Map(models.map((m) => [m.uuid, m.name]));
  }

  scriptError(message: string, line: number | undefined, script: DryRunError['script']): void {
    this.scriptFailed = true;
    this.error({ message: capMessage(message), ...(line !== undefined ? { line } : {}), ...(script !== undefined ? { script } : {}) });
  }

  payloadError(index: number, message: string, line?: number): void {
    this.failedPayloads.add(index);
    this.error({ index, message: capMessage(message), ...(line !== undefined ? { line } : {}) });
  }

  /** A batch's result; `offset` is the index of its first payload. */
  add(batch: BatchResult, offset: number): void {
    for (const e of batch.errors) this.payloadError(offset + e.payload, e.message, e.line);
    for (const p of batch.readOnlyPayloads ?? []) {
      if (!this.failedPayloads.has(offset + p)) this.payloadError(offset + p, 'store read-only: a push now would be refused (the disk could not be written)');
    }
    for (const d of batch.debug) if (this.result.debug.length < DEBUG_LINES_MAX) this.result.debug.push(capMessage(d.message));
    forEachOp(batch.ops, (op) => {
      this.result.recordsTotal++;
      if (this.result.records.length >= DRY_RUN_RECORDS_MAX) return;
      this.result.records.push({
        index: offset + op.payload,
        model: op.modelId,
        modelName: this.modelNames.get(op.modelId) ?? '',
        op: op.kind === 'save' ? 'save' : 'updateLast',
        record: recordOf(op),
      });
    });
  }

  finish(): DryRunResult {
    const r = this.result;
    r.failed = this.scriptFailed ? r.payloads : this.failedPayloads.size;
    r.accepted = r.payloads - r.failed;
    r.errors.sort((a, b) => (a.index ?? -1) - (b.index ?? -1));
    return r;
  }

  private error(e: DryRunError): void {
    this.result.errorsTotal++;
    if (this.result.errors.length < DRY_RUN_ERRORS_MAX) this.result.errors.push(e);
  }
}
