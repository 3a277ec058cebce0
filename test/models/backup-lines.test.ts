/**
 * The backup's record lines written a chunk at a time (RecordLineChunker): the batched path (one
 * JSON.stringify per chunk, rewritten into lines) prints exactly what the line-at-a-time writer prints,
 * whatever the values hold, and chunks end on whole lines near the asked size.
 */
import { describe, expect, it } from 'vitest';
import { RecordLineChunker, RecordLineReader, recordLineWriter } from '../../src/models/backup-format.js';
import type { Attribute, AttributeType, DataModel } from '../../src/models/types.js';
import type { RecordView } from '../../src/store/base/types.js';

function model(types: Array<[string, AttributeType]>): DataModel {
  const attributes: Attribute[] = types.map(([name, type], i) => ({
    uuid: `PROPER2222222${'23456789'[i]}`,
    schemaId: 'SCHEMA22222222',
    name,
    label: name,
    type,
    rw: 'R',
    unit: '',
    description: '',
    rule: { defaultValue: type === 'STRING' ? '' : type === 'BOOL' ? false : type === 'GEO' ? '0,0' : 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
  }));
  return { uuid: 'SCHEMA22222222', name: 'm', description: '', published: true, createdAtMs: 0, attributes };
}

const M = model([['note', 'STRING'], ['temp', 'FLOAT'], ['count', 'INTEGER'], ['on', 'BOOL'], ['pos', 'GEO']]);

/** Strings that look like the patterns the batched path rewrites, escapes, and characters outside the BMP. */
const NOTES = ['', 'plain', '},{"id":7,"create_at":1}', ',"create_at":', 'quote " and \\ backslash', 'line\nbreak\ttab\u0001', 'emoji 😀 and \ud800 lone', 'x'.repeat(5000)];

function views(n: number): RecordView[] {
  return Array.from({ length: n }, (_, i) => ({
    id: i + 1,
    create_at: 1_700_000_000_000 + i * 1000,
    note: i % 11 === 10 ? null : NOTES[i % NOTES.length],
    temp: i % 7 === 0 ? null : -1.5e-7 * i + 0.1,
    count: i % 5 === 0 ? -0 : 9007199254740991 - i,
    on: i % 2 === 0,
    pos: '-33.8,151.2',
  }));
}

function chunked(m: DataModel, input: RecordView[], chunkChars: number): string[] {
  const chunker = new RecordLineChunker(m, chunkChars);
  const out: string[] = [];
  for (const v of input) {
    const chunk = chunker.add(v);
    if (chunk !== undefined) out.push(chunk);
  }
  out.push(chunker.flush());
  return out;
}

describe('RecordLineChunker', () => {
  it('prints exactly what the line-at-a-time writer prints, in chunks of whole lines', () => {
    const input = views(3000);
    const line = recordLineWriter(M);
    const expected = input.map(line).join('');
    const chunks = chunked(M, input, 16 * 1024);
    expect(chunks.join('')).toBe(expected);
    expect(chunks.length).toBeGreaterThan(10);
    for (const c of chunks.slice(0, -1)) {
      expect(c.endsWith('\n')).toBe(true);
      // The size is estimated before printing, never below what is printed.
      expect(c.length).toBeLessThanOrEqual(16 * 1024 + 6 * 5000 + 200);
    }
  });

  it('its lines read back as the values they were written from', () => {
    const input = views(200);
    const reader = new RecordLineReader(M);
    const lines = chunked(M, input, 4096).join('').trimEnd().split('\n');
    expect(lines).toHaveLength(200);
    lines.forEach((text, i) => {
      const { id, tsMs, record } = reader.read(text, i + 2);
      const { id: vid, create_at: ts, ...values } = input[i];
      expect([id, tsMs]).toEqual([vid, ts]);
      const { id: _id, create_at_ms: _ts, ...stored } = record;
      // JSON has no -0: it reads back as 0, as from any JSON writer.
      expect(stored).toEqual(JSON.parse(JSON.stringify(values)));
    });
  });

  it('views with other keys than the model (a projection or an order change) use the line writer', () => {
    const m = model([['a', 'INTEGER'], ['b', 'STRING']]);
    const swapped: RecordView[] = [{ id: 1, create_at: 5, b: 'x', a: 1 }, { id: 2, create_at: 6, b: 'y', a: 2 }];
    expect(chunked(m, swapped, 1 << 20).join('')).toBe('{"id":1,"create_at_ms":5,"a":1,"b":"x"}\n{"id":2,"create_at_ms":6,"a":2,"b":"y"}\n');
  });

  it('nothing added: an empty flush', () => {
    expect(new RecordLineChunker(M, 1024).flush()).toBe('');
  });
});
