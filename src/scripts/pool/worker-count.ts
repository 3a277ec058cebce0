/**
 * How many Lua workers `[scripts] workers = 0` means. One per core but one (left to the HTTP event
 * loop); on a small board only one: each running worker holds an isolate and a wasm heap (about 15 MB
 * with the sample rule), which a 1-2 GB gateway feels more than a second core's rule throughput.
 */
import { availableParallelism, totalmem } from 'node:os';

/** Boards sold as 1 or 2 GB report a little less than that; 4 GB boards report about 3.7 GiB. */
export const SMALL_BOARD_MEMORY_BYTES = 3 * 2 ** 30;

export function defaultWorkerCount(cores: number = availableParallelism(), memoryBytes: number = totalmem()): number {
  if (cores <= 2 || memoryBytes < SMALL_BOARD_MEMORY_BYTES) return 1;
  return cores - 1;
}
