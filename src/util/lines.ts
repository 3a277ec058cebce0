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
const PIECE_BYTES = 64 * 1024;

/**
 * Splits on `\n` (a `\r` before it is dropped). A line longer than `lineBytesMax`, or bytes that are not
 * UTF-8, throw InvalidArgumentError naming the line and `what`.
 */
export async function* lineBatches(chunks: AsyncIterable<Uint8Array>, what: string, lineBytesMax: number): AsyncGenerator<LineBatch, void, undefined> {
  // The start of an unfinished line, in the pieces it came in: joined once, when its end arrives.
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let lineNo = 1;
  for await (const chunk of chunks) {
    const whole = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    // Large chunks (a file read 1 MiB at a time) are taken a piece at a time: decoding and splitting
    // cost half as much per line on pieces that stay in the CPU's caches.
    for (let at = 0; at < whole.length; at += PIECE_BYTES) {
      const piece = whole.subarray(at, at + PIECE_BYTES);
      const nl = piece.lastIndexOf(10);
      if (nl < 0) {
        pendingBytes += piece.length;
        if (pendingBytes > lineBytesMax) throw new InvalidArgumentError(`${what}: line ${lineNo} is longer than ${lineBytesMax} bytes`);
        pending.push(Buffer.from(piece));
        continue;
      }
      // The piece's first newline may end a line the pieces before began, and take it over the bound.
      if (pendingBytes > 0 && pendingBytes + piece.indexOf(10) > lineBytesMax) throw new InvalidArgumentError(`${what}: line ${lineNo} is longer than ${lineBytesMax} bytes`);
      const buf = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
      const lines = decode(buf.subarray(0, pendingBytes + nl), what, lineNo).split('\n');
      for (let i = 0; i < lines.length; i++) if (lines[i].endsWith('\r')) lines[i] = lines[i].slice(0, -1);
      const rest = piece.subarray(nl + 1);
      pending = rest.length === 0 ? [] : [Buffer.from(rest)];
      pendingBytes = rest.length;
      if (pendingBytes > lineBytesMax) throw new InvalidArgumentError(`${what}: line ${lineNo + lines.length} is longer than ${lineBytesMax} bytes`);
      yield { first: lineNo, lines };
      lineNo += lines.length;
    }
  }
  if (pendingBytes > 0) {
    const last = decode(Buffer.concat(pending), what, lineNo);
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
