/**
 * readCString keeps the short ASCII strings it decoded (record keys, read for every record a rule
 * stores): what it returns must always be the bytes at the pointer now, never a kept string of bytes
 * that were there before.
 */
import { describe, expect, it } from 'vitest';
import { readCString } from '../../src/scripts/lua/lua-raw.js';

function heapWith(text: string, at = 8): Uint8Array {
  const heap = new Uint8Array(256);
  heap.set(Buffer.from(text, 'utf8'), at);
  return heap;
}

describe('readCString', () => {
  it('gives the bytes at the pointer, also when other bytes were read there before', () => {
    const heap = heapWith('temp');
    expect(readCString(heap, 8, 4)).toBe('temp');
    heap.set(Buffer.from('tamp'), 8);
    expect(readCString(heap, 8, 4)).toBe('tamp');
    expect(readCString(heap, 8, 2)).toBe('ta');
    expect(readCString(heapWith('dissolved_oxygen'), 8, 16)).toBe('dissolved_oxygen');
    expect(readCString(heapWith('temp'), 8, 4)).toBe('temp');
  });

  it('reads strings whose hashes share a slot without mixing them up', () => {
    // Many distinct short keys: with 256 slots some collide; each read must still be its own text.
    const keys = Array.from({ length: 2000 }, (_, i) => `k${i.toString(36)}_${(i * 7919) % 1000}`);
    for (let round = 0; round < 2; round++) {
      for (const key of keys) expect(readCString(heapWith(key), 8, key.length)).toBe(key);
    }
  });

  it('stops at the first NUL and decodes non-ASCII text as before', () => {
    expect(readCString(heapWith('ab\0cd'), 8, 5)).toBe('ab');
    expect(readCString(heapWith('°C'), 8, 3)).toBe('°C');
    expect(readCString(heapWith(''), 8, 0)).toBe('');
  });
});
