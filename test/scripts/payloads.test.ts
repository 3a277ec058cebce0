/**
 * A push body into payloads (bodyPayloads, line by line from the bytes) gives what splitting the decoded
 * text gives (splitPayloads, the dry run's path): the same lines for random bodies of NDJSON with CRLF,
 * blank and whitespace lines (Unicode whitespace too), multi-byte characters and a BOM, and the same 400
 * for invalid UTF-8. Queued payloads, texts and a body's lines mixed, become one task buffer that holds
 * each one's bytes in order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bodyPayloads, slotsTaskPayloads, splitPayloads, type BodyPayloads, type PayloadSlot } from '../../src/scripts/payloads.js';
import { onePayload, taskPayloads, type TaskPayloads } from '../../src/scripts/shared/protocol.js';
import { prng } from '../support/prng.js';

const NDJSON = 'application/x-ndjson';
const decoder = new TextDecoder('utf-8', { fatal: true });

function viaText(body: Buffer, type: string): string[] {
  return splitPayloads(decoder.decode(body), type);
}

function lines(payloads: BodyPayloads): string[] {
  return payloads.starts.map((start, i) => payloads.body.toString('utf8', start, payloads.ends[i]));
}

function texts(payloads: TaskPayloads): string[] {
  return Array.from(payloads.ends, (end, i) => Buffer.from(payloads.bytes).toString('utf8', i === 0 ? 0 : payloads.ends[i - 1], end));
}

describe('push body payloads', () => {
  it('match the decoded text split into lines, for random bodies', () => {
    const rnd = prng(41);
    const pieces = ['{"a":1}', '{"t":"é€😀"}', '', ' ', '\t', '\r', '\v\f', '{"x":"a\\nb"}', 'plain text', '\u2028', '\u00a0', ' \ufeff ', '\u0085'];
    for (let k = 0; k < 800; k++) {
      const lineList = Array.from({ length: Math.floor(rnd() * 8) }, () => pieces[Math.floor(rnd() * pieces.length)]);
      const sep = rnd() < 0.5 ? '\n' : '\r\n';
      const text = (rnd() < 0.2 ? '\uFEFF' : '') + lineList.join(sep) + (rnd() < 0.5 ? sep : '');
      const body = Buffer.from(text);
      for (const type of [NDJSON, 'application/jsonl; charset=utf-8', 'application/json']) {
        expect(lines(bodyPayloads(body, type)), JSON.stringify({ text, type })).toEqual(viaText(body, type));
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

describe('task payloads', () => {
  it('hold each queued payload, text or body line, in order; one alone is that one', () => {
    const slot = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 40 }).map((text): PayloadSlot => ({ text, body: undefined, start: 0, end: 0 })),
      fc.tuple(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'grapheme', maxLength: 40 })).map(([before, line, after]): PayloadSlot => {
        const body = Buffer.from(before + line + after);
        const start = Buffer.byteLength(before);
        return { text: undefined, body, start, end: start + Buffer.byteLength(line) };
      }),
    );
    fc.assert(
      fc.property(fc.array(slot, { maxLength: 30 }), (slots) => {
        const expected = slots.map((s) => s.text ?? s.body!.toString('utf8', s.start, s.end));
        const packed = slotsTaskPayloads(slots);
        expect(texts(packed)).toEqual(expected);
        expect(packed.bytes.buffer.byteLength).toBe(packed.bytes.byteLength);
        expect(texts(taskPayloads(expected))).toEqual(expected);
        expected.forEach((text, i) => expect(texts(onePayload(packed, i))).toEqual([text]));
      }),
      { numRuns: 300 },
    );
  });

  it('encode a lone surrogate of a text as U+FFFD, as a client encoding it for a push would', () => {
    expect(texts(taskPayloads(['a\ud800b', '\udc00']))).toEqual(['a\ufffdb', '\ufffd']);
  });
});
