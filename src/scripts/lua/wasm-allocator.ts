/**
 * The capped Lua allocator in WebAssembly (lua-alloc.c, issue 32). Every Lua allocation and free goes
 * through the allocator; as a JS function (`addFunction`) each one crossed from wasm to JS and back into
 * wasm's `realloc`, 6 % of the worker's CPU on the sample rule. This one is a module of its own that
 * imports the Lua instance's memory, `realloc` and `free`: wasm to wasm, no JS, except to ask the clock
 * before an allocation of LARGE_ALLOCATION_BYTES or more (as CappedAllocator does). It also keeps small
 * freed blocks for the next allocation of the same size, where the instance's malloc and free were about
 * 7 % of the worker on the sample rule (lua-alloc.c says how, and its bounds).
 *
 * It decides exactly as CappedAllocator (lua-raw.ts), which stays for a wasmoon whose exports could not be
 * captured; test/scripts/wasm-allocator.test.ts drives both with the same calls and compares them, and
 * checks that no block it hands out overlaps another one Lua holds.
 */
import type { LuaWasm } from 'wasmoon';
import { CappedAllocator, LARGE_ALLOCATION_BYTES, type RawLua } from './lua-raw.js';
import { LUA_ALLOC_WASM_BASE64 } from './wasm-bytes.js';

type WasmFunction = (...args: number[]) => number;

/** What the module imports: the Lua instance's memory, realloc and free, and the invocation clock. */
export interface AllocatorImports {
  memory: object;
  realloc(pointer: number, size: number): number;
  free(pointer: number): void;
  timeUp(): boolean;
}

/** lua-alloc.c's exports; its state block (`state`) is the allocator's Lua userdata. */
interface AllocatorInstance {
  exports: {
    alloc: WasmFunction;
    alloc_state_bytes(): number;
    alloc_init(state: number, used: number, largeBytes: number): void;
    alloc_limit(state: number, max: number): void;
    alloc_used(state: number): number;
    alloc_refused(state: number): number;
  };
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => AllocatorInstance;
}

let compiled: object | undefined;

/** What the sandbox uses of an allocator: its function pointer and userdata for lua_setallocf, its counters, the cap. */
export interface LuaAllocator {
  readonly pointer: number;
  /** The userdata Lua passes to every call of the function at `pointer`. */
  readonly ud: number;
  readonly used: number;
  /** Whether anything was refused since the last `limit`. */
  readonly refused: boolean;
  limit(bytes: number): void;
}

/**
 * The allocator for a sandbox: in wasm when `raw` calls the instance's own exports (captureWasmExports
 * found them, with its memory), otherwise the JS one. `used`: bytes the Lua state holds already.
 */
export function cappedAllocator(lua: LuaWasm, raw: RawLua, exports: Record<string, unknown> | undefined, used: number, timeUp: () => boolean): LuaAllocator {
  if (exports !== undefined && typeof exports.memory === 'object' && raw.realloc === exports.realloc && raw.free === exports.free) {
    const addFunction = (fn: WasmFunction, signature: string): number =>
      lua.module.addFunction(fn as unknown as Parameters<typeof lua.module.addFunction>[0], signature);
    return new WasmCappedAllocator({ memory: exports.memory as object, realloc: raw.realloc, free: raw.free, timeUp }, used, addFunction);
  }
  return new CappedAllocator(lua, raw, used, timeUp);
}

/** The allocator's counters, its state block and its wasm function. */
export class WasmCappedAllocator implements LuaAllocator {
  /** The instance's exports, read once: `Instance.exports` is an accessor into V8, and limit() runs twice a payload. */
  private readonly exports: AllocatorInstance['exports'];
  /** The function's index in the Lua instance's table (0 when built without one, in tests). */
  readonly pointer: number;
  readonly ud: number;

  constructor(imports: AllocatorImports, used: number, addFunction?: (fn: WasmFunction, signature: string) => number) {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    compiled ??= new wasm.Module(Buffer.from(LUA_ALLOC_WASM_BASE64, 'base64'));
    const { memory, realloc, free, timeUp } = imports;
    const instance = new wasm.Instance(compiled, { env: { memory, realloc, free, timeUp } });
    this.exports = instance.exports;
    // The state lives in the instance's memory for as long as the Lua state does: it is never freed.
    this.ud = realloc(0, this.exports.alloc_state_bytes());
    if (this.ud === 0) throw new Error('no memory for the Lua allocator’s state');
    this.exports.alloc_init(this.ud, used, LARGE_ALLOCATION_BYTES);
    this.pointer = addFunction?.(this.exports.alloc, 'iiiii') ?? 0;
  }

  /** `(ud, pointer, oldSize, newSize) -> pointer`, Lua's lua_Alloc; `ud` must be this allocator's. */
  get alloc(): WasmFunction {
    return this.exports.alloc;
  }

  get used(): number {
    return this.exports.alloc_used(this.ud);
  }

  /** Whether anything was refused since the last `limit`. */
  get refused(): boolean {
    return this.exports.alloc_refused(this.ud) !== 0;
  }

  /** Caps the Lua heap at `bytes` (0: no cap) and forgets earlier refusals. */
  limit(bytes: number): void {
    this.exports.alloc_limit(this.ud, bytes);
  }
}
