/**
 * What a script worker thread does: one Lua sandbox per thread, rules compiled once per version, payloads
 * of a task run in order through every rule of the task. Records are checked here against the model
 * definitions shipped with the task and come back as ops for the main thread to append. worker.ts is the
 * piscina entry that runs it.
 */
import { checkRecord } from '../../models/record-check.js';
import { named } from '../../util/messages.js';
import type { DataModel } from '../../models/types.js';
import { ValuePacker } from '../../store/format/value-pack.js';
import type { FlatScan } from './flat-json.js';
import { INVOKE_ERROR, INVOKE_TIMEOUT, type LibHost } from './lua-libs.js';
import { LuaSandbox, type SandboxLimits } from './lua-sandbox.js';
import { attributeNames, checkScannedSave, fieldBytes } from './scanned-record.js';
import { newHistogram, recordDuration } from '../shared/stats.js';
import {
  hasScripts,
  OpPacker,
  WATCH_OVERRAN,
  WATCH_STARTED,
  type CompileTask,
  type RuleScripts,
  type RuleVersion,
  type RunResult,
  type RunTask,
  type StaleAnswer,
  type WorkerAnswer,
  type WorkerTask,
} from '../shared/protocol.js';
import type { ValidationResult } from '../shared/types.js';

/** A runaway `rds:Save` loop would otherwise fill the task result until the soft limit hits. */
export const RECORDS_PER_INVOCATION_MAX = 1000;
/** Bytes of values one invocation may store (strings by length, other values 8): one payload cannot fill the heap. */
export const STORED_BYTES_PER_INVOCATION_MAX = 4 * 1024 * 1024;
const DEBUG_LINES_PER_TASK_MAX = 100;

/** `actions:7: message` -> line 7 and the message without the prefix. */
export function splitPosition(message: string): { message: string; line?: number; script?: string } {
  const match = /^(actions|success|failed):(\d+): ([\s\S]*)$/.exec(message);
  if (!match) return { message };
  return { script: match[1], line: Number(match[2]), message: match[3] };
}

function recordBytes(record: Record<string, unknown>): number {
  let n = 0;
  for (const key in record) n += fieldBytes(key, record[key]);
  return n;
}

/** What `rds:*` calls write into while one invocation runs. */
class InvocationContext implements LibHost {
  models = new Map<string, DataModel>();
  readOnly = new Set<string>();
  readOnlyPayloads = new Set<number>();
  /** The value bytes of every task's ops, written here and copied out when the task ends. */
  readonly valuePacker = new ValuePacker();
  ops = new OpPacker(this.valuePacker);
  debugLines: RunResult['debug'] = [];
  payload = 0;
  rule = 0;
  recordsThisInvocation = 0;
  bytesThisInvocation = 0;
  /** storeScanned's scratch: a record's values, and the key of each attribute. */
  private readonly scannedValues: unknown[] = [];
  private readonly scannedKeySlots: number[] = [];

  store(kind: 'save' | 'update', uuid: unknown, input: Record<string, unknown>): string | undefined {
    if (typeof uuid !== 'string') return `model uuid must be a string, got ${uuid === null ? 'nil' : typeof uuid}`;
    return this.storeChecked(kind, uuid, input, true) ?? undefined;
  }

  /** checkRecord names the first problem in key order: with the keys in another order, its refusal is asked again. */
  storeUnordered(kind: 'save' | 'update', uuid: string, input: Record<string, unknown>): string | undefined | null {
    return this.storeChecked(kind, uuid, input, false);
  }

  /** A save of a scanned record (flat-json.ts): null where checkScannedSave leaves it to checkRecord. */
  storeScanned(kind: 'save' | 'update', uuid: string, scan: FlatScan): string | undefined | null {
    const model = this.models.get(uuid);
    if (!model || kind !== 'save') return null;
    const bytes = checkScannedSave(model, scan, this.scannedValues, this.scannedKeySlots);
    if (bytes < 0) return null;
    const refusal = this.admit(uuid, model, bytes);
    if (refusal !== undefined) return refusal;
    this.ops.addValues(this.payload, this.rule, uuid, kind, attributeNames(model), this.scannedValues);
    return undefined;
  }

