/**
 * A flat record without JS objects: j2t.c's scans, read here.
 *
 * `j2t_table_scan` walks the table `rds:Save` was given, as the JS walk did: string keys, and string,
 * number and boolean values (anything else answers -1, and the JS walk takes the table as before).
 *
 * `j2t_flat_scan` reads a flat JSON object (a device's record) without JSON.parse: where each key and
 * value sits in the text, and each number's value. It takes only texts it reads exactly as JSON.parse
 * does, and answers -1 for anything else, which then goes to JSON.parse as before:
 * - one object, JSON whitespace around its tokens, at most FLAT_KEYS_MAX keys, no key twice, no
 *   `__proto__` key;
 * - keys and string values of ASCII without control characters, `"` or `\` inside: no escapes, so an
 *   offset in the bytes is the same offset in the JS string;
 * - values: such strings, `true`, `false`, and numbers of at most 17 digits without an exponent
 *   (`-?(0|[1-9][0-9]*)(\.[0-9]+)?`), except minus zero. Not `null`, no arrays or objects.
 * Of a number of at most 15 digits, the digits m and the scale 10^k are exact doubles (m < 10^15 < 2^53),
 * so j2t.c's m / 10^k is correctly rounded, as JSON.parse rounds the decimal it reads. A longer one (a
 * float printed in full, `22.009999999999998`) is converted here, by Number() of its text, which rounds
 * as JSON.parse does.
 */

import { readCString } from './lua-raw.js';

export const FLAT_KEYS_MAX = 64;

/** The kinds of value, as j2t.c numbers them. */
export const FLAT_STRING = 1;
export const FLAT_NUMBER = 2;
export const FLAT_TRUE = 3;
export const FLAT_FALSE = 4;
/** A number j2t.c leaves to Number() of its text (value start and end); copyFrom converts it. */
const FLAT_NUMBER_TEXT = 5;

/** j2t.c's struct flat, in bytes: keys (int) and padding, then number[64] (double), then five int[64]. */
const NUMBER_AT = 8;
const KEY_START_AT = NUMBER_AT + 8 * FLAT_KEYS_MAX;
const KEY_END_AT = KEY_START_AT + 4 * FLAT_KEYS_MAX;
const KIND_AT = KEY_END_AT + 4 * FLAT_KEYS_MAX;
const VALUE_START_AT = KIND_AT + 4 * FLAT_KEYS_MAX;
const VALUE_END_AT = VALUE_START_AT + 4 * FLAT_KEYS_MAX;
export const FLAT_STRUCT_BYTES = VALUE_END_AT + 4 * FLAT_KEYS_MAX;

/**
 * What a scan found, copied out of wasm memory; reused from scan to scan (no garbage a record). Its keys
 * and string values sit at `base` + their offsets in `heap`: offsets in the text of a J2T (base: the Lua
 * string's address), or addresses of the Lua strings of a table rds:Save was given (base 0), read as
 * LuaBridge reads them. A scan kept past allocations must be given the current `heap` before it is read:
 * emscripten replaces HEAPU8 when the memory grows (the bytes stay where they are).
 */
export class FlatScan {
  keys = 0;
  base = 0;
  heap: Uint8Array = new Uint8Array(0);
  readonly keyStart = new Int32Array(FLAT_KEYS_MAX);
  readonly keyEnd = new Int32Array(FLAT_KEYS_MAX);
  readonly kind = new Uint8Array(FLAT_KEYS_MAX);
  /** A string value's characters (between its quotes, in a text). */
  readonly valueStart = new Int32Array(FLAT_KEYS_MAX);
  readonly valueEnd = new Int32Array(FLAT_KEYS_MAX);
  readonly number = new Float64Array(FLAT_KEYS_MAX);

  /**
   * Takes the `keys` entries of the struct flat at byte `struct` of the memory the views and `heap` cover,
   * for a text at `text` (a text scan) or none (a table scan); false for a text whose number is minus zero,
   * which the lazy path leaves to JSON.parse.
   */
  copyFrom(i32: Int32Array, f64: Float64Array, struct: number, keys: number, heap: Uint8Array, text?: number): boolean {
    this.keys = keys;
    this.heap = heap;
    this.base = text ?? 0;
    const ints = struct >> 2;
    const doubles = struct >> 3;
    for (let i = 0; i < keys; i++) {
      this.keyStart[i] = i32[ints + KEY_START_AT / 4 + i];
      this.keyEnd[i] = i32[ints + KEY_END_AT / 4 + i];
      const kind = i32[ints + KIND_AT / 4 + i];
      this.kind[i] = kind;
      if (kind === FLAT_STRING) {
        this.valueStart[i] = i32[ints + VALUE_START_AT / 4 + i];
        this.valueEnd[i] = i32[ints + VALUE_END_AT / 4 + i];
      } else if (kind === FLAT_NUMBER) {
        this.number[i] = f64[doubles + NUMBER_AT / 8 + i];
      } else if (kind === FLAT_NUMBER_TEXT) {
        if (text === undefined) throw new Error('a table scan holds a number as text');
        const start = i32[ints + VALUE_START_AT / 4 + i];
        const number = Number(readCString(heap, text + start, i32[ints + VALUE_END_AT / 4 + i] - start));
        if (number === 0 && 1 / number < 0) return false;
        this.kind[i] = FLAT_NUMBER;
        this.number[i] = number;
      }
    }
    return true;
  }

  /** Whether key `i` is `name` (ASCII, as attribute names are). */
  keyIs(i: number, name: string): boolean {
    const start = this.keyStart[i];
    if (this.keyEnd[i] - start !== name.length) return false;
    const heap = this.heap;
    const at = this.base + start;
    for (let c = 0; c < name.length; c++) if (heap[at + c] !== name.charCodeAt(c)) return false;
    return true;
  }

  /** Value `i` as JSON.parse gives it from a text (its strings are ASCII without escapes), or as LuaBridge reads it from a table. */
  value(i: number): string | number | boolean {
    switch (this.kind[i]) {
      case FLAT_STRING:
        return readCString(this.heap, this.base + this.valueStart[i], this.valueEnd[i] - this.valueStart[i]);
      case FLAT_NUMBER:
        return this.number[i];
      default:
        return this.kind[i] === FLAT_TRUE;
    }
  }
}
