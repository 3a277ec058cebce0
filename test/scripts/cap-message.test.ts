/**
 * capMessage (contract 18, "at most 1 KB per message"): at most 1,024 bytes of UTF-8 with the note of
 * what was left out, cut at a character; a message capped in the worker and then prefixed in the main
 * thread is cut once more and its note still counts every byte left out.
 */
import { describe, expect, it } from 'vitest';
import { MESSAGE_BYTES_MAX, capMessage } from '../../src/scripts/shared/repeat-filter.js';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

/** The text shown and the bytes the note says were left out. */
function parts(capped: string): { shown: string; leftOut: number } {
  const m = /^([\s\S]*)… \((\d+) more bytes\)$/.exec(capped);
  if (m === null) throw new Error(`no note: ${capped.slice(-40)}`);
  return { shown: m[1], leftOut: Number(m[2]) };
}

describe('capMessage', () => {
  it('leaves a message of 1,024 bytes as it is and cuts one of 1,025', () => {
    const fits = 'é'.repeat(511) + 'xx';
    expect(bytes(fits)).toBe(MESSAGE_BYTES_MAX);
    expect(capMessage(fits)).toBe(fits);
    const over = `${fits}y`;
    const capped = capMessage(over);
    expect(bytes(capped)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
    const { shown, leftOut } = parts(capped);
    expect(over.startsWith(shown)).toBe(true);
    expect(bytes(shown) + leftOut).toBe(bytes(over));
  });

  it('a capped message that gets a prefix is capped again, counting every byte left out', () => {
    const original = '€'.repeat(40_000); // 120,000 bytes, three a character
    const inWorker = capMessage(original.slice(0, 5000), bytes(original.slice(5000)));
    const prefix = 'rule loud (RULE2345ABCD): line 3: ';
    const answered = capMessage(prefix + inWorker);
    expect(bytes(answered)).toBeLessThanOrEqual(MESSAGE_BYTES_MAX);
    const { shown, leftOut } = parts(answered);
    expect(shown.startsWith(prefix)).toBe(true);
    expect(shown.slice(prefix.length)).toMatch(/^€+$/);
    expect(bytes(shown) + leftOut).toBe(bytes(prefix) + bytes(original));
    expect(capMessage(answered)).toBe(answered);
  });
});
