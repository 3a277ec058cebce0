/**
 * checkValue answers the value to store itself (no answer object: it runs for every field of every record
 * a rule stores) or a RefusedValue. Over generated attributes and values from the whole domain and beyond
 * (every type, ranges empty, inverted and tight, rounding on and off, byte limits around the UTF-8 length
 * of multi-byte strings): a refusal names the attribute, and what it accepts it accepts again unchanged
 * (Object.is, so -0 and rounding count), with the attribute's type.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkValue, RefusedValue } from '../../src/models/record-check.js';
import type { Attribute, AttributeType } from '../../src/models/types.js';

const TYPES: AttributeType[] = ['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO'];
const RUNS = Number(process.env.CHECK_VALUE_RUNS ?? 20_000);
const JS_TYPE: Record<AttributeType, string> = { INTEGER: 'number', FLOAT: 'number', BOOL: 'boolean', STRING: 'string', GEO: 'string' };

function attributeOf(type: AttributeType, rule: { min: number; max: number; round: number }): Attribute {
  return { uuid: 'A1', schemaId: 'M1', name: 'a', label: 'a', type, rw: 'RW', unit: '', description: '', rule: { defaultValue: 0, ...rule, trueLabel: '', falseLabel: '' } };
}

const bound = fc.oneof(fc.constant(0), fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true }), fc.integer());
const attribute = fc
  .record({ type: fc.constantFrom(...TYPES), min: bound, max: bound, round: fc.integer({ min: -1, max: 6 }) })
  .map(({ type, ...rule }) => attributeOf(type, rule));
const value = fc.oneof(
  fc.double(),
  fc.integer(),
  fc.constantFrom(0, -0, 0.5, -1, 2 ** 53, -(2 ** 53), 1e308, Number.EPSILON, NaN, Infinity, -Infinity),
  fc.boolean(),
  fc.string(),
  fc.string({ unit: 'grapheme' }),
  fc.string({ unit: 'binary' }),
  fc.constantFrom('', '1,2', '91,0', 'é'.repeat(3), '😀😀'),
  fc.bigInt(),
  fc.constantFrom(null, undefined, {}, [], [1]),
);

describe('checkValue', () => {
  it('refuses naming the attribute, and accepts what it accepted again, unchanged and of its type', () => {
    fc.assert(
      fc.property(attribute, value, (a, v) => {
        const checked = checkValue(a, v);
        if (checked instanceof RefusedValue) {
          expect(checked.error).toContain("attribute 'a'");
          return;
        }
        expect(typeof checked).toBe(JS_TYPE[a.type]);
        expect(Object.is(checkValue(a, checked), checked)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('gives the usual values back as they are; a byte limit counts UTF-8 bytes, not characters', () => {
    const plain = (type: AttributeType, max = 0): Attribute => attributeOf(type, { min: 0, max, round: 0 });
    expect(checkValue(plain('FLOAT'), 21.5)).toBe(21.5);
    expect(checkValue(plain('INTEGER'), 42)).toBe(42);
    expect(checkValue(plain('BOOL'), false)).toBe(false);
    expect(checkValue(plain('STRING', 64), 'gw-dev-7')).toBe('gw-dev-7');
    expect(checkValue(plain('STRING', 6), 'ééé')).toBe('ééé');
    expect(checkValue(plain('STRING', 6), 'éééé')).toEqual(new RefusedValue("attribute 'a' must be at most 6 bytes, got 8"));
    expect(checkValue(plain('STRING', 6), 'abcdefg')).toEqual(new RefusedValue("attribute 'a' must be at most 6 bytes, got 7"));
  });
});
