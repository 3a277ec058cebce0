/**
 * The byte writer record-json.ts prints into: one Buffer, doubled when full, with the few ways a JSON
 * token gets in (copied bytes, ASCII, a JS string as JSON.stringify prints it, integers printed digit by
 * digit, numbers as JavaScript prints them).
 */

/** A growing byte buffer that JSON text is written into. */
export class JsonOut {
  buf: Buffer;
  pos = 0;

  constructor(bytes: number) {
    this.buf = Buffer.allocUnsafe(Math.max(256, bytes));
  }

  /** Makes room for `bytes` more and returns the buffer to write them to (it may be a new one). */
  room(bytes: number): Buffer {
    if (this.pos + bytes > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
      this.buf.copy(next, 0, 0, this.pos);
      this.buf = next;
    }
    return this.buf;
  }

  bytes(src: Buffer, start: number, end: number): void {
    const b = this.room(end - start);
    let p = this.pos;
    if (end - start > 32) p += src.copy(b, p, start, end);
    else for (let i = start; i < end; i++) b[p++] = src[i];
    this.pos = p;
  }

  /** Text known to be ASCII. */
  ascii(s: string): void {
    const b = this.room(s.length);
    let p = this.pos;
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
    this.pos = p;
  }

  utf8(s: string): void {
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
  }

  /** A JS string as JSON.stringify prints it. */
  string(s: string): void {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.utf8(JSON.stringify(s));
    }
    const b = this.room(s.length + 2);
    let p = this.pos;
    b[p++] = 0x22;
    for (let i = 0; i < s.length; i++) b[p++] = s.charCodeAt(i);
    b[p++] = 0x22;
    this.pos = p;
  }

  /** A non-negative safe integer. */
  uint(v: number): void {
    let digits = 1;
    for (let t = v; t >= 10; t = Math.floor(t / 10)) digits++;
    const b = this.room(digits);
    let p = this.pos + digits;
    this.pos = p;
    do {
      const r = v % 10;
      b[--p] = 0x30 + r;
      v = (v - r) / 10;
    } while (v > 0);
  }

  int(v: number): void {
    if (v < 0) {
      this.room(1)[this.pos++] = 0x2d;
      v = -v;
    }
    this.uint(v);
  }

  /** A number as JSON.stringify prints it: NaN and the infinities are `null`. */
  number(v: number): void {
    if (Number.isSafeInteger(v)) this.int(v);
    else if (Number.isFinite(v)) this.ascii(String(v));
    else this.ascii('null');
  }
}
