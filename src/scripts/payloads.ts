/**
 * How a body becomes payloads, the same for a push and a dry run: NDJSON (`application/x-ndjson`, also
 * `application/jsonl`) gives one payload per non-blank line, anything else one payload in all.
 */
import { isUtf8 } from 'node:buffer';
import { InvalidArgumentError } from '../errors.js';

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
 * The payloads of a push body, each line decoded from the bytes on its own. Split from one decoded text,
 * every payload would be a slice of it and keep the whole body alive until a full collection: at 10,000
 * records/s those bodies were a few MiB of the service's peak memory.
 */
export function bodyPayloads(body: Buffer, contentType: string): string[] {
  if (!isUtf8(body)) throw new InvalidArgumentError('push body is not valid UTF-8');
  const start = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? BOM_BYTES : 0;
  if (!isLineDelimited(contentType)) {
    const text = body.toString('utf8', start);
    return text.trim().length > 0 ? [text] : [];
  }
  const out: string[] = [];
  for (let a = start; a < body.length; ) {
    const newline = body.indexOf(0x0a, a);
    const b = newline < 0 ? body.length : newline;
    const line = body.toString('utf8', a, b > a && body[b - 1] === 0x0d ? b - 1 : b);
    if (line.trim().length > 0) out.push(line);
    a = b + 1;
  }
  return out;
}