  private storeChecked(kind: 'save' | 'update', uuid: string, input: Record<string, unknown>, exactOrder: boolean): string | undefined | null {
    const model = this.models.get(uuid);
    if (!model) return `unknown model ${uuid}`;
    const check = checkRecord(model, input, kind);
    if (!check.ok) return exactOrder ? check.error : null;
    const refusal = this.admit(uuid, model, recordBytes(check.record));
    if (refusal !== undefined) return refusal;
    this.ops.add(this.payload, this.rule, uuid, kind, check.record);
    return undefined;
  }

  /** A checked record of `bytes` may be stored: the model writable, and the invocation within its limits. */
  private admit(uuid: string, model: DataModel, bytes: number): string | undefined {
    if (this.readOnly.has(uuid)) {
      this.readOnlyPayloads.add(this.payload);
      return `store read-only for model ${named(model.name, uuid)}`;
    }
    if (++this.recordsThisInvocation > RECORDS_PER_INVOCATION_MAX) {
      return `too many records in one invocation (at most ${RECORDS_PER_INVOCATION_MAX})`;
    }
    this.bytesThisInvocation += bytes;
    if (this.bytesThisInvocation > STORED_BYTES_PER_INVOCATION_MAX) {
      return `one invocation may store at most ${STORED_BYTES_PER_INVOCATION_MAX} bytes of values`;
    }
    return undefined;
  }

  debug(message: string): void {
    if (this.debugLines.length < DEBUG_LINES_PER_TASK_MAX) this.debugLines.push({ rule: this.rule, message });
  }
}

interface CompiledRule {
  version: number;
  envRef?: number;
  error?: string;
}

export class ScriptWorker {
  private modelsVersion = -1;
  private rulesEpoch = -1;
  private readonly compiled = new Map<string, CompiledRule>();

  private constructor(
    private readonly sandbox: LuaSandbox,
    private readonly context: InvocationContext,
  ) {}

  static async create(limits: SandboxLimits): Promise<ScriptWorker> {
    const context = new InvocationContext();
    return new ScriptWorker(await LuaSandbox.create(limits, context), context);
  }

  handle(task: WorkerTask): WorkerAnswer {
    switch (task.kind) {
      case 'compile':
        return this.validate(task);
      case 'start':
        return { ok: true };
      default:
        return this.run(task);
    }
  }

  private validate(task: CompileTask): ValidationResult {
    const outcome = this.sandbox.compile(task);
    if (outcome.ok) {
      this.sandbox.release(outcome.envRef);
      return { ok: true };
    }
    const { script, line, message } = splitPosition(outcome.error);
    if (line === undefined) return { ok: false, error: outcome.error };
    return { ok: false, error: `${script}: line ${line}: ${message}`, line };
  }

