/**
 * How a body becomes payloads, the same for a push and a dry run: NDJSON (`application/x-ndjson`, also
 * `application/jsonl`) gives one payload per non-blank line, anything else one payload in all. And how
 * an input's queued payloads become the one buffer of bytes a task carries to the worker.
 */
import { isUtf8 } from 'node:buffer';
import { InvalidArgumentError } from '../errors.js';
import { packPayloads, type TaskPayloads } from './shared/protocol.js';

export function isLineDelimited(contentType: string): boolean {
  const type = contentType.toLowerCase();
  return type.startsWith('application/x-ndjson') || type.startsWith('application/jsonl');
}

/** The payloads of a body; empty when it holds none (the caller says what was empty). */
export function splitPayloads(text: string, contentType: string): string[] {
  if (isLineDelimited(contentType)) {
    return text
      .split('\n')
      .map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l))
      .filter((l) => l.trim().length > 0);
  }
  return text.trim().length > 0 ? [text] : [];
}

/** What TextDecoder drops at the start of a text, as utf8Body did for a push. */
const BOM_BYTES = 3;

/**
 * The payloads of one pushed body, left in it: payload i is body[starts[i], ends[i]), valid UTF-8. They
 * cross to the worker as bytes (scripts/shared/protocol.ts, TaskPayloads), so no string is made of them
 * on the main thread.
 */
export interface BodyPayloads {
  readonly body: Buffer;
  readonly starts: number[];
  readonly ends: number[];
}

/** What a push hands to an input's queue: texts (simulator, network inputs, API callers) or a body's lines. */
export type PushPayloads = readonly string[] | BodyPayloads;

export function payloadCount(payloads: PushPayloads): number {
  return isBodyPayloads(payloads) ? payloads.starts.length : payloads.length;
}

export function isBodyPayloads(payloads: PushPayloads): payloads is BodyPayloads {
  return !Array.isArray(payloads);
}

/** Whether `value` is what a push takes: an array of strings, or a body with as many starts as ends. */
export function isPushPayloads(value: unknown): value is PushPayloads {
  if (Array.isArray(value)) return value.every((p) => typeof p === 'string');
  if (typeof value !== 'object' || value === null) return false;
  const { body, starts, ends } = value as Partial<BodyPayloads>;
  return Buffer.isBuffer(body) && Array.isArray(starts) && Array.isArray(ends) && starts.length === ends.length;
}

/**
 * The payloads of a push body: each non-blank line (NDJSON), or the body (a BOM dropped), as
 * splitPayloads gives them from the decoded text.
 */
export function bodyPayloads(body: Buffer, contentType: string): BodyPayloads {
  if (!isUtf8(body)) throw new InvalidArgumentError('push body is not valid UTF-8');
  const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? BOM_BYTES : 0;
  const payloads: BodyPayloads = { body, starts: [], ends: [] };
  if (!isLineDelimited(contentType)) {
    if (!isBlank(body, start, body.length)) {
      payloads.starts.push(start);
      payloads.ends.push(body.length);
    }
    return payloads;
  }
  for (let a = start; a < body.length; ) {
    const newline = body.indexOf(0x0a, a);
    const b = newline < 0 ? body.length : newline;
    const end = b > a && body[b - 1] === 0x0d ? b - 1 : b;
    if (!isBlank(body, a, end)) {
      payloads.starts.push(a);
      payloads.ends.push(end);
    }
    a = b + 1;
  }
  return payloads;
}

/** JS's String.prototype.trim whitespace: the ASCII ones here, and past the first other byte the decoded text decides. */
function isBlank(body: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const c = body[i];
    if (c === 0x20 || (c >= 0x09 && c <= 0x0d)) continue;
    return c >= 0x80 && body.toString('utf8', i, end).trim().length === 0;
  }
  return true;
}

/** One queued payload: a text, or body[start, end) of a pushed body. */
export interface PayloadSlot {
  text: string | undefined;
  body: Buffer | undefined;
  start: number;
  end: number;
}

/** The payloads of `slots` as one task's buffer, each text encoded as taskPayloads encodes it. */
export function slotsTaskPayloads(slots: readonly PayloadSlot[]): TaskPayloads {
  return packPayloads(
    slots.length,
    (i) => {
      const { text } = slots[i];
      return text === undefined ? slots[i].end - slots[i].start : Buffer.byteLength(text, 'utf8');
    },
    (bytes, i, at) => {
      const { text, body, start, end } = slots[i];
      if (text !== undefined) bytes.write(text, at, 'utf8');
      else body!.copy(bytes, at, start, end);
    },
  );
}
