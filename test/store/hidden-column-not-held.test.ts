/**
 * A record written while a column is hidden does not hold it (log-fields.ts valuesOf): when the field
 * comes back it reads the field's default, whichever side of the other columns it lies, through every
 * read (pages, page JSON, export, latest) and after the segments were sealed, compacted and
 * the store reopened. Records written before the column was hidden keep their values.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { Store } from '../../src/store/store.js';
import { openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

const FIELDS = ['a', 's', 'b'];
const TYPES = ['FLOAT', 'STRING', 'FLOAT'];
const DEFAULTS = [0, 'none', 0];
const BEFORE = 300;
const WHILE_HIDDEN = 300;
const options = { segmentBytesMax: 8 * 1024, compactSealed: true } as const;

/** `hidden`: the fields left out of the model (the others keep their order). */
function spec(hidden: readonly string[]) {
  const kept = FIELDS.map((_, i) => i).filter((i) => !hidden.includes(FIELDS[i]));
  return { fields: kept.map((i) => FIELDS[i]), types: kept.map((i) => TYPES[i]), defaults: kept.map((i) => DEFAULTS[i]) };
}

async function reads(log: ModelLog, field: string): Promise<unknown> {
  const page = await log.page({ current: 1, size: 1000, order: 'asc', select: [field] });
  const json = await log.pageJson({ current: 1, size: 1000, order: 'asc', select: [field] }, (ms) => String(ms));
  const exported: unknown[] = [];
  for await (const r of log.iterate({ select: [field] })) exported.push(r[field]);
  return {
    page: page.records.map((r) => r[field]),
    json: (JSON.parse(json.json.toString()) as Array<Record<string, unknown>>).map((r) => r[field]),
    exported,
    latest: log.latest([field])?.[field],
  };
}

describe('a record written while a column is hidden', () => {
  for (const hidden of ['s', 'b']) {
    it(`does not hold it (${hidden === 's' ? 'a column among others' : 'the last column'}): it reads the default when the field comes back`, async () => {
      const dir = tmpDir();
      let store: Store = await openStore(dir, options);
      let log = await store.openModel('m', spec([]));
      for (let i = 0; i < BEFORE; i++) log.save({ a: i, s: `v${i}`, b: i });
      log.setFields(spec([hidden]));
      for (let i = 0; i < WHILE_HIDDEN; i++) log.save({ a: i, s: `v${i}`, b: i });
      await log.durable();
      await log.compactionIdle();
      log.setFields(spec([]));

      const field = hidden;
      const def = DEFAULTS[FIELDS.indexOf(field)];
      const values = [...Array.from({ length: BEFORE }, (_, i) => (field === 's' ? `v${i}` : i)), ...Array.from({ length: WHILE_HIDDEN }, () => def)];
      const expected = { page: values, json: values, exported: values, latest: def };
      expect(await reads(log, field)).toEqual(expected);

      await store.close();
      store = await openStore(dir, options);
      log = await store.openModel('m', spec([]));
      expect(await reads(log, field)).toEqual(expected);
      expect(log.stats().segments).toBeGreaterThan(2);
      await store.close();
    });
  }
});
