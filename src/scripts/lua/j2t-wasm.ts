/**
 * `json:J2T` inside wasm (j2t.c, beside this file): the module shares the Lua instance's memory and calls
 * its C API directly, so the text is read where Lua holds it.
 * - A JSON array is decoded into its tables, and no JS value is made. The sample rule's Modbus payloads
 *   are arrays of `{tag, value}` objects, and JSON.parse plus building their tables from JS was about a
 *   fifth of its worker time (docs/performance.md, issue 32).
 * - A flat object is scanned (flat-json.ts), so that `rds:Save` of it needs no JSON.parse; so is the
 *   table `rds:Save` is given, so that its record needs no walk from JS and no record object.
 * What the module does not take (see j2t.c) it leaves to LuaBridge's JS path, which decodes it as before.
 */
import { FLAT_STRUCT_BYTES, type FlatScan } from './flat-json.js';
import { J2T_WASM_BASE64 } from './wasm-bytes.js';
import type { RawLua } from './lua-raw.js';

const IMPORTED = [
  'lua_checkstack', 'lua_createtable', 'lua_rawseti', 'lua_pushlstring', 'lua_settable', 'lua_pushboolean', 'lua_pushinteger', 'lua_pushnumber',
  'lua_next', 'lua_type', 'lua_tolstring', 'lua_tonumberx', 'lua_toboolean', 'lua_pushnil', 'lua_settop',
] as const;

interface J2tInstance {
  exports: {
    j2t_array(L: number, scratch: number, text: number, length: number): number;
    j2t_scratch_bytes(): number;
    j2t_flat_scan(scratch: number, text: number, length: number): number;
    j2t_flat_offset(): number;
    j2t_flat_bytes(): number;
    j2t_table_scan(L: number, scratch: number, index: number): number;
  };
}

interface WasmMemory {
  readonly buffer: ArrayBuffer;
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => J2tInstance;
}

let compiled: object | undefined;

export class WasmJ2t {
  /**
   * Views of the instance's memory over the buffer of `viewsOf`, emscripten's HEAPU8, which it replaces
   * when the memory grows: comparing that view is a field read, where asking a view or the memory for
   * its buffer is a call into V8 each scan.
   */
  private viewsOf: Uint8Array | undefined;
  private i32: Int32Array;
  private f64: Float64Array;

  /** The instance's exports, read once: `Instance.exports` is an accessor into V8, and these run a few times a payload. */
  private readonly exports: J2tInstance['exports'];

  private constructor(
    instance: J2tInstance,
    private readonly memory: WasmMemory,
    private readonly scratch: number,
    /** Where the scan's struct flat sits in memory. */
    private readonly flat: number,
  ) {
    this.exports = instance.exports;
    this.i32 = new Int32Array(memory.buffer);
    this.f64 = new Float64Array(memory.buffer);
  }

  /**
   * The decoder for the Lua instance whose `exports` captureWasmExports found, when they hold its memory
   * and every function the module calls, and `raw` calls those same functions; otherwise undefined.
   */
  static create(exports: Record<string, unknown> | undefined, raw: RawLua): WasmJ2t | undefined {
    if (exports === undefined || typeof exports.memory !== 'object') return undefined;
    const env: Record<string, unknown> = { memory: exports.memory };
    for (const name of IMPORTED) {
      if (typeof exports[name] !== 'function' || exports[name] !== raw[name]) return undefined;
      env[name] = exports[name];
    }
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    compiled ??= new wasm.Module(Buffer.from(J2T_WASM_BASE64, 'base64'));
    const instance = new wasm.Instance(compiled, { env });
    const offset = instance.exports.j2t_flat_offset();
    // The layout flat-json.ts reads must be the module's: a module built otherwise is not used at all.
    if (instance.exports.j2t_flat_bytes() !== FLAT_STRUCT_BYTES || offset % 8 !== 0) return undefined;
    const scratch = raw.malloc(instance.exports.j2t_scratch_bytes());
    if (scratch === 0 || scratch % 8 !== 0) return undefined;
    return new WasmJ2t(instance, exports.memory as WasmMemory, scratch, scratch + offset);
  }

  /**
   * Pushes the array decoded from the `length` bytes at `text` (a Lua string of L) and answers true, or
   * pushes nothing and answers false.
   */
  decode(L: number, text: number, length: number): boolean {
    return this.exports.j2t_array(L, this.scratch, text, length) === 1;
  }

  /** Reads the `length` bytes at `pointer` (a Lua string) into `scan` as a flat object: its number of keys, or -1. */
  scanFlat(pointer: number, length: number, heap: Uint8Array, scan: FlatScan): number {
    const keys = this.exports.j2t_flat_scan(this.scratch, pointer, length);
    return keys < 0 || !this.copy(scan, keys, heap, pointer) ? -1 : keys;
  }

  /**
   * Reads the table at `index` (absolute) of L into `scan`: its number of entries, or -1. The scan names
   * the table's strings in `heap`, valid while the table is not changed and nothing allocates.
   */
  scanTable(L: number, index: number, heap: Uint8Array, scan: FlatScan): number {
    const keys = this.exports.j2t_table_scan(L, this.scratch, index);
    if (keys < 0) return -1;
    this.copy(scan, keys, heap);
    return keys;
  }

  private copy(scan: FlatScan, keys: number, heap: Uint8Array, text?: number): boolean {
    if (heap !== this.viewsOf) {
      if (heap.buffer !== this.memory.buffer) throw new Error('the heap given is not a view of the J2T instance memory');
      this.viewsOf = heap;
      this.i32 = new Int32Array(heap.buffer);
      this.f64 = new Float64Array(heap.buffer);
    }
    return scan.copyFrom(this.i32, this.f64, this.flat, keys, heap, text);
  }
}
