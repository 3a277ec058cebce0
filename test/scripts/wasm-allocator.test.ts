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

/** Memory for the wasm allocator's tests: the calls' pointers lie below 2^24 + 256, the fake realloc's blocks from 2^25. */
const MEMORY_PAGES = 1024;
const { Memory } = (globalThis as unknown as { WebAssembly: { Memory: new (descriptor: { initial: number }) => { buffer: ArrayBuffer } } }).WebAssembly;
const FAKE_BLOCKS_AT = 1 << 25;

/** Sizes of freed blocks the wasm allocator keeps for the next allocation of that size (lua-alloc.c). */
const CACHED_SIZE_MIN = 8;
const CACHED_SIZE_MAX = 256;

/**
 * Drives an allocator built by `make` through `calls`, recording what it answered and asked. A failing
 * realloc stands for an instance out of memory, which a block freed earlier of the same size is not: a
 * new object of that size gets memory there (the wasm allocator's cache, or dlmalloc reusing the block
 * for the JS one), so the fake realloc succeeds then, whatever the call says.
 */
function run(calls: readonly Call[], make: (imports: { realloc(p: number, n: number): number; free(p: number): void; timeUp(): boolean }) => {
  alloc: (p: number, o: number, n: number) => number;
  used(): number;
  refused(): boolean;
  limit(bytes: number): void;
}): Trace {
  const trace: Trace = { results: [], used: [], refused: [], reallocs: [], frees: [] };
  let current: Call | undefined;
  let next = FAKE_BLOCKS_AT;
  const freedOfSize = new Map<number, number>();
  const allocator = make({
    realloc: (p, n) => {
      if (current === undefined) return (next += 2048) - 2048;
      trace.reallocs.push([p, n]);
      const reusable = p === 0 && (freedOfSize.get(n) ?? 0) > 0;
      return current.reallocFails && !reusable ? 0 : (next += 64);
    },
    free: (p) => void trace.frees.push(p),
    timeUp: () => current!.timeUp,
  });
  for (const call of calls) {
    current = call;
    allocator.limit(call.cap);
    const result = allocator.alloc(call.pointer, call.oldSize, call.newSize);
    const freed = call.pointer !== 0 && call.newSize === 0 && call.oldSize >= CACHED_SIZE_MIN && call.oldSize <= CACHED_SIZE_MAX;
    if (freed) freedOfSize.set(call.oldSize, (freedOfSize.get(call.oldSize) ?? 0) + 1);
    const reused = call.pointer === 0 && result !== 0 && (freedOfSize.get(call.newSize) ?? 0) > 0;
    if (reused) freedOfSize.set(call.newSize, freedOfSize.get(call.newSize)! - 1);
    trace.results.push(result);
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
    return { alloc: (p, o, n) => fn!(0, p, o, n), used: () => allocator.used, refused: () => allocator.refused, limit: (b) => allocator.limit(b) };
  });
}

