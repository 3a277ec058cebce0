/**
 * The capped Lua allocator as a WebAssembly function (issue 32). Every Lua allocation and free goes
 * through the allocator; as a JS function (`addFunction`) each one crossed from wasm to JS and back into
 * wasm's `realloc`, 6 % of the worker's CPU on the sample rule. This one is a few dozen wasm instructions
 * in a module of its own that imports the Lua instance's `realloc` and `free`: wasm to wasm, no JS, except
 * to ask the clock before an allocation of LARGE_ALLOCATION_BYTES or more (as CappedAllocator does).
 *
 * It decides exactly as CappedAllocator (lua-raw.ts), which stays for a wasmoon whose exports could not be
 * captured; test/scripts/wasm-allocator.test.ts drives both with the same calls and compares them.
 * The counters are f64 globals behind exported functions: byte counts are integers far below 2^53, and JS
 * reads them without BigInt.
 */
import type { LuaWasm } from 'wasmoon';
import { CappedAllocator, LARGE_ALLOCATION_BYTES, type RawLua } from './lua-raw.js';

type WasmFunction = (...args: number[]) => number;

/** What the module imports: the Lua instance's realloc and free, and the invocation clock. */
export interface AllocatorImports {
  realloc(pointer: number, size: number): number;
  free(pointer: number): void;
  timeUp(): boolean;
}

/** Functions, not exported globals: a global's `value` is a C++ API call from JS, an export call is not. */
interface AllocatorInstance {
  exports: {
    alloc: WasmFunction;
    limit(max: number): void;
    used(): number;
    refused(): number;
    setUsed(used: number): void;
  };
}

interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => AllocatorInstance;
}

const I32 = 0x7f;
const F64 = 0x7c;

function f64Bytes(value: number): number[] {
  return [...new Uint8Array(new Float64Array([value]).buffer)];
}

function name(text: string): number[] {
  return [text.length, ...Buffer.from(text, 'latin1')];
}

/** An unsigned LEB128 number (lengths and counts in the binary format). */
function leb(value: number): number[] {
  const out: number[] = [];
  do {
    const byte = value & 0x7f;
    value >>>= 7;
    out.push(value === 0 ? byte : byte | 0x80);
  } while (value !== 0);
  return out;
}

/** A section: its id, then its bytes prefixed by their length. */
function section(id: number, bytes: number[]): number[] {
  return [id, ...leb(bytes.length), ...bytes];
}

// Function parameters: 0 ud, 1 pointer, 2 old size, 3 new size. Locals: 4 growth, 5 end (f64), 6 moved (i32).
// Globals: 0 used, 1 max (f64, 0 = no cap), 2 refused (i32). Imported functions: 0 realloc, 1 free, 2 timeUp.
const BODY: number[] = [
  0x02, 0x02, F64, 0x01, I32, // locals: 2 x f64, 1 x i32
  // New size 0: a free. Lua frees NULL too, which counts nothing.
  0x20, 3, 0x45, 0x04, 0x40,
  /**/ 0x20, 1, 0x04, 0x40,
  /*   */ 0x23, 0, 0x20, 2, 0xb8, 0xa1, 0x24, 0, // used -= old size
  /*   */ 0x20, 1, 0x10, 1, // free(pointer)
  /**/ 0x0b,
  /**/ 0x41, 0, 0x0f, // return 0
  0x0b,
  // growth = pointer ? new - old : new (old size is Lua's type tag for a new object)
  0x20, 1, 0x04, F64,
  /**/ 0x20, 3, 0xb8, 0x20, 2, 0xb8, 0xa1,
  0x05,
  /**/ 0x20, 3, 0xb8,
  0x0b, 0x21, 4,
  // end = used + growth
  0x23, 0, 0x20, 4, 0xa0, 0x21, 5,
  // capped = (new > old && max > 0 && end > max) || (growth >= LARGE && timeUp())
  0x20, 3, 0x20, 2, 0x4b, // new >u old
  0x23, 1, 0x44, ...f64Bytes(0), 0x64, 0x71, // && max > 0
  0x20, 5, 0x23, 1, 0x64, 0x71, // && end > max
  0x04, I32,
  /**/ 0x41, 1,
  0x05,
  /**/ 0x20, 4, 0x44, ...f64Bytes(LARGE_ALLOCATION_BYTES), 0x66, // growth >= LARGE
  /**/ 0x04, I32, 0x10, 2, 0x41, 0, 0x47, 0x05, 0x41, 0, 0x0b, // ? timeUp() != 0 : 0
  0x0b,
  // moved = capped ? 0 : realloc(pointer, new size)
  0x04, I32, 0x41, 0, 0x05, 0x20, 1, 0x20, 3, 0x10, 0, 0x0b,
  0x22, 6,
  // moved: used = end; refused: refused = 1
  0x04, 0x40, 0x20, 5, 0x24, 0, 0x05, 0x41, 1, 0x24, 2, 0x0b,
  0x20, 6,
  0x0b,
];

