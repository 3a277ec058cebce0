import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ATTRIBUTES_MAX, ModelRegistry, modelsFilePath } from '../../src/models/index.js';
import type { DataModel } from '../../src/models/types.js';
import type { Store } from '../../src/store/index.js';
import { openStore } from './helpers.js';

let dir: string;
let store: Store;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-persist-'));
  store = await openStore(join(dir, 'store'));
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const open = () => ModelRegistry.open({ dataDir: dir, store });
const exists = (path: string) => stat(path).then(() => true, () => false);
const readState = async () => JSON.parse(await readFile(modelsFilePath(dir), 'utf8'));

/** Ends the store like kill -9 and starts a new one on the same directory. */
async function crashAndRestart(): Promise<void> {
  await store.abandon();
  store = await openStore(join(dir, 'store'));
}

/** A published model `m` with attribute `x` and three records. */
async function publishedWithRecords(registry: ModelRegistry): Promise<DataModel> {
  const m = await registry.create({ name: 'm' });
  await registry.createAttribute({ schemaId: m.uuid, name: 'x', type: 'FLOAT' });
  await registry.publish(m.uuid);
  const log = registry.log(m.uuid);
  for (const x of [1, 2, 3]) log.save({ x });
  await log.durable();
  return registry.get(m.uuid);
}

