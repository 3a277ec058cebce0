/**
 * The hot library functions as raw Lua C functions: `json:J2T` and `rds:Save` / `rds:UpdateLast`.
 *
 * They do what wasmoon's generic bridge did (the same values reach Lua and the store, in the same
 * order, with the same table sizes, so `pairs` order is unchanged) with direct C API calls, and
 * without copying the whole argument list: `rds` walks the record table with `lua_next`.
 * Whatever the fast path does not convert (non-string keys, table or function values, a uuid that
 * is not a string) makes it return `true`, and the Lua side then takes the generic wasmoon path, so
 * every odd case keeps its former result.
 */
import type { LuaWasm } from 'wasmoon';
import { decodeGoBase64 } from './go-base64.js';
import { LUA_REGISTRYINDEX, LUA_TBOOLEAN, LUA_TNUMBER, LUA_TSTRING, LUA_TTABLE, readCString, type RawLua, type WasmStrings } from './lua-raw.js';

/**
 * Short strings J2T pushes (keys, tag names) are kept in the registry and pushed from there: one
 * call instead of encoding, hashing and interning them again for every payload.
 */
const CACHED_STRING_LENGTH_MAX = 32;
const CACHED_STRINGS_MAX = 1024;

/** The worker-side hooks `rds:*` call (the same as LibHost.store). */
export type StoreRecord = (kind: 'save' | 'update', uuid: unknown, record: Record<string, unknown>) => string | undefined;

const utf8Decoder = new TextDecoder();

/** JSON `null` has no Lua value (RHILEX drops the key). */
function dropNulls(_key: string, value: unknown): unknown {
  return value === null ? undefined : value;
}

/** emscripten's longjmp (a Lua error) is thrown as Infinity and must pass through untouched. */
function isLuaUnwind(err: unknown): boolean {
  return err === Infinity;
}

export class LuaBridge {
  /** The payload of the running invocation, kept on the Lua stack so its address stays its own. */
  private payloadPointer = 0;
  private payloadLength = 0;
  private payloadText = '';
  readonly j2tPointer: number;
  readonly base64J2tPointer: number;
  readonly savePointer: number;
  readonly updatePointer: number;
  private readonly cachedStrings = new Map<string, bigint>();

  constructor(
    private readonly lua: LuaWasm,
    private readonly raw: RawLua,
    private readonly strings: WasmStrings,
    private readonly store: StoreRecord,
  ) {
    const cfunction = (fn: (L: number) => number): number =>
      lua.module.addFunction((L: number) => {
        try {
          return fn(L);
        } catch (err) {
          if (isLuaUnwind(err)) throw err;
          raw.lua_settop(L, 0);
          strings.pushC(L, err instanceof Error ? err.message : String(err));
          return raw.lua_error(L);
        }
      }, 'ii');
    this.j2tPointer = cfunction((L) => this.j2t(L));
    this.base64J2tPointer = cfunction((L) => this.base64J2t(L));
    this.savePointer = cfunction((L) => this.record(L, 'save'));
    this.updatePointer = cfunction((L) => this.record(L, 'update'));
  }

  /**
   * Called by `invoke` with the payload on the stack at `index`: when a script decodes its `args`
   * unchanged, J2T reuses the JS string instead of decoding the bytes again. Only for text that the
   * decoding would give back identically (no NUL, well-formed).
   */
  setPayload(L: number, index: number, text: string): void {
    const wellFormed = (text as unknown as { isWellFormed?(): boolean }).isWellFormed?.() ?? false;
    if (!wellFormed || text.includes('\0')) {
      this.payloadPointer = 0;
      return;
    }
    this.payloadPointer = this.raw.lua_tolstring(L, index, this.strings.cell);
    this.payloadLength = this.lua.module.HEAPU32[this.strings.cell >> 2];
    this.payloadText = text;
  }

  clearPayload(): void {
    this.payloadPointer = 0;
    this.payloadText = '';
  }

  /** `j2t(text)`: the decoded value, or nil and JSON.parse's message; nothing for a top-level null. */
  private j2t(L: number): number {
    const { raw } = this;
    const pointer = raw.lua_tolstring(L, 1, this.strings.cell);
    const length = this.lua.module.HEAPU32[this.strings.cell >> 2];
    const text =
      pointer !== 0 && pointer === this.payloadPointer && length === this.payloadLength
        ? this.payloadText
        : readCString(this.lua.module.HEAPU8, pointer, length);
    return this.parseAndPush(L, text);
  }

  /**
   * `base64J2t(text)`: RHILEX's `json:base64J2T`, Go's StdEncoding then J2T: the decoded value, or nil
   * and the base64 or JSON error. Invalid UTF-8 in the decoded bytes becomes U+FFFD, as Go's JSON decoder
   * reads it.
   */
  private base64J2t(L: number): number {
    const pointer = this.raw.lua_tolstring(L, 1, this.strings.cell);
    const length = this.lua.module.HEAPU32[this.strings.cell >> 2];
    const decoded = decodeGoBase64(this.lua.module.HEAPU8.subarray(pointer, pointer + length));
    if (!decoded.ok) {
      this.raw.lua_pushnil(L);
      this.strings.pushC(L, decoded.error);
      return 2;
    }
    return this.parseAndPush(L, utf8Decoder.decode(decoded.bytes));
  }

