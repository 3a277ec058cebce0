/**
 * The Lua C API of wasmoon's WebAssembly instance, called directly.
 *
 * wasmoon 1.16 reaches every C function through emscripten's `cwrap`/`ccall`, with a debug build's
 * assertions that format template strings on every call: ~200 ns per call against ~12 ns for the
 * wasm export itself. Building one J2T result takes ~60 calls and one `rds:Save` ~25, so the hot
 * paths (the allocator, the instruction hook, `invoke`, `json:J2T`, `rds:*`) use the exports.
 *
 * The exports are not reachable through wasmoon's API: `captureWasmExports` picks them up while the
 * engine instantiates its module. Strings cross with emscripten's own conventions, so every value a
 * script sees or hands over is the same as through wasmoon's conversions (see `readCString`).
 */
import type { LuaWasm } from 'wasmoon';
import { WasmBlock } from './wasm-block.js';
import { replaceInvokeTrampoline } from './invoke-trampoline.js';

export const LUA_REGISTRYINDEX = -1000000 - 1000;
export const LUA_TNIL = 0;
export const LUA_TBOOLEAN = 1;
export const LUA_TNUMBER = 3;
export const LUA_TSTRING = 4;
export const LUA_TTABLE = 5;
export const LUA_TFUNCTION = 6;

const LUA_TYPE_NAMES = ['nil', 'boolean', 'userdata', 'number', 'string', 'table', 'function', 'userdata', 'thread'];

/** What Lua's `type` says of a value of type `type` (lua_type); an absent argument is nil to a Lua function. */
export function luaTypeName(type: number): string {
  return LUA_TYPE_NAMES[type] ?? 'nil';
}

/** The C functions used on hot paths; pointers and ints are numbers, lua_Integer is a BigInt. */
export interface RawLua {
  lua_settop(L: number, index: number): void;
  lua_gettop(L: number): number;
  lua_pushvalue(L: number, index: number): void;
  lua_checkstack(L: number, n: number): number;
  lua_rawgeti(L: number, index: number, n: bigint): number;
  lua_rawseti(L: number, index: number, n: bigint): void;
  lua_settable(L: number, index: number): void;
  lua_rawget(L: number, index: number): number;
  lua_rawset(L: number, index: number): void;
  lua_rawequal(L: number, a: number, b: number): number;
  lua_getmetatable(L: number, index: number): number;
  lua_setmetatable(L: number, index: number): number;
  lua_createtable(L: number, narr: number, nrec: number): void;
  lua_pushnil(L: number): void;
  lua_pushboolean(L: number, b: number): void;
  lua_pushinteger(L: number, n: bigint): void;
  lua_pushnumber(L: number, n: number): void;
  lua_pushlstring(L: number, s: number, len: number): number;
  lua_pushstring(L: number, s: number): number;
  lua_pushcclosure(L: number, fn: number, n: number): void;
  lua_type(L: number, index: number): number;
  lua_toboolean(L: number, index: number): number;
  lua_tonumberx(L: number, index: number, isnum: number): number;
  lua_tointegerx(L: number, index: number, isnum: number): bigint;
  lua_tolstring(L: number, index: number, len: number): number;
  lua_next(L: number, index: number): number;
  lua_topointer(L: number, index: number): number;
  lua_pcallk(L: number, nargs: number, nresults: number, errfunc: number, ctx: number, k: number): number;
  lua_error(L: number): number;
  lua_setallocf(L: number, f: number, ud: number): void;
  luaL_ref(L: number, t: number): number;
  luaL_unref(L: number, t: number, ref: number): void;
  luaL_where(L: number, level: number): void;
  malloc(size: number): number;
  free(pointer: number): void;
  realloc(pointer: number, size: number): number;
}


type WasmExports = Record<string, unknown>;
/** The part of the WebAssembly global used here (the project's lib settings do not declare it). */
interface WasmGlobal {
  instantiate: (...args: unknown[]) => Promise<unknown>;
}

/** Engine creations run one at a time, so each sees only its own instantiation. */
let creating: Promise<unknown> = Promise.resolve();

/**
 * Runs `create` (which instantiates wasmoon's module) and returns the exports of the instance it
 * made. `rawLua` checks that they belong to the engine's memory before using them.
 */