function viaWasm(calls: readonly Call[]): Trace {
  return run(calls, (imports) => {
    const memory = new Memory({ initial: MEMORY_PAGES });
    const allocator = new WasmCappedAllocator({ memory, ...imports }, 1000);
    return { alloc: (p, o, n) => allocator.alloc(allocator.ud, p, o, n), used: () => allocator.used, refused: () => allocator.refused, limit: (b) => allocator.limit(b) };
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

/** What the allocator decided, call by call: answered or refused, the bytes it counts, its refusal flag. */
function decisions(trace: Trace): unknown {
  return { answered: trace.results.map((r) => r !== 0), used: trace.used, refused: trace.refused };
}

describe('the wasm allocator (issue 32)', () => {
  it('answers, counts and refuses as the JS allocator for any calls', () => {
    fc.assert(
      fc.property(fc.array(call, { maxLength: 40 }), (calls) => {
        expect(decisions(viaWasm(calls))).toEqual(decisions(viaJs(calls)));
      }),
      { numRuns: 300 },
    );
  });

  it('refuses growth past the cap and a large allocation once time is up, and keeps a small freed block for its size', () => {
    const base = { pointer: 0, oldSize: 5, reallocFails: false, timeUp: false, cap: 0 };
    const calls: Call[] = [
      { ...base, newSize: 100, cap: 1050 },
      { ...base, newSize: 100, cap: 1150 },
      { ...base, newSize: LARGE_ALLOCATION_BYTES, timeUp: true },
      { ...base, newSize: LARGE_ALLOCATION_BYTES - 1, timeUp: true },
      { ...base, pointer: 4160, oldSize: 100, newSize: 0, cap: 1 },
      { ...base, newSize: 10, reallocFails: true },
      { ...base, newSize: 100 },
    ];
    const trace = viaWasm(calls);
    expect(trace.results.map((r) => r !== 0)).toEqual([false, true, false, true, false, false, true]);
    const large = 1000 + LARGE_ALLOCATION_BYTES - 1;
    expect(trace.used).toEqual([1000, 1100, 1100, large + 100, large, large, large + 100]);
    expect(trace.refused).toEqual([true, false, true, false, false, true, false]);
    // The freed 100-byte block was kept, and is the next block of 100 bytes: no free, no malloc for it.
    expect(trace.frees).toEqual([]);
    expect(trace.results[6]).toBe(4160);
    expect(trace.reallocs).toEqual([[0, 100], [0, LARGE_ALLOCATION_BYTES - 1], [0, 10]]);
    expect(decisions(trace)).toEqual(decisions(viaJs(calls)));
  });

  it('never hands out a block that overlaps one Lua holds, and leaves the bytes of held blocks as they were', () => {
    // Lua's side: objects made, grown or shrunk, and freed, each filled with its own byte; the instance's
    // malloc is a bump allocator in a real memory, its realloc a move.
    const op = fc.oneof(
      fc.record({ kind: fc.constant('new' as const), size: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 300 }), fc.integer({ min: 1, max: 70_000 })) }),
      fc.record({ kind: fc.constant('free' as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant('resize' as const), pick: fc.nat(), size: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 1, max: 400 })) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const memory = new Memory({ initial: MEMORY_PAGES });
        const heap = () => new Uint8Array(memory.buffer);
        let next = 4096;
        const malloc = (n: number): number => {
          const at = next;
          next += (n + 7) & ~7;
          return at;
        };
        const allocator = new WasmCappedAllocator(
          {
            memory,
            realloc: (p, n) => {
              const at = malloc(n);
              if (p !== 0) heap().copyWithin(at, p, p + n);
              return at;
            },
            free: () => {},
            timeUp: () => false,
          },
          0,
        );
        const held: Array<{ at: number; size: number; fill: number }> = [];
        let fill = 0;
        const place = (at: number, size: number): void => {
          // Within what the instance's malloc handed out, and clear of every block Lua holds.
          expect(at >= 4096 && at + size <= next).toBe(true);
          for (const other of held) expect(at + size <= other.at || other.at + other.size <= at).toBe(true);
          fill = (fill + 1) & 0xff;
          heap().fill(fill, at, at + size);
          held.push({ at, size, fill });
        };
        for (const o of ops) {
          if (o.kind === 'new') place(allocator.alloc(allocator.ud, 0, 5, o.size), o.size);
          else if (held.length > 0) {
            const [block] = held.splice(o.pick % held.length, 1);
            if (o.kind === 'free') expect(allocator.alloc(allocator.ud, block.at, block.size, 0)).toBe(0);
            else place(allocator.alloc(allocator.ud, block.at, block.size, o.size), o.size);
          }
          for (const block of held) expect(heap().subarray(block.at, block.at + block.size).every((b) => b === block.fill)).toBe(true);
          expect(allocator.used).toBe(held.reduce((sum, block) => sum + block.size, 0));
        }
      }),
      { numRuns: 200 },
    );
  });
});
