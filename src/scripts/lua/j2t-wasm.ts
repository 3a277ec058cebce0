/**
 * `json:J2T` of a JSON array decoded inside wasm (j2t.c, beside this file): the module shares the Lua
 * instance's memory and calls its C API directly, so the text is read where Lua holds it and no JS value
 * is made.
 * The sample rule's Modbus payloads are arrays of `{tag, value}` objects, and JSON.parse plus building
 * their tables from JS was about a fifth of its worker time (docs/performance.md, issue 32). What the
 * module does not take (see j2t.c) it leaves to LuaBridge's JS path, which decodes it as before.
 */
import { J2T_WASM_BASE64 } from './j2t-wasm-bytes.js';
import type { RawLua } from './lua-raw.js';

const IMPORTED = [
  'lua_checkstack', 'lua_createtable', 'lua_rawseti', 'lua_pushlstring', 'lua_settable', 'lua_pushboolean', 'lua_pushinteger', 'lua_pushnumber',
] as const;

interface J2tInstance {
  exports: {
    j2t_array(L: number, scratch: number, text: number, length: number): number;
    j2t_scratch_bytes(): number;
  };
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => J2tInstance;
}

let compiled: object | undefined;

export class WasmArrayJ2t {
  private constructor(
    private readonly instance: J2tInstance,
    private readonly scratch: number,
  ) {}

  /**
   * The decoder for the Lua instance whose `exports` captureWasmExports found, when they hold its memory
   * and every function the module calls, and `raw` calls those same functions; otherwise undefined.
   */
  static create(exports: Record<string, unknown> | undefined, raw: RawLua): WasmArrayJ2t | undefined {
    if (exports === undefined || typeof exports.memory !== 'object') return undefined;
    const env: Record<string, unknown> = { memory: exports.memory };
    for (const name of IMPORTED) {
      if (typeof exports[name] !== 'function' || exports[name] !== raw[name]) return undefined;
      env[name] = exports[name];
    }
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    compiled ??= new wasm.Module(Buffer.from(J2T_WASM_BASE64, 'base64'));
    const instance = new wasm.Instance(compiled, { env });
    return new WasmArrayJ2t(instance, raw.malloc(instance.exports.j2t_scratch_bytes()));
  }

  /**
   * Pushes the array decoded from the `length` bytes at `text` (a Lua string of L) and answers true, or
   * pushes nothing and answers false.
   */
  decode(L: number, text: number, length: number): boolean {
    return this.instance.exports.j2t_array(L, this.scratch, text, length) === 1;
  }
}
