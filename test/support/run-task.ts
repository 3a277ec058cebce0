import { taskPayloads, type RunTask } from '../../src/scripts/shared/protocol.js';

/** A worker task of one rule (`R1`, these Actions) over `payloads`, with no model: for pool and sandbox tests. */
export function oneRuleTask(actions: string, payloads: string[]): RunTask {
  return {
    kind: 'run',
    modelsVersion: 0,
    models: [],
    readOnlyModels: [],
    rulesEpoch: 0,
    liveRuleIds: ['R1'],
    rules: [{ uuid: 'R1', version: 1, actions, success: '', failed: '' }],
    payloads: taskPayloads(payloads),
  };
}
