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
const NEWLINE = 0x0a;

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
      else if (typeof v === 'string') this.text(JSON.stringify(v));
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

  private number(v: unknown): void {
    this.text(typeof v === 'number' && Number.isFinite(v) ? String(v) : JSON.stringify(v) ?? 'null');
  }

  private piece(p: Piece): void {
    this.room(p.bytes.length);
    this.pos += p.bytes.copy(this.buf, this.pos);
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
