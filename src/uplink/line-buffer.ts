/**
 * The NDJSON lines of the records read ahead and not yet in a batch, as the store prints them from the
 * stored bytes (ModelLog.lines in message.ts's lineFormat), in one Buffer, each followed by '\n': a
 * batch's body is then one copy of its first lines. Decoding each record into an object and printing its
 * line here cost more main-thread time than the save() of the record (issue 14).
 *
 * With each line go its record's id, create_at and the line's length as a JavaScript string: the length
 * the batch cut counts (batching.ts) is that of the text as a string, as it was when lines were strings,
 * so batch boundaries and bodies are the same as those of earlier versions (the hub's dedup window drops
 * what an upgraded gateway sends again).
 */
import type { LineFormat, RecordLines } from '../store/read/record-lines.js';
import { BATCH_BYTES_MAX, type AheadLines } from './batching.js';
import { lineFormat, type ShippedModel } from './message.js';

const INITIAL_BYTES = 64 * 1024;
/** Capacity kept after a batch is taken; a buffer grown past it for large records is given back. */
const KEPT_BYTES = 2 * BATCH_BYTES_MAX;

export class LineBuffer implements AheadLines {
  private buf = Buffer.allocUnsafe(INITIAL_BYTES);
  private pos = 0;
  /** Where the text of each line ends (its '\n' is there). */
  private ends: number[] = [];
  ids: number[] = [];
  createAtMs: number[] = [];
  chars: number[] = [];
  readonly format: LineFormat;

  constructor(readonly shipped: ShippedModel) {
    this.format = lineFormat(shipped);
  }

  /** Lines held, not yet taken. */
  get count(): number {
    return this.ends.length;
  }

  /** Adds the lines of a read, which continues the lines held (ids in order). */
  append(lines: RecordLines): void {
    const n = lines.ids.length;
    if (n > 0 && this.ids.length > 0 && lines.ids[0] <= this.ids[this.ids.length - 1]) {
      throw new Error(`uplink invariant violated: lines from id ${lines.ids[0]} appended after id ${this.ids[this.ids.length - 1]}`);
    }
    this.room(lines.text.length);
    lines.text.copy(this.buf, this.pos);
    for (let k = 0; k < n; k++) {
      this.ends.push(this.pos + lines.ends[k]);
      this.ids.push(lines.ids[k]);
      this.createAtMs.push(lines.createAtMs[k]);
      this.chars.push(lines.chars[k]);
    }
    this.pos += lines.text.length;
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
    this.ids = this.ids.slice(count);
    this.createAtMs = this.createAtMs.slice(count);
    this.chars = this.chars.slice(count);
    return body;
  }

  clear(): void {
    this.pos = 0;
    this.ends = [];
    this.ids = [];
    this.createAtMs = [];
    this.chars = [];
    if (this.buf.length > KEPT_BYTES) this.buf = Buffer.allocUnsafe(INITIAL_BYTES);
  }

  private room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(2 * this.buf.length, this.pos + bytes));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }
}
