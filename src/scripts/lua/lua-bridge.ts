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
import { FlatScan } from './flat-json.js';
import { decodeGoBase64 } from './go-base64.js';
import type { WasmJ2t } from './j2t-wasm.js';
import { LUA_REGISTRYINDEX, LUA_TBOOLEAN, LUA_TNUMBER, LUA_TSTRING, LUA_TTABLE, luaTypeName, readCString, type RawLua, type WasmStrings } from './lua-raw.js';

/**
 * Short strings J2T pushes (keys, tag names) are kept in the registry and pushed from there: one
 * call instead of encoding, hashing and interning them again for every payload.
 */
const CACHED_STRING_LENGTH_MAX = 32;
const CACHED_STRINGS_MAX = 1024;

/** The worker-side hooks `rds:*` call (LibHost's). */
export interface RecordStore {
  store(kind: 'save' | 'update', uuid: unknown, record: Record<string, unknown>): string | undefined;
  /**
   * The same for a record whose keys are not in the order a walk of the Lua table gives: a refusal whose
   * message may depend on that order answers null, and the caller asks `store` again with the table
   * walked. Absent: `store`'s answers do not depend on the order.
   */
  storeUnordered?(kind: 'save' | 'update', uuid: string, record: Record<string, unknown>): string | undefined | null;
  /**
   * The same for a record as a scan read it (flat-json.ts: a J2T text, or the table given), without a
   * record object: null when it leaves the record to the other two (a refusal, a value it does not take).
   */
  storeScanned?(kind: 'save' | 'update', uuid: string, scan: FlatScan): string | undefined | null;
}

/**
 * A J2T result that is a flat object of at most this many keys, from at most LAZY_TEXT_MAX characters of
 * JSON, starts as an empty table of its final sizes with the LAZY metatable (lua-libs.ts): filled, exactly
 * as it would have been built, the moment anything looks into it, and handed to `rds:*` straight from the
 * parsed object when nothing did. Only flat objects, so filling can raise nothing but the memory error.
 */
const LAZY_KEYS_MAX = 64;
const LAZY_TEXT_MAX = 16 * 1024;
/** Parsed objects of the running invocation's lazy tables, by the address of their JSON text (a miss parses the text again). */
const PARSED_CACHE_MAX = 256;
/**
 * Reads of the newest lazy table answered from its parsed object without filling it: the envelopes of the
 * network inputs are read for one or two fields (`body.payload`, `ev.action` and `ev.payload`). The next
 * read fills it, so a rule reading every field pays two calls more than before, not one per field.
 */
const LAZY_READS_MAX = 2;
/** Where `json:J2T(s)` finds s: the method's own table is index 1. */
const J2T_TEXT = 2;
const INT64_LIMIT = 2 ** 63;

/** Text that goes into Lua and comes back unchanged (pushC ends a string at NUL; lone surrogates are re-encoded). */
function roundTrips(text: string): boolean {
  return !text.includes('\0') && (text as unknown as { isWellFormed(): boolean }).isWellFormed();
}

/**
 * The number of keys when `value` may stay lazy: a plain object whose keys and values give the same
 * record from the parsed object as from the Lua table (no -0, which J2T pushes as the integer 0),
 * otherwise -1. `plain`: the JSON text held no escape. J2T's texts are
 * well-formed and free of NUL (a Lua string is decoded up to its first NUL, invalid UTF-8 as U+FFFD),
 * and without escapes every string JSON.parse gives is a piece of the text between two
 * quotes, so it is too: its check is skipped.
 */
function lazyKeys(value: unknown, textLength: number, plain: boolean): number {
  if (textLength > LAZY_TEXT_MAX || typeof value !== 'object' || value === null || Array.isArray(value)) return -1;
  const object = value as Record<string, unknown>;
  let keys = 0;
  for (const key in object) {
    if (++keys > LAZY_KEYS_MAX || (!plain && !roundTrips(key))) return -1;
    const item = object[key];
    switch (typeof item) {
      case 'string':
        if (!plain && !roundTrips(item)) return -1;
        break;
      case 'number':
        if (item === 0 && 1 / item < 0) return -1;
        break;
      case 'boolean':
        break;
      default:
        return -1;
    }
  }
  return keys;
}

const utf8Decoder = new TextDecoder();

