/**
 * A push body into payloads (bodyPayloads, line by line from the bytes) gives what splitting the decoded
 * text gives (splitPayloads, the dry run's path): the same lines for random bodies of NDJSON with CRLF,
 * blank and whitespace lines, multi-byte characters and a BOM, and the same 400 for invalid UTF-8.
 */
import { describe, expect, it } from 'vitest';
import { bodyPayloads, splitPayloads } from '../../src/scripts/payloads.js';
import { prng } from '../support/prng.js';

const NDJSON = 'application/x-ndjson';
const decoder = new TextDecoder('utf-8', { fatal: true });

function viaText(body: Buffer, type: string): string[] {
  return splitPayloads(decoder.decode(body), type);
}

describe('push body payloads', () => {
  it('match the decoded text split into lines, for random bodies', () => {
    const rnd = prng(41);
    const pieces = ['{"a":1}', '{"t":"é€😀"}', '', ' ', '\t', '\r', '{"x":"a\\nb"}', 'plain text', '\u2028'];
    for (let k = 0; k < 500; k++) {
      const lines = Array.from({ length: Math.floor(rnd() * 8) }, () => pieces[Math.floor(rnd() * pieces.length)]);
      const sep = rnd() < 0.5 ? '\n' : '\r\n';
      const text = (rnd() < 0.2 ? '\uFEFF' : '') + lines.join(sep) + (rnd() < 0.5 ? sep : '');
      const body = Buffer.from(text);
      for (const type of [NDJSON, 'application/jsonl; charset=utf-8', 'application/json']) {
        expect(bodyPayloads(body, type), JSON.stringify({ text, type })).toEqual(viaText(body, type));
      }
    }
  });

  it('refuse invalid UTF-8 with the same message', () => {
    for (const bytes of [[0xff], [0x7b, 0xc3], [0xed, 0xa0, 0x80], [0x61, 0x0a, 0xe2, 0x82]]) {
      expect(() => bodyPayloads(Buffer.from(bytes), NDJSON)).toThrow('push body is not valid UTF-8');
      expect(() => decoder.decode(Buffer.from(bytes))).toThrow();
    }
  });
});
