/**
 * Stored records as JSON text, printed straight from their frames' msgpack payloads into one Buffer. A page
 * of 1000 records used to be decoded into value arrays, copied into RecordViews, copied again with
 * create_at formatted, then given to JSON.stringify as one string; the garbage of it was most of the CPU
 * of the read (docs/performance.md, issue 11). The text is byte for byte JSON.stringify(formatRecord(view)):
 * the same keys in the same order, numbers as JavaScript prints them, strings as JSON.stringify escapes
 * them. A record holding a value this path cannot print that way by construction (a string that is not
 * valid UTF-8 or starts with a byte order mark, which decoders treat differently; a map, an array, a
 * binary, an extension, a 64-bit integer or a 32-bit float, which our writer never stores) is printed
 * through the reference path instead (decoded, formatted, stringified).
 */
import { FRAME_HEADER_BYTES, frameId, frameTs } from '../format/frame.js';
import { JsonOut } from './json-out.js';
import { u16, u32be, valueBytes } from '../format/msgpack-items.js';
import { decodeValues, toView, type Projection } from './reader.js';
import type { RecordView } from '../base/types.js';

/** How create_at is printed (the HTTP layer's choice: `YYYY-MM-DDTHH:MM:SSZ` for history reads). */
export type Stamp = (ms: number) => string;

/**
 * A copy of a store record with `create_at` formatted; key order (id, create_at, attributes in model
 * order) is kept. Never mutates the store's object, which may be its in-memory latest record.
 */
export function formatRecord(record: RecordView, stamp: Stamp): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in record) {
    const value = record[key];
    out[key] = key === 'create_at' && typeof value === 'number' ? stamp(value) : value;
  }
  return out;
}

/** What stringKind finds in a stored string. */
const PLAIN = 0;
const ESCAPED = 1;
const UNSURE = 2;

/**
 * PLAIN: valid UTF-8 that JSON.stringify leaves as it is (no control character, quote or backslash), so its
 * bytes are its JSON. ESCAPED: valid UTF-8 that needs escapes. UNSURE: not valid UTF-8, or starting with a
 * byte order mark (TextDecoder drops it, the other decoders keep it): only the decoder can tell.
 */
function stringKind(b: Uint8Array, start: number, end: number): number {
  let kind = PLAIN;
  let i = start;
  if (end - start >= 3 && b[i] === 0xef && b[i + 1] === 0xbb && b[i + 2] === 0xbf) return UNSURE;
  while (i < end) {
    const c = b[i];
    if (c < 0x80) {
      if (c < 0x20 || c === 0x22 || c === 0x5c) kind = ESCAPED;
      i++;
      continue;
    }
    // RFC 3629: the allowed range of the byte after the lead excludes overlongs, surrogates and > U+10FFFF.
    let follow: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) follow = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      follow = 2;
      if (c === 0xe0) lo = 0xa0;
      else if (c === 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      follow = 3;
      if (c === 0xf0) lo = 0x90;
      else if (c === 0xf4) hi = 0x8f;
    } else return UNSURE;
    if (i + follow >= end) return UNSURE;
    const c1 = b[i + 1];
    if (c1 < lo || c1 > hi) return UNSURE;
    for (let k = 2; k <= follow; k++) if ((b[i + k] & 0xc0) !== 0x80) return UNSURE;
    i += follow + 1;
  }
  return kind;
}

const LITERAL_NULL = Buffer.from('null');
const LITERAL_TRUE = Buffer.from('true');
const LITERAL_FALSE = Buffer.from('false');

/**
 * Keys a JSON.stringify of a RecordView does not print in insertion order, or as an own property: an
 * array index (listed first) or `__proto__` (sets the prototype). Registry names cannot be either, the
 * store's own field names could.
 */
export function plainKey(name: string): boolean {
  return name !== '__proto__' && !/^(0|[1-9][0-9]*)$/.test(name);
}

/** The printer of one projection: key texts and default values made once, then reused for every record. */
export class RecordJson {
  /** `"name":` of each field, with the comma before it when a key comes first. */
  private readonly keys: Buffer[];
  /** The JSON of what each field reads in a record that predates its column. */
  private readonly defaults: Buffer[];
  private readonly idKey: Buffer | undefined;
  private readonly createAtKey: Buffer | undefined;
  private readonly fast: boolean;
  /** Bytes of the keys and punctuation of one record, create_at's value included: for sizing the output. */
  readonly keyBytes: number;
  private stampText = '';
  private stampJson: Buffer = Buffer.from('""');
  private readonly values = new ValueStarts();

  constructor(private readonly p: Projection) {
    let first = true;
    const key = (name: string): Buffer => {
      const text = `${first ? '{' : ','}${JSON.stringify(name)}:`;
      first = false;
      return Buffer.from(text);
    };
    this.idKey = p.id ? key('id') : undefined;
    this.createAtKey = p.createAt ? key('create_at') : undefined;
    this.keys = p.names.map(key);
    this.defaults = p.defaults.map((d) => Buffer.from(JSON.stringify(d ?? null)));
    this.fast = p.names.every(plainKey);
    this.keyBytes = [this.idKey, this.createAtKey, ...this.keys].reduce((n, k) => n + (k?.length ?? 0), 24);
  }

