import { describe, expect, it } from 'vitest';
import { isId, newId, newUniqueId } from '../../src/models/index.js';

describe('ids', () => {
  it.each(['SCHEMA', 'PROPER', 'RULE', 'INEND'] as const)('%s + 8 chars of [2-9A-Z]', (prefix) => {
    for (let i = 0; i < 200; i++) {
      const id = newId(prefix);
      expect(id).toMatch(new RegExp(`^${prefix}[2-9A-Z]{8}$`));
      expect(isId(prefix, id)).toBe(true);
    }
  });

  it('uses the whole alphabet and no 0, 1 or lower case', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) for (const c of newId('RULE').slice(4)) seen.add(c);
    expect([...seen].sort().join('')).toBe('23456789ABCDEFGHIJKLMNOPQRSTUVWXYZ');
  });

  it('newUniqueId draws again while the id is taken', () => {
    let calls = 0;
    const id = newUniqueId('INEND', () => ++calls < 3);
    expect(calls).toBe(3);
    expect(isId('INEND', id)).toBe(true);
  });

  it('isId refuses other shapes', () => {
    expect(isId('SCHEMA', 'SCHEMAabcdefgh')).toBe(false);
    expect(isId('SCHEMA', 'SCHEMA1234ABCD')).toBe(false);
    expect(isId('SCHEMA', 'PROPERABCDEFGH')).toBe(false);
    expect(isId('SCHEMA', 42)).toBe(false);
  });
});