/** limit(max): max = max, refused = 0. used(), refused(), setUsed(v). */
const LIMIT_BODY = [0x00, 0x20, 0, 0x24, 1, 0x41, 0, 0x24, 2, 0x0b];
const USED_BODY = [0x00, 0x23, 0, 0x0b];
const REFUSED_BODY = [0x00, 0x23, 2, 0x0b];
const SET_USED_BODY = [0x00, 0x20, 0, 0x24, 0, 0x0b];

const MODULE_BYTES = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  // types: 0 (i32 i32) -> i32, 1 (i32) -> (), 2 () -> i32, 3 (i32 i32 i32 i32) -> i32, 4 (f64) -> (), 5 () -> f64
  ...section(1, [6, 0x60, 2, I32, I32, 1, I32, 0x60, 1, I32, 0, 0x60, 0, 1, I32, 0x60, 4, I32, I32, I32, I32, 1, I32, 0x60, 1, F64, 0, 0x60, 0, 1, F64]),
  ...section(2, [3, ...name('env'), ...name('realloc'), 0x00, 0, ...name('env'), ...name('free'), 0x00, 1, ...name('env'), ...name('timeUp'), 0x00, 2]),
  // functions 3 alloc, 4 limit, 5 used, 6 refused, 7 setUsed
  ...section(3, [5, 3, 4, 5, 2, 4]),
  ...section(6, [3, F64, 0x01, 0x44, ...f64Bytes(0), 0x0b, F64, 0x01, 0x44, ...f64Bytes(0), 0x0b, I32, 0x01, 0x41, 0, 0x0b]),
  ...section(7, [5, ...name('alloc'), 0x00, 3, ...name('limit'), 0x00, 4, ...name('used'), 0x00, 5, ...name('refused'), 0x00, 6, ...name('setUsed'), 0x00, 7]),
  ...section(10, [
    5,
    ...leb(BODY.length), ...BODY,
    ...leb(LIMIT_BODY.length), ...LIMIT_BODY,
    ...leb(USED_BODY.length), ...USED_BODY,
    ...leb(REFUSED_BODY.length), ...REFUSED_BODY,
    ...leb(SET_USED_BODY.length), ...SET_USED_BODY,
  ]),
]);

let compiled: object | undefined;

/** What the sandbox uses of an allocator: its function pointer for lua_setallocf, its counters, the cap. */
export interface LuaAllocator {
  readonly pointer: number;
  readonly used: number;
  /** Whether anything was refused since the last `limit`. */
  readonly refused: boolean;
  limit(bytes: number): void;
}

/**
 * The allocator for a sandbox: in wasm when `raw` calls the instance's own exports (captureWasmExports
 * found them), otherwise the JS one. `used`: bytes the Lua state holds already.
 */
export function cappedAllocator(lua: LuaWasm, raw: RawLua, exports: Record<string, unknown> | undefined, used: number, timeUp: () => boolean): LuaAllocator {
  if (exports !== undefined && raw.realloc === exports.realloc && raw.free === exports.free) {
    const addFunction = (fn: WasmFunction, signature: string): number =>
      lua.module.addFunction(fn as unknown as Parameters<typeof lua.module.addFunction>[0], signature);
    return new WasmCappedAllocator({ realloc: raw.realloc, free: raw.free, timeUp }, used, addFunction);
  }
  return new CappedAllocator(lua, raw, used, timeUp);
}

/** The allocator's counters and its wasm function. */
export class WasmCappedAllocator implements LuaAllocator {
  /** The instance's exports, read once: `Instance.exports` is an accessor into V8, and limit() runs twice a payload. */
  private readonly exports: AllocatorInstance['exports'];
  /** The function's index in the Lua instance's table (0 when built without one, in tests). */
  readonly pointer: number;

  constructor(imports: AllocatorImports, used: number, addFunction?: (fn: WasmFunction, signature: string) => number) {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    compiled ??= new wasm.Module(MODULE_BYTES);
    const { realloc, free, timeUp } = imports;
    const instance: AllocatorInstance = new wasm.Instance(compiled, { env: { realloc, free, timeUp } });
    this.exports = instance.exports;
    this.exports.setUsed(used);
    this.pointer = addFunction?.(this.exports.alloc, 'iiiii') ?? 0;
  }

  /** `(ud, pointer, oldSize, newSize) -> pointer`, Lua's lua_Alloc. */
  get alloc(): WasmFunction {
    return this.exports.alloc;
  }

  get used(): number {
    return this.exports.used();
  }

  /** Whether anything was refused since the last `limit`. */
  get refused(): boolean {
    return this.exports.refused() !== 0;
  }

  /** Caps the Lua heap at `bytes` (0: no cap) and forgets earlier refusals. */
  limit(bytes: number): void {
    this.exports.limit(bytes);
  }
}