  private parseAndPush(L: number, text: string): number {
    const { raw } = this;
    let value: unknown;
    try {
      value = text.includes('null') ? JSON.parse(text, dropNulls) : JSON.parse(text);
    } catch (err) {
      raw.lua_pushnil(L);
      this.strings.pushC(L, (err as Error).message);
      return 2;
    }
    if (value === undefined) return 0;
    this.push(L, value);
    return 1;
  }

  /** Pushes a JSON.parse result the way wasmoon's pushValue does (sizes, key order, integers). */
  private push(L: number, value: unknown): void {
    const { raw } = this;
    switch (typeof value) {
      case 'number':
        if (Number.isInteger(value)) raw.lua_pushinteger(L, BigInt(value));
        else raw.lua_pushnumber(L, value);
        return;
      case 'string':
        this.pushString(L, value);
        return;
      case 'boolean':
        raw.lua_pushboolean(L, value ? 1 : 0);
        return;
      case 'undefined':
        raw.lua_pushnil(L);
        return;
    }
    if (raw.lua_checkstack(L, 3) === 0) {
      this.strings.pushC(L, 'J2T: JSON nested too deeply');
      raw.lua_error(L);
    }
    if (Array.isArray(value)) {
      const n = value.length;
      raw.lua_createtable(L, n, 0);
      for (let i = 0; i < n; i++) {
        const item: unknown = value[i];
        // A dropped null leaves a hole: assigning nil to an absent key stores nothing.
        if (item === undefined) continue;
        this.push(L, item);
        raw.lua_rawseti(L, -2, BigInt(i + 1));
      }
      return;
    }
    const object = value as Record<string, unknown>;
    // Counted without an array of the names: this runs for every object of every payload.
    let keys = 0;
    for (const _key in object) keys++;
    raw.lua_createtable(L, 0, keys);
    for (const key in object) {
      this.pushString(L, key);
      this.push(L, object[key]);
      raw.lua_settable(L, -3);
    }
  }

  /** Pushes a string as a C string (it ends at the first NUL, as wasmoon pushed it). */
  private pushString(L: number, text: string): void {
    const { raw } = this;
    if (text.length > CACHED_STRING_LENGTH_MAX) {
      this.strings.pushC(L, text);
      return;
    }
    const cached = this.cachedStrings.get(text);
    if (cached !== undefined) {
      raw.lua_rawgeti(L, LUA_REGISTRYINDEX, cached);
      return;
    }
    this.strings.pushC(L, text);
    if (this.cachedStrings.size >= CACHED_STRINGS_MAX) {
      // Values that never repeat filled it: start over.
      for (const ref of this.cachedStrings.values()) raw.luaL_unref(L, LUA_REGISTRYINDEX, Number(ref));
      this.cachedStrings.clear();
    }
    raw.lua_pushvalue(L, -1);
    this.cachedStrings.set(text, BigInt(raw.luaL_ref(L, LUA_REGISTRYINDEX)));
  }

  /**
   * `save(uuid, t)` / `update(uuid, t)`: false when stored, the error string, or true when a key or
   * value needs the generic path.
   */
  private record(L: number, kind: 'save' | 'update'): number {
    const { raw, strings } = this;
    if (raw.lua_type(L, 1) !== LUA_TSTRING || raw.lua_type(L, 2) !== LUA_TTABLE) {
      raw.lua_pushboolean(L, 1);
      return 1;
    }
    const input: Record<string, unknown> = {};
    raw.lua_pushnil(L);
    while (raw.lua_next(L, 2) !== 0) {
      if (raw.lua_type(L, -2) !== LUA_TSTRING) {
        raw.lua_settop(L, 2);
        raw.lua_pushboolean(L, 1);
        return 1;
      }
      let value: unknown;
      switch (raw.lua_type(L, -1)) {
        case LUA_TNUMBER:
          value = raw.lua_tonumberx(L, -1, 0);
          break;
        case LUA_TSTRING:
          value = strings.read(L, -1);
          break;
        case LUA_TBOOLEAN:
          value = raw.lua_toboolean(L, -1) !== 0;
          break;
        default:
          raw.lua_settop(L, 2);
          raw.lua_pushboolean(L, 1);
          return 1;
      }
      input[strings.read(L, -2)] = value;
      raw.lua_settop(L, -2);
    }
    const error = this.store(kind, strings.read(L, 1), input);
    if (error === undefined) raw.lua_pushboolean(L, 0);
    else strings.pushC(L, error);
    return 1;
  }
}
