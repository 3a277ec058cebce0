/**
 * Contract 20: import and restore of a model serialise with that model's management changes. A seeded
 * interleaving (fast-check's scheduler) of an import and a restore, each fed chunk by chunk, with a
 * delete, rename, retention change and attribute add/delete of the same model. Every call either
 * succeeds or fails with a 4xx; the final model is what the successful calls give applied in the order
 * they completed: nothing a successful change did is reverted, and nothing a failed transfer carried shows.
 * Real store and registry in a temp dir. `TRANSFER_INTERLEAVE_RUNS=N` for a longer run, `..._SEED` to repeat.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EdgeError } from '../../src/errors.js';
import { ModelTransfers } from '../../src/models/backup.js';
import { ModelRegistry } from '../../src/models/index.js';
import { openStore } from './helpers.js';

const RUNS = Number(process.env.TRANSFER_INTERLEAVE_RUNS ?? 25);
const SEED = process.env.TRANSFER_INTERLEAVE_SEED === undefined ? undefined : Number(process.env.TRANSFER_INTERLEAVE_SEED);

type Op = 'import' | 'restore' | 'delete' | 'rename' | 'retention' | 'addAttribute' | 'deleteAttribute';

interface Expected {
  exists: boolean;
  name: string;
  maxRecords: number | null;
  attributes: string[];
  records: number;
}

/** Chunks of `text`, each released by the scheduler. */
async function* scheduledChunks(s: fc.Scheduler, text: string, chunks: number, label: string): AsyncGenerator<Uint8Array> {
  const size = Math.ceil(text.length / chunks);
  for (let at = 0; at < text.length; at += size) {
    yield await s.schedule(Promise.resolve(Buffer.from(text.slice(at, at + size))), `${label} chunk ${at / size}`);
  }
}

async function runSchedule(s: fc.Scheduler, ops: Op[]): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'edc-transfer-interleave-'));
  const store = await openStore(join(dir, 'store'));
  try {
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    const uuid = (await registry.create({ name: 'orig' })).uuid;
    await registry.createAttribute({ schemaId: uuid, name: 't', type: 'FLOAT' });
    await registry.publish(uuid);
    const log = registry.log(uuid);
    for (let i = 0; i < 5; i++) log.save({ t: i });
    const transfers = new ModelTransfers(store, registry);
    let backup = '';
    for await (const chunk of transfers.backup(uuid).chunks) backup += chunk;
    const later = Date.now() + 86_400_000;
    const rows = Array.from({ length: 4 }, (_, k) => JSON.stringify({ create_at: later + k, t: k })).join('\n') + '\n';

    const completed: Array<(e: Expected) => void> = [];
    const backupState = (): Expected => ({ exists: true, name: 'orig', maxRecords: null, attributes: ['t'], records: 5 });
    const run = (op: Op): Promise<void> => {
      switch (op) {
        case 'import':
          return transfers.importData(uuid, 'jsonl', scheduledChunks(s, rows, 2, 'import')).then((r) => {
            completed.push((e) => (e.records += r.imported));
          });
        case 'restore':
          return transfers.restore(scheduledChunks(s, backup, 2, 'restore'), { replace: true }).then(() => {
            completed.push((e) => Object.assign(e, backupState()));
          });
        case 'delete':
          return registry.delete(uuid).then(() => {
            completed.push((e) => Object.assign(e, { exists: false }));
          });
        case 'rename':
          return registry.update({ uuid, name: 'renamed' }).then(() => {
            completed.push((e) => (e.name = 'renamed'));
          });
        case 'retention':
          return registry.setRetention(uuid, { maxRecords: 1000 }).then(() => {
            completed.push((e) => (e.maxRecords = 1000));
          });
        case 'addAttribute':
          return registry.createAttribute({ schemaId: uuid, name: 'extra', type: 'INTEGER' }).then(() => {
            completed.push((e) => e.attributes.push('extra'));
          });
        case 'deleteAttribute': {
          const extra = registry.list().find((m) => m.uuid === uuid)?.attributes.find((a) => a.name === 'extra');
          if (extra === undefined) return Promise.resolve();
          return registry.deleteAttribute(extra.uuid).then(() => {
            completed.push((e) => (e.attributes = e.attributes.filter((a) => a !== 'extra')));
          });
        }
      }
    };
    const outcomes = ops.map((op, k) =>
      s
        .schedule(Promise.resolve(), `start ${op} #${k}`)
        .then(() => run(op))
        .catch((err: unknown) => {
          // A refusal is an answer (409 changed meanwhile, 404 deleted, 503 held): never a 500.
          if (!(err instanceof EdgeError) || err.status >= 500 && err.status !== 503) throw err;
        }),
    );
    await s.waitFor(Promise.all(outcomes));

    const expected: Expected = { exists: true, name: 'orig', maxRecords: null, attributes: ['t'], records: 5 };
    for (const apply of completed) apply(expected);
    const model = registry.list().find((m) => m.uuid === uuid);
    expect(model !== undefined, 'the model exists').toBe(expected.exists);
    if (model === undefined) return;
    expect(model.name).toBe(expected.name);
    expect(model.retention?.maxRecords ?? null).toBe(expected.maxRecords);
    expect(model.attributes.map((a) => a.name)).toEqual(expected.attributes);
    expect(registry.log(uuid).stats().total).toBe(expected.records);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

describe('import and restore against management changes of the same model', () => {
  it('nothing a successful change did is reverted, under any interleaving', async () => {
    const op = fc.constantFrom<Op>('import', 'restore', 'delete', 'rename', 'retention', 'addAttribute', 'deleteAttribute');
    await fc.assert(
      fc.asyncProperty(fc.scheduler(), fc.array(op, { minLength: 2, maxLength: 6 }), async (s, ops) => {
        await runSchedule(s, ops);
      }),
      { numRuns: RUNS, ...(SEED === undefined ? {} : { seed: SEED }) },
    );
  }, 600_000);
});
