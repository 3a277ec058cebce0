/**
 * The NDJSON lines of the records read ahead (message.ts has the format), written as UTF-8 straight into
 * one Buffer, each followed by '\n': a batch's body is then one copy of its first lines. Building each
 * line as a string cost more than reading the record (the strings were concatenated piece by piece,
 * flattened by the join and encoded again by Buffer.from; docs/performance.md, issue 14).
 *
 * The text is the one JSON.stringify prints for the envelope and the attributes; the length the batch cut
 * counts (batching.ts) is that of the text as a JavaScript string, as it was when lines were strings, so
 * batch boundaries and bodies are the same as those of earlier versions (the hub's dedup window drops what
 * an upgraded gateway sends again).
 */
import type { RecordView } from '../store/types.js';
import { BATCH_BYTES_MAX } from './batching.js';
import { ENVELOPE_KEYS, type ShippedModel } from './message.js';

const INITIAL_BYTES = 64 * 1024;
/** Capacity kept after a batch is taken; a buffer grown past it for large records is given back. */
const KEPT_BYTES = 2 * BATCH_BYTES_MAX;
/** Strings longer than this are encoded by Buffer.write; shorter ones by a loop (no native call). */
const LOOP_CHARS_MAX = 64;
/** Pieces longer than this are copied by Uint8Array.set. */
const LOOP_PIECE_BYTES_MAX = 24;
const NEWLINE = 0x0a;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const DOT = 0x2e;
const ZERO = 0x30;
/** Integers below this print as their digits (no exponent, exact). */
const INTEGER_MAX = 2 ** 53;
/**
 * Non-integers below this with at most FRACTION_DIGITS_MAX decimals print as those decimals: their spacing
 * (1e-4) is over 100 times a double's spacing there (2^-20), so that decimal is the only short one that
 * reads back as the value, and JavaScript prints a number as its shortest such decimal.
 */
const SCALED_MAX = 2 ** 33;
const FRACTION_DIGITS_MAX = 4;
const POW10 = [1, 10, 100, 1000, 10_000];

/** A text written once per model and key: its bytes, and its length as a string. */
interface Piece {
  bytes: Buffer;
  length: number;
}

function piece(text: string): Piece {
  return { bytes: Buffer.from(text), length: text.length };
}

export class LineBuffer {
  private buf = Buffer.allocUnsafe(INITIAL_BYTES);
  private pos = 0;
  /** Where the text of each line ends (its '\n' is there). */
  private ends: number[] = [];
  /** The length of each line as a JavaScript string. */
  private lengths: number[] = [];
  /** Of the line being written. */
  private length = 0;
  private readonly head: Piece;
  private readonly createAt = piece(',"create_at_ms":');
  /** `,"key":` of each attribute; null: an envelope key, not sent. */
  private readonly prefixes = new Map<string, Piece | null>();
  /** The keys of the last record in for-in order, and their prefixes: records of a model share them. */
  private shapeKeys: string[] = [];
  private shapePrefixes: Array<Piece | null> = [];

  constructor(readonly shipped: ShippedModel) {
    const m = shipped;
    this.head = piece(`{"gateway":${JSON.stringify(m.gateway)},"model":${JSON.stringify(m.model)},"generation":${JSON.stringify(m.generation)},"id":`);
  }

  /** Lines written and not yet taken. */
  get count(): number {
    return this.ends.length;
  }

  /** The length (as a string) of line `index`; the line after the last one is written from `r`. */
  lengthOf(r: RecordView, index: number): number {
    if (index < this.ends.length) return this.lengths[index];
    if (index !== this.ends.length) throw new Error(`uplink invariant violated: line ${index} written before line ${this.ends.length}`);
    this.write(r);
    return this.lengths[index];
  }

  /** The first `count` lines joined by '\n' (a copy: the batch may be sent again byte for byte); they are dropped. */
  take(count: number): Buffer {
    if (count < 1 || count > this.ends.length) throw new Error(`uplink invariant violated: take ${count} of ${this.ends.length} lines`);
    const end = this.ends[count - 1];
    const body = Buffer.allocUnsafe(end);
    this.buf.copy(body, 0, 0, end);
    const rest = end + 1;
    const kept = this.pos - rest;
    if (this.buf.length > KEPT_BYTES && kept < KEPT_BYTES / 2) {
      const smaller = Buffer.allocUnsafe(KEPT_BYTES);
      this.buf.copy(smaller, 0, rest, this.pos);
      this.buf = smaller;
    } else this.buf.copy(this.buf, 0, rest, this.pos);
    this.pos = kept;
    this.ends = this.ends.slice(count).map((e) => e - rest);
    this.lengths = this.lengths.slice(count);
    return body;
  }

  clear(): void {
    this.pos = 0;
    this.ends = [];
    this.lengths = [];
    if (this.buf.length > KEPT_BYTES) this.buf = Buffer.allocUnsafe(INITIAL_BYTES);
  }

