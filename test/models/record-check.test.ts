import { describe, expect, it } from 'vitest';
import { checkRecord, roundDecimals } from '../../src/models/index.js';
import { model } from './helpers.js';

const m = model([
  { name: 'temp', type: 'FLOAT', rule: { defaultValue: 20, min: -40, max: 125, round: 1, trueLabel: '', falseLabel: '' } },
  { name: 'count', type: 'INTEGER', rule: { defaultValue: 0, min: 0, max: 10, round: 0, trueLabel: '', falseLabel: '' } },
  { name: 'raw', type: 'FLOAT' },
  { name: 'on', type: 'BOOL' },
  { name: 'tag', type: 'STRING', rule: { defaultValue: 'x', min: 0, max: 6, round: 0, trueLabel: '', falseLabel: '' } },
  { name: 'note', type: 'STRING' },
  { name: 'pos', type: 'GEO' },
]);

function error(input: Record<string, unknown>, mode: 'save' | 'update' = 'save') {
  const result = checkRecord(m, input, mode);
  return result.ok ? 'ok' : result.error;
}

describe('checkRecord', () => {
  it('save fills every missing attribute with its default, in model order', () => {
    expect(checkRecord(m, { on: true, count: 3 }, 'save')).toEqual({
      ok: true,
      record: { temp: 20, count: 3, raw: 0, on: true, tag: 'x', note: '', pos: '0,0' },
    });
  });

  it('update returns only the given attributes, in model order', () => {
    expect(checkRecord(m, { pos: '1.5, -2', temp: 21.26 }, 'update')).toEqual({
      ok: true,
      record: { temp: 21.3, pos: '1.5, -2' },
    });
    expect(checkRecord(m, {}, 'update')).toEqual({ ok: true, record: {} });
  });

  it('refuses an unpublished model', () => {
    expect(checkRecord({ ...m, published: false }, { temp: 1 }, 'save')).toEqual({
      ok: false, error: 'model test (SCHEMATEST2345) is not published',
    });
  });

  it.each([
    [{ x: 1 }, "unknown attribute 'x' for model test (SCHEMATEST2345)"],
    [{ Temp: 1 }, "unknown attribute 'Temp' for model test (SCHEMATEST2345)"],
    [{ id: 1 }, "model test (SCHEMATEST2345): key 'id' is set by the store and cannot be written"],
    [{ create_at: 1 }, "model test (SCHEMATEST2345): key 'create_at' is set by the store and cannot be written"],
    [{ temp: '25' }, "model test (SCHEMATEST2345): attribute 'temp' expects FLOAT, got string"],
    [{ temp: null }, "model test (SCHEMATEST2345): attribute 'temp' expects FLOAT, got nil"],
    [{ temp: { a: 1 } }, "model test (SCHEMATEST2345): attribute 'temp' expects FLOAT, got table"],
    [{ on: 1 }, "model test (SCHEMATEST2345): attribute 'on' expects BOOL, got number"],
    [{ on: 'true' }, "model test (SCHEMATEST2345): attribute 'on' expects BOOL, got string"],
    [{ tag: 5 }, "model test (SCHEMATEST2345): attribute 'tag' expects STRING, got number"],
    [{ pos: [1, 2] }, "model test (SCHEMATEST2345): attribute 'pos' expects GEO, got table"],
    [{ count: 2.5 }, "model test (SCHEMATEST2345): attribute 'count' expects INTEGER, got fraction 2.5"],
    [{ count: 11 }, "model test (SCHEMATEST2345): attribute 'count' must be in 0..10, got 11"],
    [{ count: -1 }, "model test (SCHEMATEST2345): attribute 'count' must be in 0..10, got -1"],
    [{ temp: 125.06 }, "model test (SCHEMATEST2345): attribute 'temp' must be in -40..125, got 125.1"],
    [{ raw: Infinity }, "model test (SCHEMATEST2345): attribute 'raw' expects a finite number, got inf"],
    [{ raw: -Infinity }, "model test (SCHEMATEST2345): attribute 'raw' expects a finite number, got -inf"],
    [{ raw: NaN }, "model test (SCHEMATEST2345): attribute 'raw' expects a finite number, got nan"],
    [{ tag: 'abcdefg' }, "model test (SCHEMATEST2345): attribute 'tag' must be at most 6 bytes, got 7"],
    [{ tag: 'ééé£' }, "model test (SCHEMATEST2345): attribute 'tag' must be at most 6 bytes, got 8"],
    [{ pos: '91,0' }, 'model test (SCHEMATEST2345): attribute \'pos\' expects GEO "lat,lng" with lat in -90..90 and lng in -180..180, got "91,0"'],
    [{ pos: '0,180.5' }, 'model test (SCHEMATEST2345): attribute \'pos\' expects GEO "lat,lng" with lat in -90..90 and lng in -180..180, got "0,180.5"'],
    [{ pos: '1,2,3' }, 'model test (SCHEMATEST2345): attribute \'pos\' expects GEO "lat,lng" with lat in -90..90 and lng in -180..180, got "1,2,3"'],
    [{ pos: 'north' }, 'model test (SCHEMATEST2345): attribute \'pos\' expects GEO "lat,lng" with lat in -90..90 and lng in -180..180, got "north"'],
  ])('refuses %j', (input, message) => {
    expect(error(input)).toBe(message);
    expect(error(input, 'update')).toBe(message);
  });

  it('accepts values on the bounds, integer-valued floats for INTEGER, unbounded values at 0/0', () => {
    expect(checkRecord(m, { count: 10, temp: -40 }, 'update')).toEqual({ ok: true, record: { temp: -40, count: 10 } });
    expect(checkRecord(m, { count: 25.0 / 2.5 }, 'update')).toEqual({ ok: true, record: { count: 10 } });
    expect(checkRecord(m, { raw: -1e300, note: 'x'.repeat(10000) }, 'update').ok).toBe(true);
    expect(checkRecord(m, { tag: 'ééé' }, 'update').ok).toBe(true);
    expect(checkRecord(m, { pos: '-90,-180' }, 'update').ok).toBe(true);
  });

  it('skips undefined properties (a Lua table never holds nil)', () => {
    expect(checkRecord(m, { temp: undefined, on: false }, 'update')).toEqual({ ok: true, record: { on: false } });
  });

  it('reports the first problem only, and refuses a non-table', () => {
    expect(error({ count: 99, x: 1 })).toBe("model test (SCHEMATEST2345): attribute 'count' must be in 0..10, got 99");
    expect(error([] as unknown as Record<string, unknown>)).toBe('record for model test (SCHEMATEST2345) must be a table, got table');
  });

  it('refuses integers beyond 2^53 and accepts safe bigints', () => {
    expect(error({ count: 2 ** 60 })).toMatch(/^model test \(SCHEMATEST2345\): attribute 'count' expects INTEGER within ±9007199254740991/);
    expect(checkRecord(m, { count: 7n }, 'update')).toEqual({ ok: true, record: { count: 7 } });
  });
});

describe('roundDecimals', () => {
  it.each([
    [1.005, 2, 1.01],
    [1.004, 2, 1],
    [-1.005, 2, -1.01],
    [2.5, 0, 3],
    [-2.5, 0, -3],
    [1e-7, 3, 0],
    [123456.789, 1, 123456.8],
    [1.23e20, 2, 1.23e20],
  ])('%d to %d decimals is %d', (value, decimals, expected) => {
    expect(roundDecimals(value, decimals)).toBe(expected);
  });
});
