/**
 * A metadata write that fails (here: models.json and rules.json turned into directories, so the rename
 * fails; as root, permissions cannot make a write fail) answers MetadataWriteError, a 503 naming the file,
 * leaves memory and disk as they were, and leaves no temp file behind. Real files, real engine.
 */
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ModelRegistry, modelsFilePath } from '../../src/models/index.js';
import { MetadataWriteError } from '../../src/errors.js';
import { openStore } from './helpers.js';
import { openHarness, type Harness } from '../scripts/helpers.js';

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanup.splice(0)) await c();
});

const temps = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((n) => n.endsWith('.tmp'));

describe('metadata writes that fail', () => {
  it('models.json: 503 naming the file, the model list unchanged, no temp file; the next write works', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'edc-meta-'));
    const store = await openStore(join(dir, 'store'));
    cleanup.push(async () => {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    });
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    await registry.create({ name: 'a' });
    const file = modelsFilePath(dir);
    await rm(file);
    await mkdir(file);
    const err = await registry.create({ name: 'b' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MetadataWriteError);
    expect((err as MetadataWriteError).status).toBe(503);
    expect((err as Error).message).toContain(`could not write ${file}`);
    expect(registry.list().map((m) => m.name)).toEqual(['a']);
    expect(await temps(dir)).toEqual([]);
    await rm(file, { recursive: true });
    await registry.create({ name: 'c' });
    expect(registry.list().map((m) => m.name)).toEqual(['a', 'c']);
    const reopened = await ModelRegistry.open({ dataDir: dir, store });
    expect(reopened.list().map((m) => m.name)).toEqual(['a', 'c']);
  });

  it('rules.json: a rule create that could not be written does not exist', async () => {
    const h: Harness = await openHarness({ workers: 1 });
    cleanup.push(() => h.close());
    const { inend } = await h.engine.createInend({ name: 'in', type: 'HTTP' });
    const rulesFile = join(h.dir, 'rules.json');
    await rm(rulesFile, { force: true });
    await mkdir(rulesFile);
    const err = await h.engine.createRule({ name: 'r', fromSource: [inend.uuid], actions: 'Actions = { function(a) return true, a end }' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MetadataWriteError);
    expect(h.engine.listRules()).toEqual([]);
    expect(await temps(h.dir)).toEqual([]);
  });
});
