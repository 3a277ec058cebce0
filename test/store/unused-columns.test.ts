/**
 * Hidden columns no record holds a value in (field-layout.ts withColumnsFor): the next added field takes
 * their place, and a visible column past them moves down; records written while such a column is hidden
 * leave it out; a column a save or an update-last wrote into stays, hidden or not, so no value ever comes
 * back under another field. Checked in FIELDS, in reads, and
 * after a reopen.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ModelLog } from '../../src/store/log/model-log.js';
import { openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

const FLOAT = (names: string[]) => ({ fields: names, types: names.map(() => 'FLOAT'), defaults: names.map(() => -1) });
const storedColumns = (dir: string): string[] => JSON.parse(fs.readFileSync(path.join(dir, 'm', 'FIELDS'), 'utf8')).fields;
const rows = async (log: ModelLog) => (await log.page({ current: 1, size: 10, order: 'asc' })).records.map(({ create_at: _, ...r }) => r);

describe('unused columns', () => {
  it('an unused hidden column is dropped at the next addition; a visible one past it moves down', async () => {
    const dir = tmpDir();
    let store = await openStore(dir);
    let log = await store.openModel('m', FLOAT(['a']));
    log.save({ a: 1 });
    log.setFields(FLOAT(['a', 'h']));
    log.setFields(FLOAT(['a', 'h', 'v']));
    log.setFields(FLOAT(['a', 'v']));
    log.setFields(FLOAT(['a', 'v', 'y']));
    expect(storedColumns(dir)).toEqual(['a', 'v', 'y']);
    log.save({ a: 2, v: 3, y: 4 });
    const expected = [
      { id: 1, a: 1, v: -1, y: -1 },
      { id: 2, a: 2, v: 3, y: 4 },
    ];
    expect(await rows(log)).toEqual(expected);
    await log.durable();
    await store.close();

    store = await openStore(dir);
    log = await store.openModel('m', FLOAT(['a', 'v', 'y']));
    expect(await rows(log)).toEqual(expected);
    await store.close();
  });

  it('records written while an unused column is hidden leave it unused: the next addition drops it', async () => {
    const dir = tmpDir();
    const store = await openStore(dir);
    const log = await store.openModel('m', FLOAT(['a']));
    log.save({ a: 1 });
    log.setFields(FLOAT(['a', 'h']));
    log.setFields(FLOAT(['a']));
    log.save({ a: 2 });
    log.updateLast({ a: 3 });
    log.setFields(FLOAT(['a', 'y']));
    expect(storedColumns(dir)).toEqual(['a', 'y']);
    log.setFields(FLOAT(['a', 'y', 'h']));
    expect(await rows(log)).toEqual([
      { id: 1, a: 1, y: -1, h: -1 },
      { id: 2, a: 3, y: -1, h: -1 },
    ]);
    await store.close();
  });

  it('a column written by save or by update-last stays when hidden, and its values come back', async () => {
    const dir = tmpDir();
    const store = await openStore(dir);
    const log = await store.openModel('m', FLOAT(['a']));
    log.save({ a: 1 });
    log.setFields(FLOAT(['a', 'u']));
    log.updateLast({ u: 5 });
    log.setFields(FLOAT(['a']));
    log.setFields(FLOAT(['a', 's']));
    log.save({ a: 2, s: 6 });
    log.setFields(FLOAT(['a']));
    log.setFields(FLOAT(['a', 'z']));
    expect(storedColumns(dir)).toEqual(['a', 'u', 's', 'z']);
    log.setFields(FLOAT(['a', 'z', 'u', 's']));
    expect(await rows(log)).toEqual([
      { id: 1, a: 1, z: -1, u: 5, s: -1 },
      { id: 2, a: 2, z: -1, u: -1, s: 6 },
    ]);
    await store.close();
  });
});
