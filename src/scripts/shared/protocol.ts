/**
 * The messages between the main thread and the script workers: the tasks the pool sends (`RunTask`,
 * `CompileTask`, `StartTask`), what a run sends back (`RunResult`), and the packing of its records.
 *
 * Records travel packed. A structured clone of thousands of small `{payload, rule, modelId, kind,
 * record}` objects costs ~1.4 µs per record split between the two threads (every property name is
 * written and read back for every object). Packed, the numbers of each op go in one Int32Array, the
 * record values in one flat array, and the key lists ("shapes") once per distinct list: a save always
 * has every attribute of its model, in model order, so a task usually holds one shape per model.
 */
import type { DataModel } from '../../models/types.js';
import type { ValidationResult } from './types.js';

/** The compiled form a worker caches per rule, replaced when `version` changes. */
export interface RuleScripts {
  uuid: string;
  version: number;
  actions: string;
  success: string;
  failed: string;
}

export interface RunTask {
  kind: 'run';
  /** Bumped by the main thread whenever a model changes; workers re-index `models` only then. */
  modelsVersion: number;
  models: DataModel[];
  /** Models whose log refuses writes: `rds:*` answers the read-only error string for them at once. */
  readOnlyModels: string[];
  /** Bumped when rules are created, replaced or deleted; workers drop compiled rules not in `liveRuleIds`. */
  rulesEpoch: number;
  liveRuleIds: string[];
  rules: RuleScripts[];
  payloads: string[];
}

/** Answered with a ValidationResult. */
export interface CompileTask {
  kind: 'compile';
  actions: string;
  success: string;
  failed: string;
}

/** Answered `{ ok: true }` once the worker's sandbox is ready: how the pool waits out a cold start. */
export interface StartTask {
  kind: 'start';
}

export type WorkerTask = RunTask | CompileTask | StartTask;
export type WorkerAnswer = RunResult | ValidationResult;

/**
 * A record a rule stored, as unpacked on the main thread: its values stay in the batch's flat array (no
 * object per record: the log takes keys and values as they are, ModelLog.saveValues).
 */
export interface RecordOp {
  payload: number;
  rule: number;
  modelId: string;
  kind: 'save' | 'update';
  /** The record's keys in its order, one array shared by every op of the same shape. */
  keys: readonly string[];
  /** The batch's values: this record's are values[at] .. values[at + keys.length - 1]. */
  values: readonly unknown[];
  at: number;
}

/** The record of `op` as an object, keys in its order (updates, dry runs). */
export function recordOf(op: Pick<RecordOp, 'keys' | 'values' | 'at'>): Record<string, unknown> {
  const record: Record<string, unknown> = {};
  for (let k = 0; k < op.keys.length; k++) record[op.keys[k]] = op.values[op.at + k];
  return record;
}

export interface InvocationError {
  payload: number;
  rule: number;
  message: string;
  line?: number;
}

/** Per rule of a task: counters and a duration histogram (bucket counts, see stats.ts). */
export interface RuleRunSummary {
  invocations: number;
  failures: number;
  histogram: number[];
}

export interface RunResult {
  /** The RecordOps, packed (OpPacker). */
  ops: PackedOps;
  errors: InvocationError[];
  summaries: RuleRunSummary[];
  debug: Array<{ rule: number; message: string }>;
  /** Time the worker spent on the task; sizes the next batches. */
  elapsedMs?: number;
  /** Payloads for which rds refused a record because the model's store was read-only. */
  readOnlyPayloads?: number[];
}

/** A RunResult on the main thread, its records unpacked. */
export type BatchResult = Omit<RunResult, 'ops'> & { ops: RecordOp[] };

export function unpackResult(result: RunResult): BatchResult {
  return { ...result, ops: unpackOps(result.ops) };
}

// ---- packing of the RecordOps ----

export interface PackedOps {
  /** OP_FIELDS per op: payload, rule, model (index into modelIds), kind (0 save, 1 update), shape. */
  meta: Int32Array;
  modelIds: string[];
  /** Key lists, in the order of their values. */
  shapes: string[][];
  values: unknown[];
}

const OP_FIELDS = 5;

export class OpPacker {
  private meta: number[] = [];
  private values: unknown[] = [];
  private shapes: string[][] = [];
  private modelIds: string[] = [];
  private readonly modelIndex = new Map<string, number>();
  /** The last shape used per model, for saves and for updates: the usual next one. */
  private readonly lastShape = [new Map<string, number>(), new Map<string, number>()];

  get count(): number {
    return this.meta.length / OP_FIELDS;
  }

  add(payload: number, rule: number, modelId: string, kind: 'save' | 'update', record: Record<string, unknown>): void {
    const model = this.modelNumber(modelId);
    const kindCode = kind === 'save' ? 0 : 1;
    const values = this.values;
    const start = values.length;
    let shape = this.lastShape[kindCode].get(modelId);
    let keys = shape === undefined ? undefined : this.shapes[shape];
    let i = 0;
    for (const key in record) {
      if (keys !== undefined && keys[i] !== key) keys = undefined;
      values.push(record[key]);
      i++;
    }
    if (keys === undefined || keys.length !== i) {
      shape = this.shapes.length;
      this.shapes.push(Object.keys(record));
      this.lastShape[kindCode].set(modelId, shape);
      if (this.shapes[shape].length !== values.length - start) throw new Error('record keys changed while packing');
    }
    this.meta.push(payload, rule, model, kindCode, shape!);
  }

  /** add() of the record whose keys are `keys` and values values[0 .. keys.length), the shape's array kept as given. */
  addValues(payload: number, rule: number, modelId: string, kind: 'save' | 'update', keys: readonly string[], values: readonly unknown[]): void {
    const model = this.modelNumber(modelId);
    const kindCode = kind === 'save' ? 0 : 1;
    let shape = this.lastShape[kindCode].get(modelId);
    if (shape === undefined || !sameKeys(this.shapes[shape], keys)) {
      shape = this.shapes.length;
      this.shapes.push(keys as string[]);
      this.lastShape[kindCode].set(modelId, shape);
    }
    for (let i = 0; i < keys.length; i++) this.values.push(values[i]);
    this.meta.push(payload, rule, model, kindCode, shape);
  }

  /** The model's index in modelIds, added on its first op. */
  private modelNumber(modelId: string): number {
    let model = this.modelIndex.get(modelId);
    if (model === undefined) {
      model = this.modelIds.length;
      this.modelIds.push(modelId);
      this.modelIndex.set(modelId, model);
    }
    return model;
  }

  finish(): PackedOps {
    return { meta: Int32Array.from(this.meta), modelIds: this.modelIds, shapes: this.shapes, values: this.values };
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

export function unpackOps(packed: PackedOps): RecordOp[] {
  const { meta, modelIds, shapes, values } = packed;
  const ops: RecordOp[] = new Array<RecordOp>(meta.length / OP_FIELDS);
  let at = 0;
  for (let o = 0, m = 0; m < meta.length; o++, m += OP_FIELDS) {
    const keys = shapes[meta[m + 4]];
    ops[o] = { payload: meta[m], rule: meta[m + 1], modelId: modelIds[meta[m + 2]], kind: meta[m + 3] === 0 ? 'save' : 'update', keys, values, at };
    at += keys.length;
  }
  if (at !== values.length) throw new Error(`packed ops hold ${values.length} values, their shapes ${at}`);
  return ops;
}
