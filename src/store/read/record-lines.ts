/**
 * Stored records as lines of JSON in an envelope the caller gives (the fleet uplink's NDJSON, message.ts),
 * printed straight from the frames' msgpack payloads (record-json.ts measures and prints the values).
 * Decoding each record into an object and printing that object was most of the uplink's main-thread time
 * per record after its own printing was made cheap (issue 14).
 *
 * A line is `<head><id><createAtKey><create_at>`, then `,"name":value` for each field not omitted, in
 * the model's order, then `}`: byte for byte what the reference path (referenceLine) prints from the
 * decoded record, which the records this path cannot print exactly go through (record-json.ts says which).
 */
import { frameId, frameTs, FRAME_HEADER_BYTES } from '../format/frame.js';
import { JsonOut, wordsOf, type Words } from './json-out.js';
import { ValueStarts, plainKey, writeValue } from './record-json.js';
import { decodeValues, projection, toView, type Projection } from './reader.js';
import type { FieldLayout } from '../segment/field-layout.js';
import type { RecordView } from '../base/types.js';

export interface LineFormat {
  /** Printed before each record's id, e.g. `{"gateway":"g1","id":`. */
  head: string;
  /** Printed between the id and create_at (milliseconds since the epoch), e.g. `,"create_at_ms":`. */
  createAtKey: string;
  /** Fields not printed (named like a key of the envelope). */
  omit: ReadonlySet<string>;
}

export interface RecordLines {
  /** The lines, each followed by '\n'. */
  text: Buffer;
  ids: number[];
  createAtMs: number[];
  /** Where each line ends in `text` (its '\n' is there). */
  ends: number[];
  /** Each line's length as a JavaScript string (UTF-16 code units), as a reader of the text would count it. */
  chars: number[];
  /** The read covers the ids up to this one: the end of the range asked for, unless a limit of a read ended it before. */
  throughId: number;
  /** Main-thread time the printing took, for a caller that keeps its share of the thread (the uplink, loop-share.ts). */
  printMs: number;
}

/**
 * The frames a read kept, in id order: for k < count, `lens[k]` bytes at `offs[k]` in `bufs[k]`, CRC-checked.
 * Sized once for the ids asked: three arrays grown frame by frame were most of a page's garbage.
 */
export interface KeptFrames {
  bufs: Buffer[];
  offs: Int32Array;
  lens: Int32Array;
  count: number;
  frameBytes: number;
}

const NEWLINE = 0x0a;

/** The printer of one format under one layout: key texts and defaults made once, reused for every record. */
export class LinePrinter {
  private readonly head: Words;
  private readonly createAtKey: Words;
  /** `,"name":` of each field printed. */
  private readonly keys: Words[];
  /** The stored column of each field printed. */
  private readonly columns: number[];
  /** The JSON of what each field printed reads in a record that predates its column. */
  private readonly defaults: Buffer[];
  /** Every field printed in the order a for-in over a RecordView lists it (record-json.ts plainKey). */
  private readonly fast: boolean;
  private readonly full: Projection;
  private readonly values = new ValueStarts();
  /** How many more bytes than characters the head and keys of a line have (they may hold non-ASCII text). */
  private readonly fixedExtraBytes: number;
  /** The same for each default. */
  private readonly defaultExtraBytes: number[];
  /** Bytes of the keys and punctuation of one line: for sizing the output. */
  readonly keyBytes: number;

  constructor(
    readonly layout: FieldLayout,
    readonly format: LineFormat,
  ) {
    this.full = projection(layout, undefined);
    const printed = this.full.names.map((_, k) => k).filter((k) => !format.omit.has(this.full.names[k]));
    this.head = wordsOf(format.head);
    this.createAtKey = wordsOf(format.createAtKey);
    const keyTexts = printed.map((k) => `,${JSON.stringify(this.full.names[k])}:`);
    const defaultTexts = printed.map((k) => JSON.stringify(this.full.defaults[k] ?? null));
    this.keys = keyTexts.map(wordsOf);
    this.columns = printed.map((k) => this.full.fields[k]);
    this.defaults = defaultTexts.map((t) => Buffer.from(t));
    this.fast = this.full.names.every(plainKey);
    this.fixedExtraBytes = [format.head, format.createAtKey, ...keyTexts].reduce((n, t) => n + extraBytes(t), 0);
    this.defaultExtraBytes = defaultTexts.map(extraBytes);
    this.keyBytes = [this.head, this.createAtKey, ...this.keys].reduce((n, k) => n + k.bytes, 40);
  }

