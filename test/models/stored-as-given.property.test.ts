/**
 * storedAsGiven is checkRecord's shortcut past checkValue's answer object: whenever it says "as given",
 * checkValue must accept the value and store it unchanged (Object.is, so -0 and rounding count). Values
 * and attribute rules from the whole domain and beyond: every type, ranges empty, inverted and tight,
 * rounding on and off, byte limits around the UTF-8 length of multi-byte strings.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkValue, storedAsGiven } from '../../src/models/record-check.js';
import type { Attribute, AttributeType } from '../../src/models/types.js';

const TYPES: AttributeType[] = ['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO'];
const RUNS = Number(process.env.STORED_AS_GIVEN_RUNS ?? 20_000);

const bound = fc.oneof(fc.constant(0), fc.integer({ min: -5, max: 5 }), fc.double({ noNaN: true }), fc.integer());
const attribute = fc.record({ type: fc.constantFrom(...TYPES), min: bound, max: bound, round: fc.integer({ min: -1, max: 6 }) }).map(
  ({ type, min, max, round }): Attribute => ({
    uuid: 'A1', schemaId: 'M1', name: 'a', label: 'a', type, rw: 'RW', unit: '', description: '',
    rule: { defaultValue: 0, min, max, round, trueLabel: '', falseLabel: '' },
  }),
);
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

describe('storedAsGiven', () => {
  it('says "as given" only for values checkValue stores unchanged', () => {
    fc.assert(
      fc.property(attribute, value, (a, v) => {
        if (!storedAsGiven(a, v)) return;
        const checked = checkValue(a, v);
        expect(checked).toHaveProperty('value');
        expect(Object.is((checked as { value: unknown }).value, v)).toBe(true);
      }),
      { numRuns: RUNS },
    );
  });

  it('takes the usual values of each type (the shortcut is used)', () => {
    const plain = (type: AttributeType, max = 0): Attribute => ({
      uuid: 'A1', schemaId: 'M1', name: 'a', label: 'a', type, rw: 'RW', unit: '', description: '',
      rule: { defaultValue: 0, min: 0, max, round: 0, trueLabel: '', falseLabel: '' },
    });
    expect(storedAsGiven(plain('FLOAT'), 21.5)).toBe(true);
    expect(storedAsGiven(plain('INTEGER'), 42)).toBe(true);
    expect(storedAsGiven(plain('BOOL'), false)).toBe(true);
    expect(storedAsGiven(plain('STRING', 64), 'gw-dev-7')).toBe(true);
    expect(storedAsGiven(plain('STRING', 6), 'ééé')).toBe(false);
  });
});
