/**
 * A task's payloads in wasm memory, a window of them at a time. The window is filled in one copy (payloads
 * up to WINDOW_BYTES together, or one larger payload alone), so that handing Lua its next `args` is a
 * lua_pushlstring of bytes already there: a copy from JS per payload made a typed-array view each, about
 * a fortieth of the worker's time on small payloads (issue 32, ninth session). Its memory is C memory
 * outside Lua's cap, as the payload was always pushed; it keeps the size of the largest payload seen.
 */
import type { LuaWasm } from 'wasmoon';
import type { TaskPayloads } from '../shared/protocol.js';
import type { RawLua } from './lua-raw.js';
import { WasmBlock } from './wasm-block.js';

const WINDOW_BYTES = 64 * 1024;

export class PayloadWindow {
  private readonly block: WasmBlock;
  /** The task whose payloads [first, end) are in the window, payload `first`'s first byte at the block's pointer. */
  private payloads: TaskPayloads | undefined;
  private first = 0;
  private end = 0;
  private firstByte = 0;

  constructor(
    private readonly lua: LuaWasm,
    private readonly raw: RawLua,
  ) {
    this.block = new WasmBlock(raw, WINDOW_BYTES);
  }

  /** Pushes payload `index` of `payloads` as a Lua string of exactly its bytes (NUL bytes included). */
  push(L: number, payloads: TaskPayloads, index: number): void {
    if (payloads !== this.payloads || index < this.first || index >= this.end) this.fill(payloads, index);
    const { ends } = payloads;
    const start = index === 0 ? 0 : ends[index - 1];
    this.raw.lua_pushlstring(L, this.block.pointer + start - this.firstByte, ends[index] - start);
  }

  /** The task is done: its buffer is not held until the next one. */
  release(): void {
    this.payloads = undefined;
    this.first = this.end = 0;
  }

  private fill(payloads: TaskPayloads, index: number): void {
    const { bytes, ends } = payloads;
    if (index < 0 || index >= ends.length) throw new Error(`payload ${index} of a task of ${ends.length}`);
    const start = index === 0 ? 0 : ends[index - 1];
    const limit = Math.max(WINDOW_BYTES, ends[index] - start);
    let end = index + 1;
    while (end < ends.length && ends[end] - start <= limit) end++;
    const size = ends[end - 1] - start;
    this.release();
    this.block.reserve(size);
    this.lua.module.HEAPU8.set(bytes.subarray(start, start + size), this.block.pointer);
    this.payloads = payloads;
    this.first = index;
    this.end = end;
    this.firstByte = start;
  }
}
