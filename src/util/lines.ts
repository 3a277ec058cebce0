/**
 * A byte stream as batches of UTF-8 text lines (restore and import read their uploads through it):
 * memory stays at one chunk plus one unfinished line, whatever the size of the whole.
 */
import { InvalidArgumentError } from '../errors.js';

export interface LineBatch {
  /** The number of the batch's first line (1-based). */
  first: number;
  /** Without their `\n` (and a `\r` before it). */
  lines: string[];
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Splits on `\n` (a `\r` before it is dropped). A line longer than `lineBytesMax`, or bytes that are not
 * UTF-8, throw InvalidArgumentError naming the line and `what`.
 */
export async function* lineBatches(chunks: AsyncIterable<Uint8Array>, what: string, lineBytesMax: number): AsyncGenerator<LineBatch, void, undefined> {
  let rest: Buffer = Buffer.alloc(0);
  let lineNo = 1;
  for await (const chunk of chunks) {
    const buf = rest.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([rest, chunk]);
    const end = buf.lastIndexOf(10);
    if (end < 0) {
      if (buf.length > lineBytesMax) throw new InvalidArgumentError(`${what}: line ${lineNo} is longer than ${lineBytesMax} bytes`);
      rest = Buffer.from(buf);
      continue;
    }
    const lines = decode(buf.subarray(0, end), what, lineNo).split('\n');
    for (let i = 0; i < lines.length; i++) if (lines[i].endsWith('\r')) lines[i] = lines[i].slice(0, -1);
    rest = Buffer.from(buf.subarray(end + 1));
    if (rest.length > lineBytesMax) throw new InvalidArgumentError(`${what}: line ${lineNo + lines.length} is longer than ${lineBytesMax} bytes`);
    yield { first: lineNo, lines };
    lineNo += lines.length;
  }
  if (rest.length > 0) {
    const last = decode(rest, what, lineNo);
    yield { first: lineNo, lines: [last.endsWith('\r') ? last.slice(0, -1) : last] };
  }
}

function decode(bytes: Buffer, what: string, firstLine: number): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    // Find the line to name: decode line by line.
    let lineNo = firstLine;
    let start = 0;
    for (let nl = bytes.indexOf(10); ; nl = bytes.indexOf(10, start)) {
      const end = nl < 0 ? bytes.length : nl;
      try {
        UTF8.decode(bytes.subarray(start, end));
      } catch {
        break;
      }
      if (nl < 0) break;
      start = nl + 1;
      lineNo++;
    }
    throw new InvalidArgumentError(`${what}: line ${lineNo} is not valid UTF-8`);
  }
}
