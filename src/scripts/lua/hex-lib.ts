/**
 * The byte work of RHILEX's `hex` library (rhilexlib/hex_lib.go), `hex:Hexs2Bytes` and `hex:Bytes2Hexs`,
 * as raw Lua C functions over a string's bytes; the prelude (lua-libs.ts) turns the decoded string into
 * RHILEX's table of numbers. Decoding in Lua (a gsub callback per byte) cost ~1 µs a byte: a UDP_SERVER
 * datagram's hex `data` of 190 bytes took most of a worker's 200 µs a record.
 * Imports only lua-raw.ts (the raw C API).
 */
import type { LuaWasm } from 'wasmoon';
import { LUA_TNUMBER, LUA_TSTRING, type RawLua, type WasmStrings } from './lua-raw.js';

/** Nibble of each byte value, -1 for a byte that is not a hex digit (either case, as Go's). */
const NIBBLES = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) NIBBLES[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLES[0x41 + i] = 10 + i;
  NIBBLES[0x61 + i] = 10 + i;
}

/** strconv.IsPrint of a rune below 256: what Go's %#U shows beside the code point. */
function goIsPrint(code: number): boolean {
  if (code < 0x80) return code >= 0x20 && code < 0x7f;
  return code >= 0xa1 && code !== 0xad;
}

/** Go's hex.InvalidByteError text, `encoding/hex: invalid byte: %#U`. */
function invalidByte(code: number): string {
  const point = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  return `encoding/hex: invalid byte: ${goIsPrint(code) ? `${point} '${String.fromCharCode(code)}'` : point}`;
}

/**
 * Go's hex.DecodeString: the bytes, or its error. Pairs are checked in order, so an invalid byte is
 * reported before an odd length, unless the odd last byte is itself invalid.
 */
export function decodeGoHex(text: Uint8Array): { ok: true; bytes: Uint8Array } | { ok: false; error: string } {
  const out = new Uint8Array(text.length >> 1);
  let i = 1;
  for (; i < text.length; i += 2) {
    const high = NIBBLES[text[i - 1]];
    const low = NIBBLES[text[i]];
    if (high < 0) return { ok: false, error: invalidByte(text[i - 1]) };
    if (low < 0) return { ok: false, error: invalidByte(text[i]) };
    out[i >> 1] = (high << 4) | low;
  }
  if (text.length % 2 === 1) {
    const last = text[text.length - 1];
    return { ok: false, error: NIBBLES[last] < 0 ? invalidByte(last) : 'encoding/hex: odd length hex string' };
  }
  return { ok: true, bytes: out };
}

/** The C functions `__hex_decode(s)` (the bytes as a string, or nil and Go's error) and `__hex_encode(s)` (lower-case hex). */
export function hexCFunctions(lua: LuaWasm, raw: RawLua, strings: WasmStrings): { decode: number; encode: number } {
  /** gopher-lua's ToString: a string or a number's text; anything else is "". */
  const argBytes = (L: number): Uint8Array => {
    const type = raw.lua_type(L, 1);
    return type === LUA_TSTRING || type === LUA_TNUMBER ? strings.bytes(L, 1) : new Uint8Array(0);
  };
  const decode = lua.module.addFunction((L: number) => {
    const decoded = decodeGoHex(argBytes(L));
    if (!decoded.ok) {
      raw.lua_pushnil(L);
      strings.pushC(L, decoded.error);
      return 2;
    }
    strings.pushBytes(L, decoded.bytes);
    return 1;
  }, 'ii');
  const encode = lua.module.addFunction((L: number) => {
    // As bytes: a text push reserves three bytes a character.
    strings.pushBytes(L, Buffer.from(Buffer.from(argBytes(L)).toString('hex'), 'latin1'));
    return 1;
  }, 'ii');
  return { decode, encode };
}
