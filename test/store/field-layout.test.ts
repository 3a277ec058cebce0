/**
 * Stored columns (field-layout.ts): setFields appends a column to FIELDS before it is used; a reopen with
 * any order of known fields reads each value under its own name; a field dropped from the model keeps
 * its column, so its values come back when it returns.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

describe('stored columns', () => {
  it('survive a restart in FIELDS, in order of addition; hidden columns keep their values', async () => {
    const dir = tmpDir();
    let store = await openStore(dir);
    let log = await store.openModel('m', { fields: ['a', 'b'], types: ['FLOAT', 'STRING'] });
    log.save({ a: 1, b: 'x' });
    log.setFields({ fields: ['a', 'c'], types: ['FLOAT', 'BOOL'], defaults: [0, false] });
    log.save({ a: 2, c: true });
    expect(log.latest()).toEqual({ id: 2, create_at: expect.any(Number), a: 2, c: true });
    await log.durable();
    await store.close();
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'm', 'FIELDS'), 'utf8'))).toEqual({ format: 2, fields: ['a', 'b', 'c'], types: ['FLOAT', 'STRING', 'BOOL'] });

    store = await openStore(dir);
    log = await store.openModel('m', { fields: ['c', 'b', 'a'], types: ['BOOL', 'STRING', 'FLOAT'], defaults: [false, '', 0] });
    const page = await log.page({ current: 1, size: 10, order: 'asc' });
    expect(page.records).toEqual([
      { id: 1, create_at: expect.any(Number), c: false, b: 'x', a: 1 },
      { id: 2, create_at: expect.any(Number), c: true, b: '', a: 2 },
    ]);
    await store.close();
  });

  it('aggregates read the stored column of each field, also after a field moved in the model', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('m', { fields: ['a', 'b'], types: ['FLOAT', 'FLOAT'] });
    for (let i = 1; i <= 10; i++) log.save({ a: i, b: 100 + i });
    await log.aggregate({ fromMs: 0, toMs: Date.now() + 1000, intervalMs: 86_400_000 * 365, fields: ['a'] });
    log.setFields({ fields: ['b', 'c'], types: ['FLOAT', 'FLOAT'], defaults: [0, 0] });
    for (let i = 11; i <= 20; i++) log.save({ b: 100 + i, c: 1000 + i });
    const [bucket] = await log.aggregate({ fromMs: 0, toMs: Date.now() + 1000, intervalMs: 86_400_000 * 365, fields: ['b', 'c'] });
    expect(bucket.count).toBe(20);
    expect(bucket.stats[0]).toMatchObject({ min: 101, max: 120 });
    expect(bucket.stats[1]).toMatchObject({ min: 1011, max: 1020 });
    await store.close();
  });
});
