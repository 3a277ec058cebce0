/**
 * WasmBlock, the growing C buffer of WasmStrings and the payload window, against the Lua instance's own
 * malloc and free: it grows by doubling from its least size, and a malloc that fails leaves it empty,
 * so the next reserve asks again instead of handing out address 0 with the old capacity.
 */
import { describe, expect, it } from 'vitest';
import { LuaFactory } from 'wasmoon';
import { captureWasmExports, rawLua } from '../../src/scripts/lua/lua-raw.js';
import { WasmBlock } from '../../src/scripts/lua/wasm-block.js';

describe('WasmBlock', () => {
  it('grows by doubling, and after a malloc that failed asks again', async () => {
    const { value: engine, exports } = await captureWasmExports(() => new LuaFactory().createEngine());
    const raw = rawLua(engine.global.lua, exports);
    let failNext = false;
    const calls: number[] = [];
    const block = new WasmBlock(
      {
        malloc: (bytes) => {
          calls.push(bytes);
          if (failNext) {
            failNext = false;
            return 0;
          }
          return raw.malloc(bytes);
        },
        free: (pointer) => raw.free(pointer),
      },
      4096,
    );
    block.reserve(10);
    expect([block.capacity, calls]).toEqual([4096, [4096]]);
    const first = block.pointer;
    expect(first).not.toBe(0);
    block.reserve(4096);
    expect(block.pointer).toBe(first);
    block.reserve(5000);
    expect([block.capacity, calls]).toEqual([8192, [4096, 8192]]);
    failNext = true;
    expect(() => block.reserve(9000)).toThrow('out of wasm memory');
    expect([block.pointer, block.capacity]).toEqual([0, 0]);
    block.reserve(100);
    expect(block.pointer).not.toBe(0);
    expect([block.capacity, calls]).toEqual([4096, [4096, 8192, 16384, 4096]]);
    engine.global.close();
  });
});
