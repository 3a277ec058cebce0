/**
 * An upload as lines (restore and import read through it): lines cut anywhere by the chunks and by the
 * 64 KiB pieces large chunks are taken in, multi-byte characters across those cuts, CRLF, long lines,
 * and the line number in every error.
 */
import { describe, expect, it } from 'vitest';
import { lineBatches } from '../../src/util/lines.js';

async function linesOf(bytes: Buffer, chunkBytes: number, lineBytesMax = 1 << 20): Promise<Array<[number, string]>> {
  async function* chunks() {
    for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
  }
  const out: Array<[number, string]> = [];
  for await (const batch of lineBatches(chunks(), 'upload', lineBytesMax)) batch.lines.forEach((l, i) => out.push([batch.first + i, l]));
  return out;
}

describe('lineBatches', () => {
  // Lines of varied length with 2-, 3- and 4-byte characters, some longer than a 64 KiB piece.
  const lines = Array.from({ length: 400 }, (_, i) => `${i}:${'é€😀x'.repeat(i % 7 === 0 ? 9000 : i % 50)}`);
  const text = `${lines.join('\r\n')}\n`;

  it('gives every line with its number, whatever the chunk size', async () => {
    for (const chunkBytes of [7, 777, 64 * 1024, 1 << 20, 1 << 24]) {
      const got = await linesOf(Buffer.from(text), chunkBytes);
      expect(got.map(([, l]) => l), `chunks of ${chunkBytes}`).toEqual(lines);
      expect(got.map(([n]) => n)).toEqual(lines.map((_, i) => i + 1));
    }
  });

  it('a last line without a newline is a line too; a byte at a time works', async () => {
    expect(await linesOf(Buffer.from('a\nb'), 1 << 20)).toEqual([[1, 'a'], [2, 'b']]);
    expect(await linesOf(Buffer.from('é€\r\n\n😀'), 1)).toEqual([[1, 'é€'], [2, ''], [3, '😀']]);
  });

  it('names the line that is not UTF-8 or is too long', async () => {
    const bad = Buffer.concat([Buffer.from(`${'ok\n'.repeat(30000)}`), Buffer.from([0x61, 0xff, 0x0a]), Buffer.from('fine\n')]);
    await expect(linesOf(bad, 1 << 20)).rejects.toThrow('upload: line 30001 is not valid UTF-8');
    const long = Buffer.from(`short\n${'x'.repeat(200_000)}\nafter\n`);
    await expect(linesOf(long, 1 << 20, 100_000)).rejects.toThrow('upload: line 2 is longer than 100000 bytes');
  });
});