  /** Prints the record of the frame at `off` (its bytes are CRC-checked by the caller). */
  write(out: JsonOut, frame: Buffer, off: number, bytes: number, stamp: Stamp): void {
    const mark = out.pos;
    if (this.fast && this.tryWrite(out, frame, off, off + bytes, stamp)) return;
    out.pos = mark;
    const id = frameId(frame, off);
    const ts = frameTs(frame, off);
    const view = toView(this.p, id, ts, decodeValues(frame.subarray(off + FRAME_HEADER_BYTES, off + bytes)));
    out.utf8(JSON.stringify(formatRecord(view, stamp)));
  }

  /** Records of a page mostly share their second: its text is printed once and copied after that. */
  private writeStamp(out: JsonOut, text: string): void {
    if (text !== this.stampText) {
      const scratch = new JsonOut(text.length + 2);
      scratch.string(text);
      this.stampText = text;
      this.stampJson = scratch.buf.subarray(0, scratch.pos);
    }
    out.bytes(this.stampJson, 0, this.stampJson.length);
  }

  /** false when the record holds a value only the reference path prints exactly (out is then rewound). */
  private tryWrite(out: JsonOut, b: Buffer, off: number, end: number, stamp: Stamp): boolean {
    const count = this.values.find(b, off, end);
    if (count < 0) return false;
    const starts = this.values.at;
    if (this.idKey !== undefined) {
      out.bytes(this.idKey, 0, this.idKey.length);
      out.uint(frameId(b, off));
    }
    if (this.createAtKey !== undefined) {
      out.bytes(this.createAtKey, 0, this.createAtKey.length);
      this.writeStamp(out, stamp(frameTs(b, off)));
    }
    const { fields } = this.p;
    for (let k = 0; k < fields.length; k++) {
      const key = this.keys[k];
      out.bytes(key, 0, key.length);
      const column = fields[k];
      if (column >= count) {
        const d = this.defaults[k];
        out.bytes(d, 0, d.length);
      } else if (!writeValue(out, b, starts[column])) return false;
    }
    if (this.idKey === undefined && this.createAtKey === undefined && fields.length === 0) out.ascii('{}');
    else out.ascii('}');
    return true;
  }
}

/** Where each value of a frame's value array starts, found without decoding them (msgpack-items.ts). */
export class ValueStarts {
  at = new Int32Array(16);

  /** The count of values of the frame `off..end`; -1 when its payload holds a type only the decoder reads. */
  find(b: Buffer, off: number, end: number): number {
    let at = off + FRAME_HEADER_BYTES;
    const t = b[at];
    let count: number;
    if (t >= 0x90 && t <= 0x9f) {
      count = t - 0x90;
      at += 1;
    } else if (t === 0xdc && at + 2 < end) {
      count = u16(b, at + 1);
      at += 3;
    } else if (t === 0xdd && at + 4 < end) {
      count = u32be(b, at + 1);
      at += 5;
    } else return -1;
    if (count > end - at) return -1;
    if (this.at.length < count) this.at = new Int32Array(count);
    const starts = this.at;
    for (let k = 0; k < count; k++) {
      const n = valueBytes(b, at, end);
      if (n < 0) return -1;
      starts[k] = at;
      at += n;
    }
    return count;
  }
}

/** Prints the msgpack value at `at` (one valueBytes accepted); false when only the decoder can tell its text. */
export function writeValue(out: JsonOut, b: Buffer, at: number): boolean {
  const t = b[at];
  if (t < 0x80) out.uint(t);
  else if (t >= 0xe0) out.int(t - 0x100);
  else if (t >= 0xa0 && t <= 0xbf) return writeString(out, b, at + 1, at + 1 + (t - 0xa0));
  else if (t === 0xc0) out.bytes(LITERAL_NULL, 0, 4);
  else if (t === 0xc2) out.bytes(LITERAL_FALSE, 0, 5);
  else if (t === 0xc3) out.bytes(LITERAL_TRUE, 0, 4);
  else if (t === 0xcb) out.float64(b, at + 1);
  else if (t === 0xcc) out.uint(b[at + 1]);
  else if (t === 0xcd) out.uint(u16(b, at + 1));
  else if (t === 0xce) out.uint(u32be(b, at + 1));
  else if (t === 0xd0) out.int((b[at + 1] << 24) >> 24);
  else if (t === 0xd1) out.int((u16(b, at + 1) << 16) >> 16);
  else if (t === 0xd2) out.int(u32be(b, at + 1) | 0);
  else if (t === 0xd9) return writeString(out, b, at + 2, at + 2 + b[at + 1]);
  else if (t === 0xda) return writeString(out, b, at + 3, at + 3 + u16(b, at + 1));
  else if (t === 0xdb) return writeString(out, b, at + 5, at + 5 + u32be(b, at + 1));
  else return false;
  return true;
}

function writeString(out: JsonOut, b: Buffer, start: number, end: number): boolean {
  const kind = stringKind(b, start, end);
  if (kind === UNSURE) return false;
  if (kind === ESCAPED) {
    out.utf8(JSON.stringify(b.toString('utf8', start, end)));
    return true;
  }
  out.room(end - start + 2)[out.pos++] = 0x22;
  out.bytes(b, start, end);
  out.buf[out.pos++] = 0x22;
  return true;
}
