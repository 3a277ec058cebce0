/**
 * A block of C memory in the Lua instance, outside Lua's cap, that grows by doubling and never shrinks:
 * WasmStrings' buffer for strings written from JS, and the payload window. Growing does not keep its
 * bytes. A failed malloc leaves it empty (capacity 0), so the next reserve asks again instead of
 * handing out address 0.
 */
/** The Lua instance's malloc and free (lua-raw.ts's RawLua has them). */
export interface WasmHeap {
  malloc(size: number): number;
  free(pointer: number): void;
}

export class WasmBlock {
  pointer = 0;
  capacity = 0;

  constructor(
    private readonly raw: WasmHeap,
    /** The first capacity, and the least one. */
    private readonly minBytes: number,
  ) {}

  /** At least `bytes` at `pointer`; throws when the memory cannot grow. */
  reserve(bytes: number): void {
    if (bytes <= this.capacity) return;
    let capacity = Math.max(this.capacity, this.minBytes);
    while (capacity < bytes) capacity *= 2;
    if (this.pointer !== 0) this.raw.free(this.pointer);
    this.capacity = 0;
    this.pointer = this.raw.malloc(capacity);
    if (this.pointer === 0) throw new Error('out of wasm memory');
    this.capacity = capacity;
  }
}
