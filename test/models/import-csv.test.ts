/**
 * CSV rows of an import (import-rows.ts) read field by field as slices of the lines: quoted fields with
 * commas, doubled quotes and line breaks, empty fields, quotes inside unquoted text, and the line named
 * in each error.
 */
import { describe, expect, it } from 'vitest';
import { importRows } from '../../src/models/import-rows.js';
import { lineBatches } from '../../src/util/lines.js';
import { model } from './helpers.js';

const M = model([
  { name: 'note', type: 'STRING' },
  { name: 'temp', type: 'FLOAT' },
]);

async function rows(text: string, chunkBytes = 5): Promise<Array<[number, unknown, unknown]>> {
  const bytes = Buffer.from(text);
  async function* chunks() {
    for (let at = 0; at < bytes.length; at += chunkBytes) yield bytes.subarray(at, at + chunkBytes);
  }
  const out: Array<[number, unknown, unknown]> = [];
  for await (const batch of importRows('csv', M, lineBatches(chunks(), 'csv file', 1 << 20))) {
    for (const r of batch) out.push([r.lineNo, r.record.note, r.record.temp]);
  }
  return out;
}

const T = '2030-01-01T00:00:00Z';

describe('CSV import rows', () => {
  it('reads quoted, empty and multi-line fields as RFC 4180 writes them', async () => {
    const text = [
      '\ufeffid,create_at,note,temp',
      `1,${T},plain,1.5`,
      `2,${T},"a, ""quoted"" b",`,
      `3,${T},"",2`,
      `4,${T},"two\r\nlines ""and""",3`,
      `5,${T},"ends with a quote""",4`,
      `6,${T},"""",5`,
      `7,${T},say "hi",6`,
      `8,"${T}","multi`,
      '',
      'line",',
      '',
      `9,${T},,7`,
    ].join('\r\n');
    for (const chunkBytes of [1, 5, 1 << 20]) {
      expect(await rows(text, chunkBytes), `chunks of ${chunkBytes}`).toEqual([
        [2, 'plain', 1.5],
        [3, 'a, "quoted" b', null],
        [4, '', 2],
        [5, 'two\nlines "and"', 3],
        [7, 'ends with a quote"', 4],
        [8, '"', 5],
        [9, 'say "hi"', 6],
        [10, 'multi\n\nline', null],
        [14, '', 7],
      ]);
    }
  });

  it('names the line where the record starts in every error', async () => {
    await expect(rows(`create_at,note\n${T},"closed"x\n`)).rejects.toThrow('line 2: text after a closing quote in column 2');
    await expect(rows(`create_at,note\n${T},"a\nb"c\n`)).rejects.toThrow('line 3: text after a closing quote in column 2');
    await expect(rows(`create_at,note\n${T},"never\nclosed\n`)).rejects.toThrow('line 2: a quoted field is never closed');
    await expect(rows(`create_at,note\n${T}\n`)).rejects.toThrow('line 2: 1 fields, but the header names 2 columns');
    await expect(rows(`create_at,note\n${T},"a\nb",c\n`)).rejects.toThrow('line 2: more than 2 fields, but the header names 2 columns');
    await expect(rows('create_at,note,temp,id,x\n')).rejects.toThrow(
      `line 1: more than 4 fields, but model test (${M.uuid}) has 2 attributes besides id and create_at`,
    );
  });
});