export function captureWasmExports<T>(create: () => Promise<T>): Promise<{ value: T; exports: WasmExports | undefined }> {
  const run = async (): Promise<{ value: T; exports: WasmExports | undefined }> => {
    const wasm = (globalThis as unknown as { WebAssembly: WasmGlobal }).WebAssembly;
    const original = wasm.instantiate;
    let captured: WasmExports | undefined;
    wasm.instantiate = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
      const trampoline = captured === undefined ? replaceInvokeTrampoline(args[1]) : undefined;
      const result = (await original.apply(this, args)) as { instance?: { exports: WasmExports }; exports?: WasmExports };
      const exports = result.instance?.exports ?? result.exports;
      if (captured === undefined && typeof exports?.lua_pcallk === 'function') {
        captured = exports;
        trampoline?.bind(exports);
      }
      return result;
    };
    try {
      return { value: await create(), exports: captured };
    } finally {
      wasm.instantiate = original;
    }
  };
  const result = creating.then(run, run);
  creating = result.catch(() => undefined);
  return result;
}

/**
 * The raw exports when captured, otherwise emscripten's `Module._name` wrappers (slower, same
 * signatures), so a different packaging of wasmoon still works.
 */
export function rawLua(lua: LuaWasm, exports: WasmExports | undefined): RawLua {
  const module = lua.module as unknown as Record<string, unknown>;
  const memory = exports?.memory as { buffer?: unknown } | undefined;
  const own = memory !== undefined && memory.buffer === lua.module.HEAPU8.buffer;
  const pick = <Name extends keyof RawLua>(name: Name): RawLua[Name] => {
    const direct = own ? exports?.[name] : undefined;
    const fn = typeof direct === 'function' ? direct : module[`_${name}`];
    if (typeof fn !== 'function') throw new Error(`wasmoon does not export ${name}`);
    return fn as RawLua[Name];
  };
  // One object literal: properties added one by one under computed names (a loop over the names) made V8
  // keep it as a dictionary, so every raw call on the hot paths was a dictionary lookup.
  return {
    lua_settop: pick('lua_settop'),
    lua_gettop: pick('lua_gettop'),
    lua_pushvalue: pick('lua_pushvalue'),
    lua_checkstack: pick('lua_checkstack'),
    lua_rawgeti: pick('lua_rawgeti'),
    lua_rawseti: pick('lua_rawseti'),
    lua_settable: pick('lua_settable'),
    lua_rawget: pick('lua_rawget'),
    lua_rawset: pick('lua_rawset'),
    lua_rawequal: pick('lua_rawequal'),
    lua_getmetatable: pick('lua_getmetatable'),
    lua_setmetatable: pick('lua_setmetatable'),
    lua_createtable: pick('lua_createtable'),
    lua_pushnil: pick('lua_pushnil'),
    lua_pushboolean: pick('lua_pushboolean'),
    lua_pushinteger: pick('lua_pushinteger'),
    lua_pushnumber: pick('lua_pushnumber'),
    lua_pushlstring: pick('lua_pushlstring'),
    lua_pushstring: pick('lua_pushstring'),
    lua_pushcclosure: pick('lua_pushcclosure'),
    lua_type: pick('lua_type'),
    lua_toboolean: pick('lua_toboolean'),
    lua_tonumberx: pick('lua_tonumberx'),
    lua_tointegerx: pick('lua_tointegerx'),
    lua_tolstring: pick('lua_tolstring'),
    lua_next: pick('lua_next'),
    lua_topointer: pick('lua_topointer'),
    lua_pcallk: pick('lua_pcallk'),
    lua_error: pick('lua_error'),
    lua_setallocf: pick('lua_setallocf'),
    luaL_ref: pick('luaL_ref'),
    luaL_unref: pick('luaL_unref'),
    luaL_where: pick('luaL_where'),
    malloc: pick('malloc'),
    free: pick('free'),
    realloc: pick('realloc'),
  };
}

interface StringWell {
  isWellFormed(): boolean;
}

const utf8Decoder = new TextDecoder('utf-8');

/** UTF-8 text in wasm memory: one reusable buffer for JS -> Lua strings, and the Lua -> JS decoding. */
export class WasmStrings {
  /** Where `write` puts a string. */
  private readonly buffer: WasmBlock;
  /** readRepeated's last text. */
  private repeatedText = '';
  /** The wasm memory as a Buffer over the buffer of `heapBytesOf` (emscripten's HEAPU8 when it was made). */
  private heapBytes: Buffer | undefined;
  private heapBytesOf: Uint8Array | undefined;
  /** A 4-byte cell for out-parameters (`size_t *len`). */
  readonly cell: number;

  constructor(
    private readonly lua: LuaWasm,
    private readonly raw: RawLua,
  ) {
    this.cell = raw.malloc(8);
    this.buffer = new WasmBlock(raw, 4096);
    this.buffer.reserve(4096);
  }