  /** Prints the frames' records as lines; `throughId` is the caller's. */
  print(frames: KeptFrames, throughId: number): RecordLines {
    const startedMs = performance.now();
    const n = frames.count;
    const out = new JsonOut(2 * frames.frameBytes + n * this.keyBytes);
    const lines: RecordLines = { text: out.buf, ids: new Array(n), createAtMs: new Array(n), ends: new Array(n), chars: new Array(n), throughId, printMs: 0 };
    for (let k = 0; k < n; k++) {
      const buf = frames.bufs[k];
      const off = frames.offs[k];
      lines.ids[k] = frameId(buf, off);
      lines.createAtMs[k] = frameTs(buf, off);
      lines.chars[k] = this.write(out, buf, off, frames.lens[k]);
      lines.ends[k] = out.pos;
      out.room(1)[out.pos++] = NEWLINE;
    }
    lines.text = out.buf.subarray(0, out.pos);
    lines.printMs = performance.now() - startedMs;
    return lines;
  }

  /** Prints the record of the frame at `off` (CRC-checked by the caller); returns the line's length as a string. */
  private write(out: JsonOut, frame: Buffer, off: number, bytes: number): number {
    const start = out.pos;
    if (this.fast) {
      const extra = this.tryWrite(out, frame, off, off + bytes);
      if (extra >= 0) return out.pos - start - extra;
    }
    out.pos = start;
    const view = toView(this.full, frameId(frame, off), frameTs(frame, off), decodeValues(frame.subarray(off + FRAME_HEADER_BYTES, off + bytes)));
    const line = referenceLine(this.format, view);
    out.utf8(line);
    return line.length;
  }

  /**
   * Prints the line; returns how many more bytes than characters it has (UTF-8 of non-ASCII text), or -1
   * when the record holds a value only the reference path prints exactly (out is then rewound by the caller).
   */
  private tryWrite(out: JsonOut, b: Buffer, off: number, end: number): number {
    const count = this.values.find(b, off, end);
    if (count < 0) return -1;
    const starts = this.values.at;
    let extra = this.fixedExtraBytes;
    out.words(this.head);
    out.uint(frameId(b, off));
    out.words(this.createAtKey);
    out.number(frameTs(b, off));
    const { columns, keys, defaults } = this;
    for (let k = 0; k < columns.length; k++) {
      out.words(keys[k]);
      const column = columns[k];
      if (column >= count) {
        const d = defaults[k];
        out.bytes(d, 0, d.length);
        extra += this.defaultExtraBytes[k];
        continue;
      }
      const at = starts[column];
      const from = out.pos;
      if (!writeValue(out, b, at)) return -1;
      if (isString(b[at])) extra += extraBytesOf(out.buf, from, out.pos);
    }
    out.room(1)[out.pos++] = 0x7d; // }
    return extra;
  }
}

/**
 * The line of a decoded record: the envelope, then every key a for-in lists that is neither id, create_at
 * nor omitted, each value as JSON.stringify prints it (undefined ones left out). The uplink printed its
 * lines this way before they were printed from the stored bytes.
 */
export function referenceLine(format: LineFormat, view: RecordView): string {
  let line = `${format.head}${JSON.stringify(view.id)}${format.createAtKey}${JSON.stringify(view.create_at)}`;
  for (const key in view) {
    if (key === 'id' || key === 'create_at' || format.omit.has(key)) continue;
    const v = view[key];
    if (v === undefined) continue;
    line += `,${JSON.stringify(key)}:${JSON.stringify(v) ?? 'null'}`;
  }
  return `${line}}`;
}

/** A msgpack string's type byte. */
function isString(t: number): boolean {
  return (t >= 0xa0 && t <= 0xbf) || (t >= 0xd9 && t <= 0xdb);
}

/** How many more bytes its UTF-8 has than `text` has characters (JavaScript's UTF-16 code units). */
function extraBytes(text: string): number {
  return Buffer.byteLength(text) - text.length;
}

/** The same for the UTF-8 text `b[start..end)`: a 4-byte sequence is two code units, any other one. */
function extraBytesOf(b: Buffer, start: number, end: number): number {
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = b[i];
    if (c < 0x80) continue;
    if ((c & 0xc0) === 0x80) n++;
    else if (c >= 0xf0) n--;
  }
  return n;
}