/**
 * record[key] = value, also for the key `__proto__`, which an assignment would take as the object's
 * prototype: it stays a key, as JSON.parse makes it (a lazy table's record), and the record check refuses
 * it as an attribute no model has.
 */
export function setField(record: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
  else record[key] = value;
}

/** JSON `null` has no Lua value (RHILEX drops the key). */
function dropNulls(_key: string, value: unknown): unknown {
  return value === null ? undefined : value;
}

function parseJson(text: string): unknown {
  return text.includes('null') ? JSON.parse(text, dropNulls) : JSON.parse(text);
}

/** emscripten's longjmp (a Lua error) is thrown as Infinity and must pass through untouched. */
function isLuaUnwind(err: unknown): boolean {
  return err === Infinity;
}

export class LuaBridge {
  readonly j2tPointer: number;
  readonly base64J2tPointer: number;
  readonly savePointer: number;
  readonly updatePointer: number;
  readonly lazyFillPointer: number;
  readonly lazyGetPointer: number;
  private readonly cachedStrings = new Map<string, bigint>();
  /** Registry references of the LAZY metatable and of the weak-keyed table of lazy table -> JSON text. */
  private lazyMetaRef = 0n;
  private lazySourcesRef = 0n;
  private readonly parsed = new Map<number, { length: number; value: Record<string, unknown> }>();
  /**
   * The newest lazy table of the running invocation (its address) and its parsed object, found without
   * asking the sources table: a lazy table at that address can only be this one, since J2T alone makes
   * them and moves this on. An older one of the invocation goes to `parsed`.
   */
  private newestLazyTable = 0;
  private newestLazyText = 0;
  private newestLazyLength = 0;
  /** A lazy table was made this invocation; its text (at newestLazyText) is decoded and parsed only when needed. */
  private newestLazy = false;
  private newestLazyValue: Record<string, unknown> | undefined;
  /** Its text was scanned into `textScan`, which holds it until the next J2T. */
  private newestLazyScanned = false;
  private newestLazyReads = 0;
  private readonly textScan = new FlatScan();
  /** The table of the running rds:Save, scanned (held for that call only). */
  private readonly tableScan = new FlatScan();
  /**
   * The last long string a lazy read pushed, held in a registry slot so its address stays its own: J2T of
   * it (`json:J2T(ev.payload)`) takes the JS text instead of decoding the bytes again.
   */
  private keptStringRef = 0n;
  private keptStringPointer = 0;
  private keptStringLength = 0;
  private keptStringText = '';
  /** Off: every J2T text takes the JS path, also where `wasm` could decode it (LuaSandbox.wasmArrays). */
  useWasmArrays = true;
  /** Off: every flat object is parsed by JSON.parse at once, and rds:Save walks its table from JS (LuaSandbox.wasmScans). */
  useWasmScans = true;

  constructor(
    private readonly lua: LuaWasm,
    private readonly raw: RawLua,
    private readonly strings: WasmStrings,
    private readonly host: RecordStore,
    /** J2T's arrays decoded and flat objects scanned in wasm (j2t-wasm.ts); undefined when the instance does not allow it. */
    readonly wasm: WasmJ2t | undefined,
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
    this.lazyFillPointer = cfunction((L) => {
      if (raw.lua_type(L, 1) === LUA_TTABLE && this.isLazy(L, 1)) this.fill(L, 1);
      return 0;
    });
    this.lazyGetPointer = cfunction((L) => this.lazyGet(L));
  }

  /** Creates the LAZY metatable (left on the stack for the prelude to fill in) and the weak table of sources. */
  pushLazyMeta(L: number): void {
    const { raw } = this;
    raw.lua_createtable(L, 0, 0);
    raw.lua_createtable(L, 0, 1);
    this.strings.pushC(L, '__mode');
    this.strings.pushC(L, 'k');
    raw.lua_rawset(L, -3);
    raw.lua_setmetatable(L, -2);
    this.lazySourcesRef = BigInt(raw.luaL_ref(L, LUA_REGISTRYINDEX));
    raw.lua_pushboolean(L, 0);
    this.keptStringRef = BigInt(raw.luaL_ref(L, LUA_REGISTRYINDEX));
    raw.lua_createtable(L, 0, 4);
    raw.lua_pushvalue(L, -1);
    this.lazyMetaRef = BigInt(raw.luaL_ref(L, LUA_REGISTRYINDEX));
  }

