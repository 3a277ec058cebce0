/**
 * ModelLog.savePacked (how the rules' batches store records: keys, and their values as a packed msgpack
 * array inside the batch's buffer) must store exactly what save() stores for the object of those keys and
 * values: for any keys (the model's fields in order, which append the bytes as they are, or in any other
 * order, some missing, unknown ones, a deleted attribute's, which decode them), any values (nulls,
 * undefined), at any offset of the buffer, and after the fields changed (a deleted and re-added
 * attribute). The newest record, read or updated, must be the same too: a packed one is decoded only then.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { ValuePacker } from '../../src/store/format/value-pack.js';
import { FIELDS, openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterAll(removeTmpDirs);

const RUNS = Number(process.env.SAVE_PACKED_RUNS ?? 60);
const ALL_FIELDS = [...FIELDS, 'gone'];
const key = fc.constantFrom(...ALL_FIELDS, 'unknown', 'constructor');
// Any UTF-16 units, lone surrogates too, on both sides of the packers' 64-unit switch.
const units = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 60, maxLength: 70 }).map((u) => String.fromCharCode(...u));
const value = fc.oneof(fc.double(), fc.integer(), fc.string({ maxLength: 8 }), units, fc.boolean(), fc.constant(null), fc.constant(undefined));
const keysArb = fc.oneof(fc.constant(ALL_FIELDS), fc.constant([...FIELDS]), fc.uniqueArray(key, { maxLength: 9 }));
const recordArb = keysArb.chain((keys) => fc.tuple(fc.constant(keys), fc.array(value, { minLength: keys.length, maxLength: keys.length })));
const update = fc.option(fc.record({ temp: value }, { requiredKeys: [] }), { nil: undefined });

describe('ModelLog.savePacked', () => {
  it('stores what save() stores for the same record', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 6 }), fc.nat(5), fc.boolean(), update, async (records, offset, changeFields, last) => {
        const store = await openStore(tmpDir());
        try {
          // Defaults tell a column left "not held" (reads the default) from one given null.
          const defaults = ALL_FIELDS.map((f) => `default-${f}`);
          const byObject = await store.openModel('a', { fields: ALL_FIELDS, defaults });
          const byBytes = await store.openModel('b', { fields: ALL_FIELDS, defaults });
          if (changeFields) {
            for (const log of [byObject, byBytes]) {
              log.setFields({ fields: [...FIELDS], defaults: defaults.slice(0, -1) });
              log.setFields({ fields: ALL_FIELDS, defaults });
            }
          }
          const packer = new ValuePacker();
          for (let i = 0; i < offset; i++) packer.value('before');
          const spans: Array<[number, number]> = [];
          for (const [keys, values] of records) {
            const start = packer.length;
            packer.arrayHeader(keys.length);
            for (const v of values) packer.value(v);
            spans.push([start, packer.length]);
          }
          packer.value('after');
          const bytes = Buffer.from(packer.take());
          records.forEach(([keys, values], r) => {
            const record: Record<string, unknown> = {};
            keys.forEach((k, i) => (record[k] = values[i]));
            byObject.save(record);
            byBytes.savePacked(keys, bytes, ...spans[r]);
          });
          const newest = (log: typeof byObject) => {
            const { create_at: _t, ...rest } = log.latest() ?? {};
            return rest;
          };
          const read = async (log: typeof byObject) => (await log.page({ current: 1, size: 100, order: 'asc' })).records.map(({ create_at: _t, ...r }) => r);
          // A lone surrogate reads back differently by path (save() holds the string it was given, pages
          // print U+FFFD), so the newest records are compared where every string is well-formed.
          const wellFormed = [...records.flatMap(([, v]) => v), ...Object.values(last ?? {})].every((v) => typeof v !== 'string' || (v as unknown as { isWellFormed(): boolean }).isWellFormed());
          if (wellFormed) expect(newest(byBytes)).toEqual(newest(byObject));
          if (last !== undefined) for (const log of [byObject, byBytes]) log.updateLast(last);
          expect(await read(byBytes)).toEqual(await read(byObject));
          if (wellFormed) expect(newest(byBytes)).toEqual(newest(byObject));
        } finally {
          await store.close();
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('keeps no view of a large batch for the newest record: it reads the same after the batch buffer is reused', async () => {
    const store = await openStore(tmpDir());
    try {
      const log = await store.openModel('d', { fields: ['temp', 'name'] });
      const packer = new ValuePacker();
      packer.value('x'.repeat(70 * 1024));
      const start = packer.length;
      packer.arrayHeader(2);
      packer.value(21.5);
      packer.value('kept');
      const bytes = Buffer.from(packer.take());
      log.savePacked(['temp', 'name'], bytes, start, bytes.length);
      bytes.fill(0xc0);
      expect(log.latest()).toMatchObject({ id: 1, temp: 21.5, name: 'kept' });
    } finally {
      await store.close();
    }
  });

  it('refuses bytes that are not one array of as many record values as keys, storing nothing', async () => {
    const store = await openStore(tmpDir());
    try {
      const log = await store.openModel('c', { fields: ['temp', 'name'] });
      const packer = new ValuePacker();
      packer.arrayHeader(2);
      packer.value(1);
      packer.value('x');
      const bytes = Buffer.from(packer.take());
      expect(() => log.savePacked(['temp', 'name'], bytes, 0, bytes.length - 1)).toThrow(/packed values are one array/);
      expect(() => log.savePacked(['temp', 'name'], Buffer.from([0x92, 0x01, 0x80]), 0, 3)).toThrow(/packed values are one array/);
      expect(log.stats().total).toBe(0);
      expect(log.savePacked(['temp', 'name'], bytes, 0, bytes.length)).toBe(1);
      expect(log.latest()).toMatchObject({ id: 1, temp: 1, name: 'x' });
    } finally {
      await store.close();
    }
  });
});
