/**
 * The records a task produced, packed for the trip from the worker to the main thread.
 *
 * A structured clone of thousands of small `{payload, rule, modelId, kind, record}` objects costs
 * ~1.4 µs per record split between the two threads (every property name is written and read back
 * for every object). Packed, the numbers of each op go in one Int32Array, the record values in one
 * flat array, and the key lists ("shapes") once per distinct list: a save always has every attribute
 * of its model, in model order, so a task usually holds one shape per model.
 */
import type { RecordOp } from './types.js';

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
  /** The last shape used per model and kind: the usual next one. */
  private readonly lastShape = new Map<string, number>();

  get count(): number {
    return this.meta.length / OP_FIELDS;
  }

  add(payload: number, rule: number, modelId: string, kind: 'save' | 'update', record: Record<string, unknown>): void {
    let model = this.modelIndex.get(modelId);
    if (model === undefined) {
      model = this.modelIds.length;
      this.modelIds.push(modelId);
      this.modelIndex.set(modelId, model);
    }
    const kindCode = kind === 'save' ? 0 : 1;
    const shapeKey = `${kindCode}${modelId}`;
    const values = this.values;
    const start = values.length;
    let shape = this.lastShape.get(shapeKey);
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
      this.lastShape.set(shapeKey, shape);
      if (this.shapes[shape].length !== values.length - start) throw new Error('record keys changed while packing');
    }
    this.meta.push(payload, rule, model, kindCode, shape!);
  }

  finish(): PackedOps {
    return { meta: Int32Array.from(this.meta), modelIds: this.modelIds, shapes: this.shapes, values: this.values };
  }
}

export function emptyOps(): PackedOps {
  return { meta: new Int32Array(0), modelIds: [], shapes: [], values: [] };
}

export function unpackOps(packed: PackedOps): RecordOp[] {
  const { meta, modelIds, shapes, values } = packed;
  const ops: RecordOp[] = new Array<RecordOp>(meta.length / OP_FIELDS);
  let v = 0;
  for (let o = 0, m = 0; m < meta.length; o++, m += OP_FIELDS) {
    const keys = shapes[meta[m + 4]];
    const record: Record<string, unknown> = {};
    for (let k = 0; k < keys.length; k++) record[keys[k]] = values[v++];
    ops[o] = { payload: meta[m], rule: meta[m + 1], modelId: modelIds[meta[m + 2]], kind: meta[m + 3] === 0 ? 'save' : 'update', record };
  }
  return ops;
}
