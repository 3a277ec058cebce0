/**
 * A retention change is applied at once by a pass nobody waits for (schema/retention answers first):
 * a pass that fails reaches the operator's log, as the store's own background work does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { ModelRegistry } from '../../src/models/index.js';
import { NodeFileIo } from '../../src/store/base/file-io.js';
import type { Store } from '../../src/store/index.js';
import { openStore, removeTmpDirs, segFiles, sleep, tmpDir } from '../store/helpers.js';

afterEach(removeTmpDirs);

/** Fails every file removal with EIO while `failRemoves` is set: retention cannot delete a segment. */
class RemoveFailingIo extends NodeFileIo {
  failRemoves = false;

  override remove(target: string): Promise<void> {
    if (!this.failRemoves) return super.remove(target);
    return Promise.reject(Object.assign(new Error(`EIO: i/o error, unlink '${target}'`), { code: 'EIO' }));
  }
}

// A ceiling: the background pass is waited for, however long a busy machine makes it take.
async function until(cond: () => boolean, ms = 60_000): Promise<void> {
  for (const end = Date.now() + ms; !cond() && Date.now() < end; ) await sleep(10);
}

describe('setRetention', () => {
  it('logs a failed retention pass with the model and the error', async () => {
    const dir = tmpDir();
    const io = new RemoveFailingIo();
    const warnings: string[] = [];
    let store: Store | undefined;
    try {
      store = await openStore(`${dir}/store`, { segmentBytesMax: 500, durability: 'none' }, { fileIo: io, warn: (m) => warnings.push(m) });
      const registry = await ModelRegistry.open({ dataDir: dir, store });
      const model = await registry.create({ name: 'tank' });
      await registry.createAttribute({ schemaId: model.uuid, name: 'level', label: 'level', type: 'INTEGER', rw: 'R', unit: '', description: '' });
      await registry.publish(model.uuid);
      const log = registry.log(model.uuid);
      for (let i = 1; i <= 40; i++) log.save({ level: i });
      await log.durable();
      expect(segFiles(`${dir}/store/${model.uuid}`).length).toBeGreaterThan(1);
      // A pass started by a seal (no limits yet) would take the place of the one setRetention starts.
      await log.enforceRetention();

      io.failRemoves = true;
      await registry.setRetention(model.uuid, { maxRecords: 5 });
      await until(() => warnings.length > 0);
      expect(warnings).toEqual([
        expect.stringMatching(new RegExp(`^model ${model.uuid}: retention after a retention change failed: EIO: i/o error, unlink '.*seg-0000000001\\.log'$`)),
      ]);
    } finally {
      io.failRemoves = false;
      await store?.close();
    }
  });
});
