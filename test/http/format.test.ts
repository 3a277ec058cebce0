import { describe, expect, it } from 'vitest';
import { isoSeconds, spacedSeconds } from '../../src/http/core/format.js';

describe('create_at formats', () => {
  it('match toISOString truncated to the second, whatever order the timestamps come in', () => {
    const stamps = [0, 999, 1000, 1_700_000_000_123, 1_700_000_000_999, 1_700_000_000_123, 1_700_000_001_000, -1, -1001, 253_402_300_799_999];
    for (const ms of stamps) {
      const iso = new Date(Math.floor(ms / 1000) * 1000).toISOString();
      expect(isoSeconds(ms), String(ms)).toBe(`${iso.slice(0, 19)}Z`);
      expect(spacedSeconds(ms), String(ms)).toBe(`${iso.slice(0, 10)} ${iso.slice(11, 19)}`);
    }
  });

  it('are exactly the contract shapes', () => {
    expect(isoSeconds(Date.UTC(2024, 4, 11, 13, 16, 7, 450))).toBe('2024-05-11T13:16:07Z');
    expect(spacedSeconds(Date.UTC(2024, 4, 11, 13, 16, 7, 450))).toBe('2024-05-11 13:16:07');
  });
});