  /**
   * Writes `text` as emscripten's stringToUTF8 would (well-formed text is plain UTF-8; lone
   * surrogates keep emscripten's encoding) and returns [pointer, byte length].
   */
  write(text: string): number {
    const n = text.length;
    this.buffer.reserve(n * 3 + 1);
    const heap = this.lua.module.HEAPU8;
    const p = this.buffer.pointer;
    if (n <= 64) {
      let i = 0;
      for (; i < n; i++) {
        const c = text.charCodeAt(i);
        if (c >= 0x80) break;
        heap[p + i] = c;
      }
      if (i === n) {
        heap[p + n] = 0;
        return n;
      }
    }
    if ((text as unknown as StringWell).isWellFormed?.() !== false) {
      // A Buffer over the whole memory writes at an offset: encodeInto needed a view made per string.
      // Made again when emscripten replaces HEAPU8 (the memory grew); asking for buffers is a call into V8.
      if (this.heapBytesOf !== heap) {
        this.heapBytesOf = heap;
        this.heapBytes = Buffer.from(heap.buffer, heap.byteOffset, heap.byteLength);
      }
      const written = this.heapBytes!.write(text, p, this.buffer.capacity - 1, 'utf8');
      heap[p + written] = 0;
      return written;
    }
    return this.lua.module.stringToUTF8(text, p, this.buffer.capacity) as unknown as number;
  }

  /** The buffer `write` filled. */
  get data(): number {
    return this.buffer.pointer;
  }

  /** Pushes `text` with its full length (NUL bytes included): a rule's script. */
  pushFull(L: number, text: string): void {
    const length = this.write(text);
    this.raw.lua_pushlstring(L, this.buffer.pointer, length);
  }

  /** Pushes `bytes` as a Lua string of exactly their length. */
  pushBytes(L: number, bytes: Uint8Array): void {
    this.buffer.reserve(bytes.length + 1);
    this.lua.module.HEAPU8.set(bytes, this.buffer.pointer);
    this.raw.lua_pushlstring(L, this.buffer.pointer, bytes.length);
  }

  /** Pushes `text` as wasmoon's lua_pushstring does: a C string, so it ends at the first NUL. */
  pushC(L: number, text: string): void {
    const nul = text.indexOf('\0');
    this.write(nul < 0 ? text : text.slice(0, nul));
    this.raw.lua_pushstring(L, this.buffer.pointer);
  }

  /**
   * The string at `index` as `read` gives it, but decoded from at most `headBytes`; `restBytes` is
   * what was left unread (up to the NUL where `read` would stop). A script decides how long its error
   * messages are, and only their head is ever shown.
   */
  readHead(L: number, index: number, headBytes: number): { head: string; restBytes: number } {
    const pointer = this.raw.lua_tolstring(L, index, this.cell);
    const heap = this.lua.module.HEAPU8;
    const length = this.lua.module.HEAPU32[this.cell >> 2];
    if (length <= headBytes) return { head: readCString(heap, pointer, length), restBytes: 0 };
    const headNul = heap.subarray(pointer, pointer + headBytes).indexOf(0);
    if (headNul >= 0) return { head: readCString(heap, pointer, headNul), restBytes: 0 };
    const restNul = heap.subarray(pointer + headBytes, pointer + length).indexOf(0);
    return { head: readCString(heap, pointer, headBytes), restBytes: restNul >= 0 ? restNul : length - headBytes };
  }

  /**
   * The bytes of the string at `index` (a string or a number), NUL bytes included: a view of wasm memory,
   * good until the next allocation in the Lua state or here.
   */
  bytes(L: number, index: number): Uint8Array {
    const pointer = this.raw.lua_tolstring(L, index, this.cell);
    return this.lua.module.HEAPU8.subarray(pointer, pointer + this.lua.module.HEAPU32[this.cell >> 2]);
  }

  /**
   * read() of a string a script passes call after call (a model's uuid, a constant of its rule): the last
   * one read is compared byte by byte, which allocates nothing, instead of decoded again.
   */
  readRepeated(L: number, index: number): string {
    const pointer = this.raw.lua_tolstring(L, index, this.cell);
    const heap = this.lua.module.HEAPU8;
    const length = this.lua.module.HEAPU32[this.cell >> 2];
    if (sameAscii(this.repeatedText, heap, pointer, length)) return this.repeatedText;
    this.repeatedText = readCString(heap, pointer, length);
    return this.repeatedText;
  }

  /** The string at `index` (which must be a string or a number) as wasmoon reads it. */
  /** luaL_where: `chunk:line: ` of the function `level` calls up (1: the caller of the running C function), or ''. */
  where(L: number, level: number): string {
    this.raw.luaL_where(L, level);
    const where = this.read(L, -1);
    this.raw.lua_settop(L, -2);
    return where;
  }

