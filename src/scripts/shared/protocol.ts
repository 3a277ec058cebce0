/**
 * The messages between the main thread and the script workers: the tasks the pool sends (`RunTask`,
 * `CompileTask`, `StartTask`), what a run sends back (`RunResult`), and the packing of its records.
 *
 * Records travel packed. A structured clone of thousands of small `{payload, rule, modelId, kind,
 * record}` objects costs ~1.4 µs per record split between the two threads (every property name is
 * written and read back for every object). Packed, the numbers of each op go in one Int32Array, the key
 * lists ("shapes") once per distinct list (a save always has every attribute of its model, in model
 * order, so a task usually holds one shape per model), and each record's values as the msgpack array a
 * frame's payload holds (store/format/value-pack.ts), all in one buffer: where the model's stored fields
 * are its attributes in order, the log appends those bytes as they are (ModelLog.savePacked).
 */
import type { DataModel } from '../../models/types.js';
import { ValuePacker } from '../../store/format/value-pack.js';
import type { ValidationResult } from './types.js';

/** The compiled form a worker caches per rule, replaced when `version` changes. */
export interface RuleScripts extends RuleVersion {
  actions: string;
  success: string;
  failed: string;
}

/** A rule named by its version only, in a slim task (slimTask): the worker compiled it already. */
export interface RuleVersion {
  uuid: string;
  version: number;
}

export interface RunTask {
  kind: 'run';
  /** Bumped by the main thread whenever a model changes; workers re-index `models` only then. */
  modelsVersion: number;
  /** Absent in a slim task: the worker holds `modelsVersion`'s models already, or answers StaleAnswer. */
  models?: DataModel[];
  /** Models whose log refuses writes: `rds:*` answers the read-only error string for them at once. */
  readOnlyModels: string[];
  /** Bumped when rules are created, replaced or deleted; workers drop compiled rules not in `liveRuleIds`. */
  rulesEpoch: number;
  liveRuleIds: string[];
  /** Each rule's scripts, or in a slim task its version only. */
  rules: Array<RuleScripts | RuleVersion>;
  payloads: TaskPayloads;
  /**
   * Present: run the invocations without Lua's instruction hook, watched from the main thread through
   * this cell (a SharedArrayBuffer's Int32Array, see watchCell). Absent: hooked, as compiles always are.
   */
  watch?: Int32Array;
}

/** watch[WATCH_STARTED]: invocations and compiles the worker has started in the task; it only grows. */
export const WATCH_STARTED = 0;
/** watch[WATCH_OVERRAN] = 1: an invocation ended past its deadline, and the worker ended itself. */
export const WATCH_OVERRAN = 1;

export function watchCell(): Int32Array {
  return new Int32Array(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT));
}

/**
 * A task's payloads as one buffer: payload i is bytes[ends[i - 1] (0 for the first), ends[i]), UTF-8.
 * One typed array crosses to the worker where an array of strings was decoded on the main thread, cloned
 * string by string and encoded again into wasm memory (docs/scripts-internals.md, "Main thread → worker").
 */
export interface TaskPayloads {
  bytes: Uint8Array;
  ends: Int32Array;
}

/** The payloads of `texts`, each encoded as Buffer.write encodes it (a lone surrogate becomes U+FFFD). */
export function taskPayloads(texts: readonly string[]): TaskPayloads {
  return packPayloads(
    texts.length,
    (i) => Buffer.byteLength(texts[i], 'utf8'),
    (bytes, i, at) => bytes.write(texts[i], at, 'utf8'),
  );
}