  private write(r: RecordView): void {
    this.length = 0;
    this.piece(this.head);
    this.number(r.id);
    this.piece(this.createAt);
    this.number(r.create_at);
    let k = 0;
    for (const key in r) {
      const p = this.shapeKeys[k] === key ? this.shapePrefixes[k] : this.learn(k, key);
      k++;
      if (p === null) continue;
      const v = r[key];
      if (v === undefined) continue;
      this.piece(p);
      if (typeof v === 'number') this.number(v);
      else if (typeof v === 'string') this.string(v);
      else if (v === null) this.text('null');
      else if (typeof v === 'boolean') this.text(v ? 'true' : 'false');
      else this.text(JSON.stringify(v) ?? 'null');
    }
    this.room(1);
    this.buf[this.pos++] = 0x7d; // }
    this.length++;
    this.ends.push(this.pos);
    this.lengths.push(this.length);
    this.buf[this.pos++] = NEWLINE;
  }

  private learn(k: number, key: string): Piece | null {
    let p = this.prefixes.get(key);
    if (p === undefined) {
      p = ENVELOPE_KEYS.has(key) ? null : piece(`,${JSON.stringify(key)}:`);
      this.prefixes.set(key, p);
    }
    this.shapeKeys[k] = key;
    this.shapePrefixes[k] = p;
    return p;
  }

  /**
   * As String(v) prints it; most sensor values are integers or have a few decimals, and those are printed
   * here without the string (String of a double was a third of a line's cost).
   */
  private number(v: unknown): void {
    if (typeof v !== 'number' || !Number.isFinite(v)) return this.text(JSON.stringify(v) ?? 'null');
    const a = Math.abs(v);
    if (Number.isInteger(v)) {
      if (a < INTEGER_MAX) {
        if (v < 0) this.ascii(MINUS);
        return this.digits(a, 0);
      }
    } else if (a < SCALED_MAX) {
      for (let k = 1; k <= FRACTION_DIGITS_MAX; k++) {
        const scaled = a * POW10[k];
        if (Number.isInteger(scaled) && scaled / POW10[k] === a) {
          if (v < 0) this.ascii(MINUS);
          return this.decimal(scaled, k);
        }
      }
    }
    this.text(String(v));
  }

  /** `scaled` / 10^k with its trailing zeros dropped (not an integer). */
  private decimal(scaled: number, k: number): void {
    let m = scaled;
    let fraction = k;
    while (m % 10 === 0) {
      m /= 10;
      fraction--;
    }
    const unit = POW10[fraction];
    const whole = Math.floor(m / unit);
    this.digits(whole, 0);
    this.ascii(DOT);
    this.digits(m - whole * unit, fraction);
  }

  /** The digits of the integer `n` (0 <= n < 2^53), zero-padded to `width`; in int32 parts (a millisecond time has 13 digits). */
  private digits(n: number, width: number): void {
    if (n >= 1e9) {
      const high = Math.floor(n / 1e9);
      this.digits(high, width - 9);
      this.int32Digits(n - high * 1e9, 9);
      return;
    }
    let count = 1;
    for (let t = n | 0; t >= 10; t = (t / 10) | 0) count++;
    this.int32Digits(n, Math.max(count, width));
  }

  /** The last `count` digits of `n` (0 <= n < 1e9). */
  private int32Digits(n: number, count: number): void {
    this.room(count);
    const b = this.buf;
    let p = this.pos + count;
    let t = n | 0;
    for (let k = 0; k < count; k++) {
      const q = (t / 10) | 0;
      b[--p] = ZERO + t - q * 10;
      t = q;
    }
    this.pos += count;
    this.length += count;
  }

  private ascii(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
    this.length++;
  }

  /** As JSON.stringify prints it: printable ASCII as it is, anything else through JSON.stringify. */
  private string(v: string): void {
    const n = v.length;
    if (n > LOOP_CHARS_MAX) return this.text(JSON.stringify(v));
    this.room(n + 2);
    const b = this.buf;
    let p = this.pos;
    b[p++] = QUOTE;
    for (let k = 0; k < n; k++) {
      const c = v.charCodeAt(k);
      if (c < 0x20 || c >= 0x7f || c === QUOTE || c === BACKSLASH) return this.text(JSON.stringify(v));
      b[p++] = c;
    }
    b[p++] = QUOTE;
    this.pos = p;
    this.length += n + 2;
  }

  /** Keys are a few bytes: a loop costs less than a call of Uint8Array.set, which wins for the envelope. */
  private piece(p: Piece): void {
    const src = p.bytes;
    const n = src.length;
    this.room(n);
    const b = this.buf;
    if (n > LOOP_PIECE_BYTES_MAX) b.set(src, this.pos);
    else for (let k = 0, at = this.pos; k < n; k++) b[at++] = src[k];
    this.pos += n;
    this.length += p.length;
  }

  /** Writes `s` as UTF-8 (JSON text: lone surrogates are escaped already). */
  private text(s: string): void {
    const n = s.length;
    this.length += n;
    this.room(3 * n + 1);
    if (n <= LOOP_CHARS_MAX) {
      const b = this.buf;
      let p = this.pos;
      let k = 0;
      for (; k < n; k++) {
        const c = s.charCodeAt(k);
        if (c >= 0x80) break;
        b[p++] = c;
      }
      if (k === n) {
        this.pos = p;
        return;
      }
    }
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  private room(bytes: number): void {
    if (this.pos + bytes + 1 <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.pos + bytes + 1));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}