  /** An invocation ended: its lazy tables are no longer the newest. */
  endInvocation(): void {
    this.newestLazy = false;
    this.newestLazyValue = undefined;
    this.newestLazyScanned = false;
    this.newestLazyReads = 0;
    // Held past its invocation, every parsed object would outlive a young-generation collection and be
    // promoted; a table kept for a later invocation (rare) has its text parsed again. Map.clear
    // allocates a fresh table even when empty: only when there is something to drop.
    if (this.parsed.size > 0) this.parsed.clear();
  }

  /**
   * `json:J2T(s)`, s at index 2: the decoded value, or nil and JSON.parse's message; nothing for a
   * top-level null. A number is decoded as tostring writes it, anything else is the error the Lua method
   * raised, at the caller's line. One C function where a Lua method called `type` and then the C one:
   * one call a payload instead of three.
   */
  private j2t(L: number): number {
    const type = this.raw.lua_type(L, J2T_TEXT);
    if (type !== LUA_TSTRING && type !== LUA_TNUMBER) {
      throw new Error(`${this.strings.where(L, 1)}bad argument #1 to 'J2T' (string expected, got ${luaTypeName(type)})`);
    }
    const { raw } = this;
    // A number becomes its string in place, as tostring writes it.
    const pointer = raw.lua_tolstring(L, J2T_TEXT, this.strings.cell);
    const length = this.lua.module.HEAPU32[this.strings.cell >> 2];
    if (this.useWasmArrays && this.wasm?.decode(L, pointer, length) === true) return 1;
    // A flat object is read where Lua holds it: no JS string of the text is made, nor parsed.
    if (pointer !== 0 && this.useWasmScans && this.wasm !== undefined && length <= LAZY_TEXT_MAX) {
      const keys = this.wasm.scanFlat(pointer, length, this.lua.module.HEAPU8, this.textScan);
      if (keys >= 0) {
        this.pushLazy(L, keys, undefined, pointer, length, J2T_TEXT);
        return 1;
      }
    }
    let text: string;
    if (pointer !== 0 && pointer === this.keptStringPointer && length === this.keptStringLength) text = this.keptStringText;
    else text = readCString(this.lua.module.HEAPU8, pointer, length);
    return this.parseAndPush(L, text, pointer, length, J2T_TEXT);
  }

  /**
   * `base64J2t(text)`: RHILEX's `json:base64J2T`, Go's StdEncoding then J2T: the decoded value, or nil
   * and the base64 or JSON error. Invalid UTF-8 in the decoded bytes becomes U+FFFD, as Go's JSON decoder
   * reads it.
   */
  private base64J2t(L: number): number {
    const decoded = decodeGoBase64(this.strings.bytes(L, 1));
    if (!decoded.ok) {
      this.raw.lua_pushnil(L);
      this.strings.pushC(L, decoded.error);
      return 2;
    }
    return this.parseAndPush(L, utf8Decoder.decode(decoded.bytes));
  }

  /**
   * `pointer`, `length`: the Lua string at `index` that `text` was read from, which a lazy table keeps. A
   * flat object that j2t.c's flat scan read did not come here: `rds:Save` of it takes the scan, its first
   * reads are answered from the scan, and what else looks into it parses its text then.
   */
  private parseAndPush(L: number, text: string, pointer = 0, length = 0, index = 0): number {
    let value: unknown;
    try {
      value = parseJson(text);
    } catch (err) {
      this.raw.lua_pushnil(L);
      this.strings.pushC(L, (err as Error).message);
      return 2;
    }
    if (value === undefined) return 0;
    const keys = pointer !== 0 ? lazyKeys(value, text.length, !text.includes('\\')) : -1;
    if (keys < 0) this.push(L, value);
    else this.pushLazy(L, keys, value as Record<string, unknown>, pointer, length, index);
    return 1;
  }

