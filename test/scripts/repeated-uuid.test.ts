/**
 * rds:Save reads its model uuid with WasmStrings.readRepeated, which keeps the last uuid's text and
 * compares the next one's bytes with it instead of decoding them again. In the real worker, rules that
 * switch between uuids of the same length differing in one byte (first, middle, last), a uuid cut by a
 * NUL, and a non-ASCII one must each reach their own model, or be refused by the name that was read.
 */
import { describe, expect, it } from 'vitest';
import type { DataModel } from '../../src/models/types.js';
import { ScriptWorker } from '../../src/scripts/lua/script-worker.js';
import { taskPayloads, unpackOps, type RunResult, type RunTask } from '../../src/scripts/shared/protocol.js';

const UUIDS = ['model-aaaa-0001-first-of-three-xx', 'model-aaaa-0001-first-of-three-xy', 'zodel-aaaa-0001-first-of-three-xy', 'model-aaab-0001-first-of-three-xy', 'modèl-aaaa-0001-first-of-three-x'];

function model(uuid: string): DataModel {
  return {
    uuid, name: uuid, description: '', published: true, createdAtMs: 0,
    attributes: [{ uuid: `${uuid}-v`, schemaId: uuid, name: 'v', label: 'v', type: 'INTEGER', rw: 'RW', unit: '', description: '', rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 } }],
  };
}

describe('rds:Save model uuids read call after call', () => {
  it('reach the model each names, whatever uuid came before', async () => {
    const worker = (await ScriptWorker.create({ timeoutMs: 1000, memoryMb: 32 })) as unknown as { handle(task: RunTask): RunResult };
    const order = [0, 1, 1, 2, 0, 3, 4, 4, 1, 0];
    const saves = order.map((m, i) => `e = rds:Save(${JSON.stringify(UUIDS[m])}, { v = ${i} }) if e then Debug(e) end`).join(' ');
    // Lua's own escape: a NUL inside the uuid ends it where rds reads it.
    const cut = `e = rds:Save("${UUIDS[1]}\\0tail", { v = 99 }) if e then Debug(e) end e = rds:Save("${UUIDS[1]}", { v = 100 }) if e then Debug(e) end`;
    const rule = { uuid: 'r', version: 1, actions: `Actions = { function(args) local e ${saves} ${cut} return 0 end }`, success: '', failed: '' };
    for (const payloads of [['x'], ['x', 'y']]) {
      const result = worker.handle({ kind: 'run', modelsVersion: 1, models: UUIDS.map(model), readOnlyModels: [], rulesEpoch: 1, liveRuleIds: ['r'], rules: [rule], payloads: taskPayloads(payloads) });
      expect(result.errors).toEqual([]);
      const expected = [...order.map((m) => UUIDS[m]), UUIDS[1], UUIDS[1]];
      expect(unpackOps(result.ops).map((op) => op.modelId)).toEqual(payloads.flatMap(() => expected));
    }
  });
});