  private run(task: RunTask): RunResult | StaleAnswer {
    const taskStarted = performance.now();
    const ctx = this.context;
    if (task.rulesEpoch !== this.rulesEpoch) this.pruneRules(task.liveRuleIds, task.rulesEpoch);
    if (this.lacks(task)) return { stale: true };
    if (task.modelsVersion !== this.modelsVersion) {
      ctx.models = new Map(task.models!.map((m) => [m.uuid, m]));
      this.modelsVersion = task.modelsVersion;
    }
    ctx.readOnly = new Set(task.readOnlyModels);
    ctx.readOnlyPayloads = new Set();
    ctx.ops = new OpPacker(ctx.valuePacker);
    ctx.debugLines = [];
    const watch = task.watch;
    const rules = task.rules.map((r) => this.compiledRule(r, watch));
    const result: RunResult = {
      ops: undefined!,
      errors: [],
      summaries: rules.map(() => ({ invocations: 0, failures: 0, histogram: newHistogram() })),
      debug: ctx.debugLines,
    };
    // One clock reading an invocation: the end of one is the start of the next, unless an error was noted
    // between them (that work is not the next invocation's).
    let started = performance.now();
    const failed = (payload: number, rule: number, message: string, line?: number): void => {
      result.summaries[rule].failures++;
      result.errors.push(line === undefined ? { payload, rule, message } : { payload, rule, message, line });
      started = performance.now();
    };
    const completed = this.sandbox.invokeAll(
      rules.map((rule) => rule.envRef),
      task.payloads,
      {
        starting(payload, rule) {
          ctx.payload = payload;
          ctx.rule = rule;
          ctx.recordsThisInvocation = 0;
          ctx.bytesThisInvocation = 0;
          if (watch !== undefined) Atomics.add(watch, WATCH_STARTED, 1);
        },
        ended(payload, rule, status, message, atMs) {
          const summary = result.summaries[rule];
          summary.invocations++;
          recordDuration(summary.histogram, atMs - started);
          started = atMs;
          if (status === INVOKE_ERROR || status === INVOKE_TIMEOUT) {
            const position = splitPosition(message ?? 'error');
            failed(payload, rule, position.message, position.line);
          }
        },
        skipped(payload, rule) {
          result.summaries[rule].invocations++;
          failed(payload, rule, rules[rule].error ?? 'rule did not compile');
        },
      },
      watch !== undefined,
    );
    if (!completed) {
      // The Lua state holds work a hooked run would not have done: worker.ts ends the thread on this.
      Atomics.store(watch!, WATCH_OVERRAN, 1);
      throw new Error('an invocation without the instruction hook ran past its time limit');
    }
    result.ops = ctx.ops.finish();
    if (ctx.readOnlyPayloads.size > 0) result.readOnlyPayloads = [...ctx.readOnlyPayloads];
    result.elapsedMs = performance.now() - taskStarted;
    return result;
  }

  /** A slim task names models or a rule version this worker does not hold (a fresh worker, or a change). */
  private lacks(task: RunTask): boolean {
    if (task.models === undefined && task.modelsVersion !== this.modelsVersion) return true;
    return task.rules.some((rule) => !hasScripts(rule) && this.compiled.get(rule.uuid)?.version !== rule.version);
  }

  /**
   * The rule's environment, compiled on the first task of each version. A compile that ran into the
   * time or memory limit is not kept: on a less busy machine, or once other rules hold less memory,
   * the same version may compile, so the next task tries again.
   */
  private compiledRule(rule: RuleScripts | RuleVersion, watch: Int32Array | undefined): CompiledRule {
    const cached = this.compiled.get(rule.uuid);
    if (cached && cached.version === rule.version) return cached;
    // lacks() lets a task through only with the scripts of every version not compiled here.
    if (!hasScripts(rule)) throw new Error(`rule ${rule.uuid} version ${rule.version} came without its scripts`);
    const scripts = rule;
    // A compile runs hooked, but the watch counts it: a long one is not an invocation that stalled.
    if (watch !== undefined) Atomics.add(watch, WATCH_STARTED, 1);
    if (cached?.envRef !== undefined) this.sandbox.release(cached.envRef);
    this.compiled.delete(scripts.uuid);
    const outcome = this.sandbox.compile(scripts);
    const entry: CompiledRule = outcome.ok
      ? { version: scripts.version, envRef: outcome.envRef }
      : { version: scripts.version, error: `rule did not compile: ${outcome.error}` };
    if (outcome.ok || !outcome.transient) this.compiled.set(scripts.uuid, entry);
    return entry;
  }

  private pruneRules(liveRuleIds: string[], epoch: number): void {
    const live = new Set(liveRuleIds);
    for (const [uuid, entry] of this.compiled) {
      if (live.has(uuid)) continue;
      if (entry.envRef !== undefined) this.sandbox.release(entry.envRef);
      this.compiled.delete(uuid);
    }
    this.rulesEpoch = epoch;
  }
}
