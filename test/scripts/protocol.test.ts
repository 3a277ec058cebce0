/** The packed form in which a worker hands its records to the main thread. */
import { describe, expect, it } from 'vitest';
import { OpPacker, recordOf, unpackOps } from '../../src/scripts/shared/protocol.js';

describe('OpPacker', () => {
  it('gives back every op in order, with key order, kinds and value types kept', () => {
    const packer = new OpPacker();
    const ops = [
      { payload: 0, rule: 0, modelId: 'A', kind: 'save' as const, record: { temp: 1.5, name: 'x', on: true } },
      { payload: 0, rule: 1, modelId: 'B', kind: 'update' as const, record: { on: false } },
      { payload: 1, rule: 0, modelId: 'A', kind: 'save' as const, record: { temp: 2, name: 'y', on: false } },
      { payload: 1, rule: 1, modelId: 'B', kind: 'update' as const, record: { level: 3, on: true } },
      { payload: 2, rule: 0, modelId: 'A', kind: 'save' as const, record: { name: 'reordered', temp: 0, on: true } },
      { payload: 2, rule: 0, modelId: 'A', kind: 'update' as const, record: {} },
    ];
    for (const op of ops) packer.add(op.payload, op.rule, op.modelId, op.kind, op.record);
    expect(packer.count).toBe(ops.length);
    const back = unpackOps(structuredClone(packer.finish())).map((op) => ({ payload: op.payload, rule: op.rule, modelId: op.modelId, kind: op.kind, record: recordOf(op) }));
    expect(back).toEqual(ops);
    expect(back.map((op) => Object.keys(op.record))).toEqual(ops.map((op) => Object.keys(op.record)));
  });

  it('refuses a packing whose shapes do not cover its values', () => {
    const packer = new OpPacker();
    packer.add(0, 0, 'A', 'save', { temp: 1, on: true });
    const packed = packer.finish();
    expect(() => unpackOps({ ...packed, values: [...packed.values, 3] })).toThrow(/3 values, their shapes 2/);
  });
});