/** Lays out `count` payloads of `sizeOf(i)` bytes each, which `write` puts at `at`. */
export function packPayloads(count: number, sizeOf: (i: number) => number, write: (bytes: Buffer, i: number, at: number) => void): TaskPayloads {
  const ends = new Int32Array(count);
  let total = 0;
  for (let i = 0; i < count; i++) {
    total += sizeOf(i);
    ends[i] = total;
  }
  // Not from Buffer's shared pool: a clone of a pooled slice would copy the whole pool.
  const bytes = Buffer.allocUnsafeSlow(total);
  for (let i = 0; i < count; i++) write(bytes, i, i === 0 ? 0 : ends[i - 1]);
  return { bytes, ends };
}

/** Payload `index` of `payloads` alone, copied (a batch run again pair by pair). */
export function onePayload(payloads: TaskPayloads, index: number): TaskPayloads {
  const start = index === 0 ? 0 : payloads.ends[index - 1];
  const end = payloads.ends[index];
  return { bytes: payloads.bytes.slice(start, end), ends: Int32Array.of(end - start) };
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
export type WorkerAnswer = RunResult | ValidationResult | StaleAnswer;

/**
 * A slim task's answer from a worker that lacks its models' version or a rule's compiled version (a
 * fresh worker, or a change since its last task): nothing ran, and the whole task goes again.
 */
export interface StaleAnswer {
  stale: true;
}

export function isStale(answer: WorkerAnswer): answer is StaleAnswer {
  return (answer as Partial<StaleAnswer>).stale === true;
}

export function hasScripts(rule: RuleScripts | RuleVersion): rule is RuleScripts {
  return (rule as Partial<RuleScripts>).actions !== undefined;
}

/**
 * The task without what a worker keeps from one task to the next: the model definitions and the rules'
 * scripts. A structured clone of those cost 30 µs a task with one model of five attributes and the RHILEX
 * sample rule, 190 µs with ten models and 2.3 ms with a hundred, on each task of every input.
 */
export function slimTask(task: RunTask): RunTask {
  return {
    kind: 'run',
    modelsVersion: task.modelsVersion,
    readOnlyModels: task.readOnlyModels,
    rulesEpoch: task.rulesEpoch,
    liveRuleIds: task.liveRuleIds,
    rules: task.rules.map(({ uuid, version }) => ({ uuid, version })),
    payloads: task.payloads,
  };
}

/**
 * A record a rule stored, as unpacked on the main thread: its values stay packed in the batch's buffer
 * (no object per record: the log appends the bytes, ModelLog.savePacked).
 */
export interface RecordOp {
  payload: number;
  rule: number;
  modelId: string;
  kind: 'save' | 'update';
  /** The record's keys in its order, one array shared by every op of the same shape. */
  keys: readonly string[];
  /** The batch's buffer: this record's values are the msgpack array bytes[start, end), in the order of `keys`. */
  bytes: Buffer;
  start: number;
  end: number;
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

/**
 * A RunResult on the main thread. Its records stay packed as the worker sent them; a batch run again pair
 * by pair collects its ops as objects instead. forEachOp reads either.
 */
export type BatchResult = Omit<RunResult, 'ops'> & { ops: BatchOps };
export type BatchOps = PackedOps | RecordOp[];

/** The worker's result as a batch's, once its packed ops are checked (checkPackedOps): throws for damaged ones. */
export function batchResult(result: RunResult): BatchResult {
  checkPackedOps(result.ops);
  return result;
}

// ---- packing of the RecordOps ----

export interface PackedOps {
  /** OP_FIELDS per op: payload, rule, model (index into modelIds), kind (0 save, 1 update), shape, end of its values in `values`. */
  meta: Int32Array;
  modelIds: string[];
  /** Key lists, in the order of their values. */
  shapes: string[][];
  /** Each op's values, one msgpack array after the other (ValuePacker). */
  values: Uint8Array;
}

const OP_FIELDS = 6;

export class OpPacker {
  private meta: number[] = [];
  private shapes: string[][] = [];
  private modelIds: string[] = [];
  private readonly modelIndex = new Map<string, number>();
  /** The last shape used per model, for saves and for updates: the usual next one. */
  private readonly lastShape = [new Map<string, number>(), new Map<string, number>()];

  /** `packer` may be shared by the packers of one thread's tasks, one at a time: each starts it empty. */
  constructor(private readonly packer = new ValuePacker()) {
    packer.clear();
  }

  get count(): number {
    return this.meta.length / OP_FIELDS;
  }

  add(payload: number, rule: number, modelId: string, kind: 'save' | 'update', record: Record<string, unknown>): void {
    const model = this.modelNumber(modelId);
    const kindCode = kind === 'save' ? 0 : 1;
    const packer = this.packer;
    let shape = this.lastShape[kindCode].get(modelId);
    let keys = shape === undefined ? undefined : this.shapes[shape];
    let count = 0;
    for (const key in record) {
      if (keys !== undefined && keys[count] !== key) keys = undefined;
      count++;
    }
    packer.arrayHeader(count);
    for (const key in record) packer.value(record[key]);
    if (keys === undefined || keys.length !== count) {
      shape = this.shapes.length;
      this.shapes.push(Object.keys(record));
      this.lastShape[kindCode].set(modelId, shape);
      if (this.shapes[shape].length !== count) throw new Error('record keys changed while packing');
    }
    this.meta.push(payload, rule, model, kindCode, shape!, packer.length);
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
    const packer = this.packer;
    packer.arrayHeader(keys.length);
    for (let i = 0; i < keys.length; i++) packer.value(values[i]);
    this.meta.push(payload, rule, model, kindCode, shape, packer.length);
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
    return { meta: Int32Array.from(this.meta), modelIds: this.modelIds, shapes: this.shapes, values: this.packer.take() };
  }
}

function sameKeys(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Calls `visit` with each op in order. For packed ops that is one object, refilled for each op: valid only
 * during its call, so that a batch makes no object per record on the main thread. Throws for ops whose
 * value bytes do not add up (before visiting any op: nothing of a damaged batch is applied).
 */
export function forEachOp(ops: BatchOps, visit: (op: RecordOp) => void): void {
  if (Array.isArray(ops)) {
    for (const op of ops) visit(op);
    return;
  }
  const { meta, modelIds, shapes } = ops;
  // A structured clone gives a Uint8Array: a Buffer over the same memory copies ranges into the write buffer.
  const bytes = Buffer.from(ops.values.buffer, ops.values.byteOffset, ops.values.byteLength);
  checkPackedOps(ops);
  const op: RecordOp = { payload: 0, rule: 0, modelId: '', kind: 'save', keys: [], bytes, start: 0, end: 0 };
  let start = 0;
  for (let m = 0; m < meta.length; m += OP_FIELDS) {
    op.payload = meta[m];
    op.rule = meta[m + 1];
    op.modelId = modelIds[meta[m + 2]];
    op.kind = meta[m + 3] === 0 ? 'save' : 'update';
    op.keys = shapes[meta[m + 4]];
    op.start = start;
    op.end = meta[m + 5];
    start = op.end;
    visit(op);
  }
}

/** Throws unless each op's values end after the last one's and the last ends at the end of the value bytes. */
export function checkPackedOps(ops: PackedOps): void {
  const { meta } = ops;
  const valueBytes = ops.values.byteLength;
  let start = 0;
  for (let o = 0, m = 0; m < meta.length; o++, m += OP_FIELDS) {
    const end = meta[m + 5];
    if (end <= start || end > valueBytes) throw new Error(`packed op ${o} ends at byte ${end}, after ${start} and within ${valueBytes}`);
    start = end;
  }
  if (start !== valueBytes) throw new Error(`packed ops hold ${valueBytes} value bytes, their ops ${start}`);
}

/** The ops as objects of their own (tests, and a dry run's few). */
export function unpackOps(ops: BatchOps): RecordOp[] {
  const list: RecordOp[] = [];
  forEachOp(ops, (op) => list.push({ ...op }));
  return list;
}
