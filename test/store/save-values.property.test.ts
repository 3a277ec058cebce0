/**
 * ModelLog.saveValues (how the rules' batches store records: keys and a slice of the batch's values) must
 * store exactly what save() stores for the object of those keys and values: for any keys (the model's in
 * any order, some missing, unknown ones, a deleted attribute's), any values (nulls, undefined), at any
 * offset of the source array, and after the fields changed (a deleted and re-added attribute).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { FIELDS, openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

const RUNS = Number(process.env.SAVE_VALUES_RUNS ?? 60);
const key = fc.constantFrom(...FIELDS, 'gone', 'unknown', 'constructor');
const value = fc.oneof(fc.double(), fc.integer(), fc.string({ maxLength: 8 }), fc.boolean(), fc.constant(null), fc.constant(undefined));
const recordArb = fc.uniqueArray(key, { maxLength: 9 }).chain((keys) => fc.tuple(fc.constant(keys), fc.array(value, { minLength: keys.length, maxLength: keys.length })));

describe('ModelLog.saveValues', () => {
  it('stores what save() stores for the same record', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 6 }), fc.nat(5), fc.boolean(), async (records, offset, changeFields) => {
        const store = await openStore(tmpDir());
        try {
          // Defaults tell a column left "not held" (reads the default) from one given null.
          const fields = [...FIELDS, 'gone'];
          const defaults = fields.map((f) => `default-${f}`);
          const byObject = await store.openModel('a', { fields, defaults });
          const bySlice = await store.openModel('b', { fields, defaults });
          if (changeFields) {
            for (const log of [byObject, bySlice]) {
              log.setFields({ fields: [...FIELDS], defaults: defaults.slice(0, -1) });
              log.setFields({ fields: [...FIELDS, 'gone'], defaults });
            }
          }
          for (const [keys, values] of records) {
            const source = [...Array.from({ length: offset }, () => 'before'), ...values, 'after'];
            const record: Record<string, unknown> = {};
            keys.forEach((k, i) => (record[k] = values[i]));
            byObject.save(record);
            bySlice.saveValues(keys, source, offset);
          }
          const read = async (log: typeof byObject) => (await log.page({ current: 1, size: 100, order: 'asc' })).records.map(({ create_at: _t, ...r }) => r);
          expect(await read(bySlice)).toEqual(await read(byObject));
        } finally {
          await store.close();
        }
      }),
      { numRuns: RUNS },
    );
  });
});
