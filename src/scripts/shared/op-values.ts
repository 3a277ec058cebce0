/**
 * A packed op's values read back on the main thread (updates, dry runs), decoded as the store decodes a
 * frame's payload. Apart from protocol.ts, which the workers load too, and imported by no worker module:
 * decoding needs msgpackr, which a worker has no use for (5.9 MiB of RSS each).
 */
import { decodeValues } from '../../store/index.js';
import type { RecordOp } from './protocol.js';

/** The values of `op`, in the order of its keys. */
export function valuesOf(op: Pick<RecordOp, 'bytes' | 'start' | 'end'>): unknown[] {
  return decodeValues(op.bytes.subarray(op.start, op.end));
}

/** The record of `op` as an object, keys in its order. */
export function recordOf(op: Pick<RecordOp, 'keys' | 'bytes' | 'start' | 'end'>): Record<string, unknown> {
  const values = valuesOf(op);
  const record: Record<string, unknown> = {};
  for (let k = 0; k < op.keys.length; k++) record[op.keys[k]] = values[k];
  return record;
}
