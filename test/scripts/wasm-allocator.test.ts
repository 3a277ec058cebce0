import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { LuaWasm } from 'wasmoon';
import { CappedAllocator, LARGE_ALLOCATION_BYTES, type RawLua } from '../../src/scripts/lua/lua-raw.js';
import { WasmCappedAllocator } from '../../src/scripts/lua/wasm-allocator.js';

/** One lua_Alloc call: pointer (0 = new object), old size (a type tag when new), new size (0 = free). */
interface Call {
  pointer: number;
  oldSize: number;
  newSize: number;
  /** What realloc answers (0: out of memory) and what the clock says, for this call. */
  reallocFails: boolean;
  timeUp: boolean;
  /** The cap set before the call (0: none). */
  cap: number;
}

interface Trace {
  results: number[];
  used: number[];
  refused: boolean[];
  reallocs: Array<[number, number]>;
  frees: number[];
}

/** Drives an allocator built by `make` through `calls`, recording what it answered and asked. */
function run(calls: readonly Call[], make: (imports: { realloc(p: number, n: number): number; free(p: number): void; timeUp(): boolean }) => {
  alloc: (ud: number, p: number, o: number, n: number) => number;
  used(): number;
  refused(): boolean;
  limit(bytes: number): void;
}): Trace {
  const trace: Trace = { results: [], used: [], refused: [], reallocs: [], frees: [] };
  let current: Call | undefined;
  let next = 4096;
  const allocator = make({
    realloc: (p, n) => {
      trace.reallocs.push([p, n]);
      return current!.reallocFails ? 0 : (next += 64);
    },
    free: (p) => void trace.frees.push(p),
    timeUp: () => current!.timeUp,
  });
  for (const call of calls) {
    current = call;
    allocator.limit(call.cap);
    trace.results.push(allocator.alloc(0, call.pointer, call.oldSize, call.newSize));
    trace.used.push(allocator.used());
    trace.refused.push(allocator.refused());
  }
  return trace;
}

function viaJs(calls: readonly Call[]): Trace {
  return run(calls, (imports) => {
    let fn: ((ud: number, p: number, o: number, n: number) => number) | undefined;
    const lua = { module: { addFunction: (f: typeof fn) => ((fn = f), 1) } } as unknown as LuaWasm;
    const raw = { realloc: imports.realloc, free: imports.free } as unknown as RawLua;
    const allocator = new CappedAllocator(lua, raw, 1000, imports.timeUp);
    return { alloc: fn!, used: () => allocator.used, refused: () => allocator.refused, limit: (b) => allocator.limit(b) };
  });
}

function viaWasm(calls: readonly Call[]): Trace {
  return run(calls, (imports) => {
    const allocator = new WasmCappedAllocator(imports, 1000);
    return { alloc: allocator.alloc, used: () => allocator.used, refused: () => allocator.refused, limit: (b) => allocator.limit(b) };
  });
}

const sizes = fc.oneof(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 200_000 }), fc.constantFrom(LARGE_ALLOCATION_BYTES - 1, LARGE_ALLOCATION_BYTES));
const call = fc.record({
  pointer: fc.oneof(fc.constant(0), fc.integer({ min: 8, max: 1 << 24 })),
  oldSize: sizes,
  newSize: sizes,
  reallocFails: fc.boolean(),
  timeUp: fc.boolean(),
  cap: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 400_000 })),
});

describe('the wasm allocator (issue 32)', () => {
  it('answers, counts, refuses, reallocs and frees as the JS allocator for any calls', () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 40 }), (calls) => {
        expect(viaWasm(calls)).toEqual(viaJs(calls));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses growth past the cap and a large allocation once time is up, and frees without asking', () => {
    const base = { pointer: 0, oldSize: 5, reallocFails: false, timeUp: false, cap: 0 };
    const calls: Call[] = [
      { ...base, newSize: 100, cap: 1050 },
      { ...base, newSize: 100, cap: 1150 },
      { ...base, newSize: LARGE_ALLOCATION_BYTES, timeUp: true },
      { ...base, newSize: LARGE_ALLOCATION_BYTES - 1, timeUp: true },
      { ...base, pointer: 4160, oldSize: 100, newSize: 0, cap: 1 },
      { ...base, newSize: 10, reallocFails: true },
    ];
    const trace = viaWasm(calls);
    expect(trace.results.map((r) => r !== 0)).toEqual([false, true, false, true, false, false]);
    expect(trace.used).toEqual([1000, 1100, 1100, 1100 + LARGE_ALLOCATION_BYTES - 1, 1000 + LARGE_ALLOCATION_BYTES - 1, 1000 + LARGE_ALLOCATION_BYTES - 1]);
    expect(trace.refused).toEqual([true, false, true, false, false, true]);
    expect(trace.frees).toEqual([4160]);
    expect(trace).toEqual(viaJs(calls));
  });
});