  /**
   * Pushes the lazy table of the text at `pointer`, the Lua string at `index` (`value` when parsed
   * already), empty with its final sizes, and makes it the newest.
   */
  private pushLazy(L: number, keys: number, value: Record<string, unknown> | undefined, pointer: number, length: number, index: number): void {
    const { raw } = this;
    // Its text is kept beside it (weak keys) to fill it later.
    raw.lua_createtable(L, 0, keys);
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.lazyMetaRef);
    raw.lua_setmetatable(L, -2);
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.lazySourcesRef);
    raw.lua_pushvalue(L, -2);
    raw.lua_pushvalue(L, index);
    raw.lua_rawset(L, -3);
    raw.lua_settop(L, -2);
    if (this.newestLazyValue !== undefined) {
      if (this.parsed.size >= PARSED_CACHE_MAX) this.parsed.clear();
      // Keyed by address: the text lives as long as the table, and a new text there is a new J2T, which sets it.
      this.parsed.set(this.newestLazyText, { length: this.newestLazyLength, value: this.newestLazyValue });
    }
    this.newestLazyTable = raw.lua_topointer(L, -1);
    this.newestLazyReads = 0;
    this.newestLazyText = pointer;
    this.newestLazyLength = length;
    this.newestLazy = true;
    this.newestLazyValue = value;
    this.newestLazyScanned = value === undefined;
  }

  /** The parsed object of the newest lazy table (its text lives while the table does: see pushLazy). */
  private newestParsed(): Record<string, unknown> {
    return (this.newestLazyValue ??= parseJson(readCString(this.lua.module.HEAPU8, this.newestLazyText, this.newestLazyLength)) as Record<string, unknown>);
  }

  /** The scan of the newest lazy table's text, over the memory as it is now. */
  private newestScan(): FlatScan {
    this.textScan.heap = this.lua.module.HEAPU8;
    return this.textScan;
  }

  /**
   * `t[k]` of a lazy table (its __index): for the first LAZY_READS_MAX reads of the newest one, the value
   * filling would have stored, pushed from the parsed object; otherwise, or for a key that is not plain
   * ASCII (its text would not survive the decoding exactly), the table is filled and read.
   */
  private lazyGet(L: number): number {
    const { raw } = this;
    if (this.newestLazy && raw.lua_topointer(L, 1) === this.newestLazyTable && ++this.newestLazyReads <= LAZY_READS_MAX) {
      // J2T's flat objects have string keys only.
      if (raw.lua_type(L, 2) !== LUA_TSTRING) {
        raw.lua_pushnil(L);
        return 1;
      }
      const key = this.asciiKey(L, 2);
      if (key !== undefined) {
        const item = this.newestLazyScanned ? this.scannedItem(key) : this.newestField(key);
        if (typeof item === 'string' && item.length > CACHED_STRING_LENGTH_MAX) this.pushKept(L, item);
        else this.push(L, item);
        return 1;
      }
    }
    this.fill(L, 1);
    raw.lua_pushvalue(L, 2);
    raw.lua_rawget(L, 1);
    return 1;
  }

  private newestField(key: string): unknown {
    const value = this.newestParsed();
    return Object.hasOwn(value, key) ? value[key] : undefined;
  }

  /** `key`'s value in the newest lazy table's scan, as JSON.parse would give it. */
  private scannedItem(key: string): unknown {
    const scan = this.newestScan();
    for (let i = 0; i < scan.keys; i++) if (scan.keyIs(i, key)) return scan.value(i);
    return undefined;
  }

  /** The string at `index` when its bytes are ASCII without NUL, otherwise undefined. */
  private asciiKey(L: number, index: number): string | undefined {
    const pointer = this.raw.lua_tolstring(L, index, this.strings.cell);
    const heap = this.lua.module.HEAPU8;
    const length = this.lua.module.HEAPU32[this.strings.cell >> 2];
    for (let i = pointer; i < pointer + length; i++) if (heap[i] === 0 || heap[i] >= 0x80) return undefined;
    return readCString(heap, pointer, length);
  }

  /** Pushes a long string as pushString does, and keeps it (see keptStringRef). */
  private pushKept(L: number, text: string): void {
    const { raw } = this;
    this.strings.pushC(L, text);
    raw.lua_pushvalue(L, -1);
    raw.lua_rawseti(L, LUA_REGISTRYINDEX, this.keptStringRef);
    this.keptStringPointer = raw.lua_tolstring(L, -1, this.strings.cell);
    this.keptStringLength = this.lua.module.HEAPU32[this.strings.cell >> 2];
    this.keptStringText = text;
  }

  private isLazy(L: number, index: number): boolean {
    const { raw } = this;
    if (raw.lua_getmetatable(L, index) === 0) return false;
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.lazyMetaRef);
    const lazy = raw.lua_rawequal(L, -1, -2) !== 0;
    raw.lua_settop(L, -3);
    return lazy;
  }

  /** The parsed object of the lazy table at `index` (absolute). */
  private lazyValue(L: number, index: number): Record<string, unknown> {
    const { raw } = this;
    if (this.newestLazy && raw.lua_topointer(L, index) === this.newestLazyTable) return this.newestParsed();
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.lazySourcesRef);
    raw.lua_pushvalue(L, index);
    raw.lua_rawget(L, -2);
    const pointer = raw.lua_tolstring(L, -1, this.strings.cell);
    const length = this.lua.module.HEAPU32[this.strings.cell >> 2];
    // The sources table holds the text while the table lives.
    raw.lua_settop(L, -3);
    if (pointer === 0) throw new Error('J2T: a lazy table lost its text');
    const cached = this.parsed.get(pointer);
    if (cached !== undefined && cached.length === length) return cached.value;
    return parseJson(readCString(this.lua.module.HEAPU8, pointer, length)) as Record<string, unknown>;
  }

  /** Fills the lazy table at `index` (absolute) as J2T would have built it, and makes it a plain table. */
  private fill(L: number, index: number): void {
    const { raw } = this;
    const object = this.lazyValue(L, index);
    if (raw.lua_checkstack(L, 3) === 0) throw new Error('J2T: no Lua stack to fill a table');
    for (const key in object) {
      this.pushString(L, key);
      this.push(L, object[key]);
      raw.lua_rawset(L, index);
    }
    raw.lua_pushnil(L);
    raw.lua_setmetatable(L, index);
    raw.lua_rawgeti(L, LUA_REGISTRYINDEX, this.lazySourcesRef);
    raw.lua_pushvalue(L, index);
    raw.lua_pushnil(L);
    raw.lua_rawset(L, -3);
    raw.lua_settop(L, -2);
  }

  /**
   * Pushes a JSON.parse result the way wasmoon's pushValue does (sizes, key order, integers), except an
   * integral number outside int64: wasmoon pushed it as an integer, wrapped (1e19 became a negative one,
   * and a rule stored that); it is a float here, as RHILEX's Lua numbers are.
   */
  private push(L: number, value: unknown): void {
    const { raw } = this;
    switch (typeof value) {
      case 'number':
        if (Number.isInteger(value) && value >= -INT64_LIMIT && value < INT64_LIMIT) raw.lua_pushinteger(L, BigInt(value));
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
    if (raw.lua_type(L, 2) === LUA_TTABLE && this.isLazy(L, 2)) {
      if (raw.lua_type(L, 1) === LUA_TSTRING) {
        // Untouched since J2T: the parsed object is the record a walk of the table would give.
        const uuid = strings.readRepeated(L, 1);
        if (this.newestLazyScanned && this.host.storeScanned && raw.lua_topointer(L, 2) === this.newestLazyTable) {
          const error = this.host.storeScanned(kind, uuid, this.newestScan());
          if (error !== null) {
            if (error === undefined) raw.lua_pushboolean(L, 0);
            else strings.pushC(L, error);
            return 1;
          }
        }
        const value = this.lazyValue(L, 2);
        const error = this.host.storeUnordered ? this.host.storeUnordered(kind, uuid, value) : this.host.store(kind, uuid, value);
        if (error !== null) {
          if (error === undefined) raw.lua_pushboolean(L, 0);
          else strings.pushC(L, error);
          return 1;
        }
      }
      this.fill(L, 2);
    }
    if (raw.lua_type(L, 1) !== LUA_TSTRING || raw.lua_type(L, 2) !== LUA_TTABLE) {
      raw.lua_pushboolean(L, 1);
      return 1;
    }
    if (kind === 'save' && this.useWasmScans && this.host.storeScanned && this.wasm !== undefined) {
      // Read before the scan: decoding the uuid allocates nothing in Lua, but the scan's strings must stay put.
      const uuid = strings.readRepeated(L, 1);
      if (this.wasm.scanTable(L, 2, this.lua.module.HEAPU8, this.tableScan) >= 0) {
        const error = this.host.storeScanned(kind, uuid, this.tableScan);
        if (error !== null) {
          if (error === undefined) raw.lua_pushboolean(L, 0);
          else strings.pushC(L, error);
          return 1;
        }
      }
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
      setField(input, strings.read(L, -2), value);
      raw.lua_settop(L, -2);
    }
    const error = this.host.store(kind, strings.readRepeated(L, 1), input);
    if (error === undefined) raw.lua_pushboolean(L, 0);
    else strings.pushC(L, error);
    return 1;
  }
}
