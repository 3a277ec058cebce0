/**
 * Attribute churn on a published model (contract 13), on the real registry and store: a deleted
 * attribute's column keeps its values and an attribute of the same name and type reads them again, but a
 * column no record holds any value in is not kept, so creating and deleting attributes of ever new
 * names, with records written between, never makes the model refuse a new attribute. Columns that do hold values all count; at the
 * limit the 400 says how many are kept for deleted attributes and what to do.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { ModelRegistry } from '../../src/models/index.js';
import type { Store } from '../../src/store/index.js';
import { openStore } from './helpers.js';

const CYCLES = 1100;
const COLUMNS_MAX = 1024;

let dir: string;
let store: Store;
let registry: ModelRegistry;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-churn-'));
  store = await openStore(join(dir, 'store'));
  registry = await ModelRegistry.open({ dataDir: dir, store });
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const attr = (schemaId: string, name: string) => registry.createAttribute({ schemaId, name, type: 'FLOAT' });

async function publishedModel(): Promise<string> {
  const { uuid } = await registry.create({ name: 'churn' });
  await attr(uuid, 'a');
  await registry.publish(uuid);
  return uuid;
}

async function records(uuid: string, size = 2): Promise<unknown[]> {
  return (await registry.log(uuid).page({ current: 1, size, order: 'asc' })).records;
}

async function storedColumns(uuid: string): Promise<string[]> {
  return JSON.parse(await readFile(join(dir, 'store', uuid, 'FIELDS'), 'utf8')).fields;
}

describe('attribute churn on a published model', () => {
  it(`${CYCLES} create/delete cycles of new names: the next create works, and a deleted attribute re-added reads its old values`, async () => {
    const uuid = await publishedModel();
    const late = await attr(uuid, 'late');
    registry.log(uuid).save({ a: 1, late: 7 });
    await registry.deleteAttribute(late.uuid);
    // A live model: a record is written between the cycles.
    for (let i = 0; i < CYCLES; i++) {
      await registry.deleteAttribute((await attr(uuid, `t${i}`)).uuid);
      registry.log(uuid).save({ a: 100 + i });
    }

    await attr(uuid, 'final');
    await attr(uuid, 'late');
    const expected = [
      { id: 1, create_at: expect.any(Number), a: 1, final: 0, late: 7 },
      { id: 2, create_at: expect.any(Number), a: 100, final: 0, late: 0 },
    ];
    expect(await records(uuid)).toEqual(expected);
    expect(await storedColumns(uuid)).toEqual(['a', 'late', 'final']);

    await store.close();
    store = await openStore(join(dir, 'store'));
    registry = await ModelRegistry.open({ dataDir: dir, store });
    expect(await records(uuid)).toEqual(expected);
  }, 600_000); // a ceiling: 1,100 models.json writes and fsyncs took 61 s at load 11

  it('columns that hold values are all kept; at the limit the 400 says how many and what to do', async () => {
    const uuid = await publishedModel();
    for (let i = 1; i < COLUMNS_MAX; i++) {
      const t = await attr(uuid, `t${i}`);
      registry.log(uuid).save({ a: i, [`t${i}`]: i });
      await registry.deleteAttribute(t.uuid);
    }
    const error = await attr(uuid, 'one_too_many').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toBe(
      `model ${uuid}: at most ${COLUMNS_MAX} stored columns, adding these would make ${COLUMNS_MAX + 1}: ${COLUMNS_MAX - 1} of them keep the ` +
        'values of deleted attributes (contract 13), which come back when an attribute of the same name and type is added again; ' +
        'add one of those back, or fix the model (back to draft: deletes every record and every stored column) and publish it again',
    );
    await attr(uuid, 't5');
    expect(((await records(uuid, 10))[4] as Record<string, unknown>).t5).toBe(5);
  }, 600_000); // a ceiling: 1,100 models.json writes and fsyncs took 61 s at load 11
});
