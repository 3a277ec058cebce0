/**
 * lineBatches refuses a line one byte over its bound wherever the line ends: inside the piece that
 * completes it, not only once a piece without a newline pushes it over.
 */
import { describe, expect, it } from 'vitest';
import { lineBatches } from '../../src/util/lines.js';

async function drain(text: string, chunkBytes: number, lineBytesMax: number): Promise<number> {
  const bytes = Buffer.from(text);
  async function* chunks() {
    for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
  }
  let lines = 0;
  for await (const batch of lineBatches(chunks(), 'upload', lineBytesMax)) lines += batch.lines.length;
  return lines;
}

describe('lineBatches bound', () => {
  it('takes a line of exactly lineBytesMax bytes and refuses one byte more, whatever the chunks', async () => {
    for (const chunkBytes of [1000, 64 * 1024, 1 << 20]) {
      expect(await drain(`a\n${'x'.repeat(100_000)}\nb\n`, chunkBytes, 100_000), `chunks of ${chunkBytes}`).toBe(3);
      await expect(drain(`a\n${'x'.repeat(100_001)}\nb\n`, chunkBytes, 100_000), `chunks of ${chunkBytes}`).rejects.toThrow(
        'upload: line 2 is longer than 100000 bytes',
      );
    }
  });
});