describe('models.json', () => {
  it('everything survives a restart, and published models get their log and records back', async () => {
    const first = await open();
    const m = await publishedWithRecords(first);
    await first.applyTemplate((await first.create({ name: 'draft' })).uuid, 'GPS_TRACKER');

    await store.close();
    store = await openStore(join(dir, 'store'));
    const second = await open();
    expect(second.list()).toEqual(first.list());
    expect(second.log(m.uuid).fields).toEqual(['x']);
    expect(second.log(m.uuid).stats().total).toBe(3);
    expect(await readState()).toMatchObject({ format: 1, pendingDrops: [] });
  });

  it('concurrent changes are serialised: none is lost', async () => {
    const registry = await open();
    const m = await registry.create({ name: 'm' });
    const names = Array.from({ length: 40 }, (_, i) => `a${i}`);
    const results = await Promise.allSettled([
      ...names.map((name) => registry.createAttribute({ schemaId: m.uuid, name, type: 'INTEGER' })),
      registry.createAttribute({ schemaId: m.uuid, name: 'A0', type: 'INTEGER' }),
      registry.publish(m.uuid),
      registry.createAttribute({ schemaId: m.uuid, name: 'late', type: 'INTEGER' }),
    ]);
    // The clash is refused; the attribute added after publish is a new stored column (contract 13).
    expect(results.map((r) => r.status).slice(-4)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(registry.listAttributes(m.uuid).map((a) => a.name)).toEqual([...names, 'late']);
    expect(registry.log(m.uuid).fields).toEqual([...names, 'late']);
    const reopened = await open();
    expect(reopened.listAttributes(m.uuid).map((a) => a.name)).toEqual([...names, 'late']);
  });

  it('a failed write leaves memory unchanged and the call fails', async () => {
    const registry = await open();
    const m = await registry.create({ name: 'm' });
    const before = await readFile(modelsFilePath(dir), 'utf8');
    // A non-empty directory in place of models.json makes the rename fail.
    await rm(modelsFilePath(dir));
    await mkdir(join(modelsFilePath(dir), 'blocker'), { recursive: true });
    await expect(registry.createAttribute({ schemaId: m.uuid, name: 'x', type: 'BOOL' })).rejects.toThrow();
    expect(registry.listAttributes(m.uuid)).toEqual([]);
    await rm(modelsFilePath(dir), { recursive: true });
    await writeFile(modelsFilePath(dir), before);
    await registry.createAttribute({ schemaId: m.uuid, name: 'x', type: 'BOOL' });
    expect((await open()).listAttributes(m.uuid)).toHaveLength(1);
  });

  it('a temp file left by a crash is ignored', async () => {
    const registry = await open();
    await registry.create({ name: 'm' });
    await writeFile(join(dir, '.models.json.1234.5678.tmp'), '{"format":1,"mod');
    const reopened = await open();
    expect(reopened.list()).toHaveLength(1);
    await reopened.create({ name: 'n' });
    expect((await open()).list()).toHaveLength(2);
  });

  it('a model holds at most ATTRIBUTES_MAX attributes (the store\'s field limit)', async () => {
    const registry = await open();
    const m = await registry.createAttribute({ schemaId: (await registry.create({ name: 'm' })).uuid, name: 'a0', type: 'BOOL' });
    const state = await readState();
    const template = state.models[0].attributes[0];
    state.models[0].attributes = Array.from({ length: ATTRIBUTES_MAX }, (_, i) => ({
      ...template, uuid: `PROPER${String(i).padStart(8, '2').replace(/[01]/g, '9')}`, name: `a${i}`,
    }));
    await writeFile(modelsFilePath(dir), JSON.stringify(state));
    const full = await open();
    await expect(full.createAttribute({ schemaId: m.schemaId, name: 'more', type: 'BOOL' })).rejects.toThrow(
      `model m (${m.schemaId}) can hold at most 1024 attributes (has 1024, adding 1)`,
    );
    await full.publish(m.schemaId);
    expect(full.log(m.schemaId).fields).toHaveLength(ATTRIBUTES_MAX);
  });

  it('a damaged models.json stops the open instead of losing the models', async () => {
    await writeFile(modelsFilePath(dir), '{"format":1,"models":[');
    await expect(open()).rejects.toThrow(/models.json is not valid JSON/);
    await writeFile(modelsFilePath(dir), '{"models":{}}');
    await expect(open()).rejects.toThrow(/not a format 1 models file/);
  });
});

describe('crash-safe delete and fix', () => {
  it('a delete interrupted after its first metadata write finishes at the next open', async () => {
    const registry = await open();
    const m = await publishedWithRecords(registry);
    // The state delete writes before dropping the data; then the process dies.
    const state = await readState();
    await writeFile(modelsFilePath(dir), JSON.stringify({ ...state, models: [], pendingDrops: [m.uuid] }));
    await crashAndRestart();
    expect(await exists(join(dir, 'store', m.uuid))).toBe(true);

    const reopened = await open();
    expect(reopened.list()).toEqual([]);
    expect(await exists(join(dir, 'store', m.uuid))).toBe(false);
    expect((await readState()).pendingDrops).toEqual([]);
    // Finishing is idempotent: a second open with the same (already dropped) id is fine.
    await writeFile(modelsFilePath(dir), JSON.stringify({ ...state, models: [], pendingDrops: [m.uuid] }));
    expect((await open()).list()).toEqual([]);
  });

  it('a fix interrupted before the drop ends as an empty draft at the next open', async () => {
    const registry = await open();
    const m = await publishedWithRecords(registry);
    const state = await readState();
    const draft = { ...state.models[0], published: false };
    await writeFile(modelsFilePath(dir), JSON.stringify({ ...state, models: [draft], pendingDrops: [m.uuid] }));
    await crashAndRestart();

    const reopened = await open();
    expect(reopened.get(m.uuid).published).toBe(false);
    expect(await exists(join(dir, 'store', m.uuid))).toBe(false);
    await reopened.publish(m.uuid);
    expect(reopened.log(m.uuid).stats().total).toBe(0);
  });

  it('publish starts from empty data even when a crashed draft left some', async () => {
    const registry = await open();
    const m = await publishedWithRecords(registry);
    // Metadata says draft without a pending drop (as after a crash between writes of an older version).
    const state = await readState();
    await writeFile(modelsFilePath(dir), JSON.stringify({ ...state, models: [{ ...state.models[0], published: false }] }));
    await crashAndRestart();
    const reopened = await open();
    await reopened.publish(m.uuid);
    expect(reopened.log(m.uuid).stats().total).toBe(0);
  });

  it('a model id waiting to be dropped is never reused', async () => {
    await writeFile(modelsFilePath(dir), JSON.stringify({ format: 1, models: [], pendingDrops: ['SCHEMA22222222'] }));
    await rm(join(dir, 'store'), { recursive: true, force: true });
    const registry = await open();
    expect((await readState()).pendingDrops).toEqual([]);
    expect((await registry.create({ name: 'm' })).uuid).not.toBe('SCHEMA22222222');
  });
});