  read(L: number, index: number): string {
    const pointer = this.raw.lua_tolstring(L, index, this.cell);
    return readCString(this.lua.module.HEAPU8, pointer, this.lua.module.HEAPU32[this.cell >> 2]);
  }
}

/**
 * Short ASCII strings a worker reads over and over (the keys of every record a rule stores), decoded
 * once: building one a character at a time left about 1.6 KB of garbage per sample payload, which
 * made the worker's young generation overflow into its old one (docs/performance.md, "Memory").
 * Slots are picked by a hash of the bytes and checked byte by byte, so a collision only costs a decode.
 */
const SHORT_STRING_SLOTS = 256;
const shortStrings: string[] = new Array<string>(SHORT_STRING_SLOTS).fill('');

function sameAscii(text: string, heap: Uint8Array, pointer: number, count: number): boolean {
  if (text.length !== count) return false;
  for (let i = 0; i < count; i++) if (text.charCodeAt(i) !== heap[pointer + i]) return false;
  return true;
}

/**
 * emscripten's UTF8ToString, which wasmoon applies to every string it reads: the text ends at the
 * first NUL byte; more than 16 bytes go through TextDecoder, shorter ones through its own loop
 * (which treats malformed sequences its own way). `length` bounds the search for the NUL.
 */
export function readCString(heap: Uint8Array, pointer: number, length: number): string {
  let end = pointer;
  const limit = pointer + length;
  let ascii = true;
  let hash = 0;
  while (end < limit) {
    const b = heap[end];
    if (b === 0) break;
    if (b >= 0x80) ascii = false;
    hash = (Math.imul(hash, 31) + b) | 0;
    end++;
  }
  const count = end - pointer;
  if (count > 16) return utf8Decoder.decode(heap.subarray(pointer, end));
  let out = '';
  if (ascii) {
    const slot = hash & (SHORT_STRING_SLOTS - 1);
    const cached = shortStrings[slot];
    if (sameAscii(cached, heap, pointer, count)) return cached;
    for (let i = pointer; i < end; i++) out += String.fromCharCode(heap[i]);
    shortStrings[slot] = out;
    return out;
  }
  let b = pointer;
  while (b < end) {
    let f = heap[b++];
    if (f & 128) {
      const h = heap[b++] & 63;
      if ((f & 224) === 192) out += String.fromCharCode(((f & 31) << 6) | h);
      else {
        const m = heap[b++] & 63;
        if ((f & 240) === 224) f = ((f & 15) << 12) | (h << 6) | m;
        else f = ((f & 7) << 18) | (h << 12) | (m << 6) | (heap[b++] & 63);
        if (f < 65536) out += String.fromCharCode(f);
        else {
          f -= 65536;
          out += String.fromCharCode(55296 | (f >> 10), 56320 | (f & 1023));
        }
      }
    } else out += String.fromCharCode(f);
  }
  return out;
}

/**
 * Growth at or above this is refused once the invocation's time is up. One VM instruction
 * (`string.rep`, `..`, `table.concat`) can build megabytes, so counting instructions alone lets a
 * loop of them run seconds past the limit; with this, the overshoot is one such allocation.
 */
export const LARGE_ALLOCATION_BYTES = 64 * 1024;

/**
 * The Lua allocator with a cap, as wasmoon's `traceAllocations` one, but calling malloc's exports
 * directly: every Lua allocation and free passes through it. A refusal becomes Lua's
 * "not enough memory" error in whatever code asked.
 */
export class CappedAllocator {
  used: number;
  private max = 0;
  /** Whether anything was refused since the last `limit`. */
  refused = false;
  readonly pointer: number;
  /** Lua's userdata for it: none. */
  readonly ud = 0;

  /** `timeUp` is asked before each large allocation; true refuses it. */
  constructor(lua: LuaWasm, raw: RawLua, used: number, timeUp: () => boolean) {
    this.used = used;
    const { realloc, free } = raw;
    this.pointer = lua.module.addFunction((_ud: number, pointer: number, oldSize: number, newSize: number): number => {
      if (newSize === 0) {
        if (pointer) {
          this.used -= oldSize;
          free(pointer);
        }
        return 0;
      }
      const growth = pointer ? newSize - oldSize : newSize;
      const end = this.used + growth;
      const capped = (newSize > oldSize && this.max > 0 && end > this.max) || (growth >= LARGE_ALLOCATION_BYTES && timeUp());
      const moved = capped ? 0 : realloc(pointer, newSize);
      if (moved) this.used = end;
      else this.refused = true;
      return moved;
    }, 'iiiii');
  }

  /** Caps the Lua heap at `bytes` (0: no cap) and forgets earlier refusals. */
  limit(bytes: number): void {
    this.max = bytes;
    this.refused = false;
  }
}
