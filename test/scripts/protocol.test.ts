/** The packed form in which a worker hands its records to the main thread. */
import { describe, expect, it } from 'vitest';
import { recordOf } from '../../src/scripts/shared/op-values.js';
import { batchResult, forEachOp, OpPacker, unpackOps, type RecordOp } from '../../src/scripts/shared/protocol.js';
import { ValuePacker } from '../../src/store/format/value-pack.js';

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

  it('packs each record as the msgpack array of its values, in key order', () => {
    const packer = new OpPacker();
    packer.add(0, 0, 'A', 'save', { temp: 1.5, on: true, name: 'x' });
    packer.addValues(0, 1, 'A', 'save', ['temp', 'on', 'name'], [2, null, 'yy']);
    const [first, second] = unpackOps(structuredClone(packer.finish()));
    expect(first.bytes.subarray(first.start, first.end)).toEqual(Buffer.from([0x93, 0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xc3, 0xa1, 0x78]));
    expect(second.bytes.subarray(second.start, second.end)).toEqual(Buffer.from([0x93, 0x02, 0xc0, 0xa2, 0x79, 0x79]));
    expect(second.keys).toBe(first.keys);
  });

  it('starts each task with an empty value buffer, even after a task that did not finish', () => {
    const shared = new ValuePacker();
    new OpPacker(shared).add(0, 0, 'A', 'save', { temp: 1 });
    const next = new OpPacker(shared);
    next.add(0, 0, 'A', 'save', { temp: 2 });
    const [op] = unpackOps(structuredClone(next.finish()));
    expect(op.bytes).toEqual(Buffer.from([0x91, 0x02]));
  });

  it('refuses a packing whose ops do not cover its value bytes', () => {
    const packer = new OpPacker();
    packer.add(0, 0, 'A', 'save', { temp: 1, on: true });
    const packed = packer.finish();
    expect(() => unpackOps({ ...packed, values: Uint8Array.from([...packed.values, 3]) })).toThrow(/4 value bytes, their ops 3/);
    expect(() => unpackOps({ ...packed, values: packed.values.subarray(0, 2) })).toThrow(/ends at byte 3, after 0 and within 2/);
  });

  it('is read op by op into one object, and a damaged packing is refused before any op is visited', () => {
    const packer = new OpPacker();
    packer.add(0, 0, 'A', 'save', { temp: 1 });
    packer.add(0, 1, 'B', 'update', { on: true });
    packer.add(2, 0, 'A', 'save', { temp: 3, on: false });
    const packed = structuredClone(packer.finish());
    const seen: RecordOp[] = [];
    const copies: RecordOp[] = [];
    forEachOp(packed, (op) => {
      seen.push(op);
      copies.push({ ...op });
    });
    expect(new Set(seen).size).toBe(1);
    expect(copies).toEqual(unpackOps(packed));
    expect(copies.map((op) => [op.payload, op.rule, op.modelId, op.kind, recordOf(op)])).toEqual([
      [0, 0, 'A', 'save', { temp: 1 }],
      [0, 1, 'B', 'update', { on: true }],
      [2, 0, 'A', 'save', { temp: 3, on: false }],
    ]);
    const damaged = { ...packed, values: packed.values.subarray(0, packed.values.length - 1) };
    let visited = 0;
    expect(() => forEachOp(damaged, () => visited++)).toThrow(/ends at byte/);
    expect(visited).toBe(0);
    expect(() => batchResult({ ops: damaged, errors: [], summaries: [], debug: [] })).toThrow(/ends at byte/);
    const list = unpackOps(packed);
    const fromList: RecordOp[] = [];
    forEachOp(list, (op) => fromList.push(op));
    expect(fromList).toEqual(list);
  });
});
