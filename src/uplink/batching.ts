/**
 * Where one message ends (docs/uplink.md "Batch boundaries"): a function of the batch's first id and the
 * records only, never of timing, so a gateway that restarts from its cursor after a kill -9 cuts the
 * records it had already sent into the same messages, with the same Nats-Msg-Id, and the hub's dedup
 * window drops them instead of storing them twice.
 *
 * A batch starting at id `lo` ends before the first record whose create_at lies in another SLOT_MS slot
 * than the record before it, after the record that brings the body to BATCH_BYTES_MAX, or at id
 * lo + BATCH_RECORDS_MAX - 1, whichever comes first. create_at never goes back within a log (the store's
 * clock keeps it monotonic), so a slot that has ended gets no more records: the newest batch is sent
 * once its slot is over and everything saved until then is durable.
 */

export const BATCH_RECORDS_MAX = 1000;
export const BATCH_BYTES_MAX = 256 * 1024;
/** Long enough to gather a few hundred records at 10k/s, short enough to add little to the lag. */
export const SLOT_MS = 50;

export function slotOf(createAtMs: number): number {
  return Math.floor(createAtMs / SLOT_MS);
}

export function slotEndMs(createAtMs: number): number {
  return (slotOf(createAtMs) + 1) * SLOT_MS;
}

export interface Cut {
  /** The batch is ids lo..lastId (ids lost to corruption have no record). */
  lastId: number;
  /** How many records of `ahead` (from its start) the batch holds: its lines. */
  count: number;
  /** The batch reaches the end of what was read and its slot may still get records: not yet. */
  open: boolean;
}

/** The records read ahead, in id order (ids lost to corruption have none): what the cut looks at. */
export interface AheadLines {
  readonly ids: readonly number[];
  readonly createAtMs: readonly number[];
  /** The length of each record's NDJSON line as a string. */
  readonly chars: readonly number[];
}

/** Cuts the batch starting at `lo` from `ahead` (the records lo..aheadEnd). */
export function cutBatch(lo: number, ahead: AheadLines, aheadEnd: number): Cut {
  const idMax = lo + BATCH_RECORDS_MAX - 1;
  const { ids, createAtMs, chars } = ahead;
  let bytes = 0;
  let slot: number | undefined;
  for (let i = 0; i < ids.length; i++) {
    const id = ids[i];
    if (id > idMax) return { lastId: idMax, count: i, open: false };
    const s = slotOf(createAtMs[i]);
    if (slot !== undefined && s !== slot) return { lastId: id - 1, count: i, open: false };
    slot = s;
    bytes += chars[i] + 1;
    if (bytes >= BATCH_BYTES_MAX) return { lastId: id, count: i + 1, open: false };
  }
  if (aheadEnd >= idMax) return { lastId: idMax, count: ids.length, open: false };
  return { lastId: aheadEnd, count: ids.length, open: true };
}
