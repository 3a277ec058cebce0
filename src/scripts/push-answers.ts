/**
 * How a push is answered (contract 9): one ticket per push, settled payload by payload as its batches are
 * applied, and answered once every payload is settled. A payload is settled once its records are stored
 * and visible; it waits for their fdatasync only under `sync = always`, or when the push asked for
 * `wait=durable` (under `none` the push then asks for that fdatasync itself).
 */
import { PushRefusedError, StoreReadOnlyError, type UnavailableError } from '../errors.js';
import type { Applied } from './batch-apply.js';
import type { InputCounters } from './input-stats.js';
import type { PayloadSlot } from './payloads.js';
import { capMessage } from './shared/repeat-filter.js';
import type { PushResult, RecordLog } from './shared/types.js';

const PUSH_ERRORS_MAX = 10;

export class PushTicket {
  remaining: number;
  readonly result: PushResult = { accepted: 0, failed: 0, errors: [], durable: true };
  readonly done: Promise<PushResult>;
  private resolve!: (result: PushResult) => void;
  private reject!: (error: PushRefusedError) => void;

  constructor(
    private readonly count: number,
    readonly waitDurable: boolean,
  ) {
    this.remaining = count;
    this.done = new Promise((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /**
   * The indexes of the payloads that failed, rare: the 1-based numbers of those kept (`kept`, needed only
   * for a 503) are the others, not collected payload by payload.
   */
  private readonly failedIndexes: number[] = [];
  /** Of the payloads a model refused for a moment, the refusal that asks to wait longest. */
  private refused: UnavailableError | undefined;

  /** `onDisk`: the payload's records (if any) were fdatasync'ed before this answer. `refused`: see Applied. */
  settle(index: number, error: string | undefined, storeReadOnly: string | undefined, onDisk: boolean, refused?: UnavailableError): void {
    if (storeReadOnly !== undefined) this.result.storeReadOnly ??= storeReadOnly;
    if (refused !== undefined && refused.retryAfterS > (this.refused?.retryAfterS ?? -1)) this.refused = refused;
    if (!onDisk) this.result.durable = false;
    if (error === undefined) {
      this.result.accepted++;
    } else {
      this.result.failed++;
      this.failedIndexes.push(index);
      // At most 1 KB a message (contract 18), the store's failures as the rules'.
      if (this.result.errors.length < PUSH_ERRORS_MAX) this.result.errors.push({ index, message: capMessage(error) });
    }
    if (--this.remaining === 0) this.answer();
  }

  /**
   * Once every payload is settled. A push that met a read-only store resolves with `storeReadOnly` (the
   * route answers 503, PushPartlyKeptError); one a model refused for a moment is rejected with its 503
   * here: answered 200, a client that checks only the status would drop the records.
   */
  private answer(): void {
    this.result.errors.sort((a, b) => a.index - b.index);
    if (this.result.storeReadOnly !== undefined) this.result.kept = this.kept();
    else if (this.refused !== undefined) {
      const { accepted, failed } = this.result;
      const kept = this.kept();
      const message =
        `${this.refused.message}; of ${accepted + failed} payloads ${accepted} are stored and kept (data.kept lists their ` +
        `line numbers), ${failed} were not stored: resend only those`;
      this.reject(new PushRefusedError(message, this.refused.retryAfterS, { accepted, failed, kept }));
      return;
    }
    this.resolve(this.result);
  }

  /** The 1-based numbers of the payloads settled without an error, in order. */
  private kept(): number[] {
    const failed = new Set(this.failedIndexes);
    const kept: number[] = [];
    for (let index = 0; index < this.count; index++) if (!failed.has(index)) kept.push(index + 1);
    return kept;
  }
}

/** A payload waiting in an input's queue; a simulator's has no ticket (nobody waits for its answer). */
export interface QueuedPayload extends PayloadSlot {
  ticket: PushTicket | undefined;
  /** Its position in its push. */
  index: number;
}

/** Whether any payload of the batch is answered only after an fdatasync: its push waits for one, or a log it wrote to syncs every write. */
function mustWaitForSync(entries: readonly QueuedPayload[], touched: Applied['touched']): boolean {
  for (const target of touched.keys()) if (target.durability === 'always') return true;
  for (const entry of entries) if (entry.ticket?.waitDurable === true) return true;
  return false;
}

/** Settles every payload of an applied batch: at once, or once the logs it wrote to are durable. */
export async function settlePayloads(entries: readonly QueuedPayload[], applied: Applied, counters: InputCounters): Promise<void> {
  const { failures, readOnly, refused, touched } = applied;
  const settleEntry = (p: number, onDisk: boolean): void => {
    const entry = entries[p];
    counters.settled(failures.get(p));
    entry.ticket?.settle(entry.index, failures.get(p), readOnly.get(p), onDisk, refused.get(p));
  };
  if (!mustWaitForSync(entries, touched)) {
    // The usual batch: settled now, in order, with nothing built per payload.
    const stored = new Uint8Array(entries.length);
    for (const { payloads } of touched.values()) {
      for (const p of payloads) {
        if (p >= entries.length) throw new Error(`settle: records of payload ${p} in a batch of ${entries.length}`);
        stored[p] = 1;
      }
    }
    for (let p = 0; p < entries.length; p++) settleEntry(p, stored[p] === 0);
    return;
  }
  const waits = (p: number): boolean => entries[p].ticket?.waitDurable === true;
  const targetsOf = new Map<number, RecordLog[]>();
  for (const [target, { payloads }] of touched) for (const p of payloads) targetsOf.set(p, [...(targetsOf.get(p) ?? []), target]);
  const mustSync = (p: number): boolean => waits(p) || (targetsOf.get(p) ?? []).some((t) => t.durability === 'always');
  entries.forEach((_, p) => {
    if (!mustSync(p)) settleEntry(p, !targetsOf.has(p));
  });
  const synced = new Set<RecordLog>();
  await Promise.all(
    [...touched].map(async ([target, { lastId, payloads }]) => {
      if (![...payloads].some(mustSync)) return;
      try {
        // A push is answered now: a store that turns read-only (disk full) fails it with a 503 rather
        // than holding the client until space returns. The records stay accepted and are written then.
        // `sync`: under `none` nothing syncs by itself; a push that waits asks for the fdatasync.
        await target.durable(lastId, { rejectWhenReadOnly: true, sync: true });
        synced.add(target);
      } catch (err) {
        const message = (err as Error).message;
        for (const p of payloads) {
          // Read-only: the records are appended and stay in memory until space returns. They are kept,
          // not failed: a client that resent them would store them twice.
          if (err instanceof StoreReadOnlyError) {
            if (!readOnly.has(p)) readOnly.set(p, message);
          } else if (!failures.has(p)) failures.set(p, `store: ${message}`);
        }
      }
    }),
  );
  entries.forEach((_, p) => {
    if (mustSync(p)) settleEntry(p, (targetsOf.get(p) ?? []).every((t) => synced.has(t)));
  });
}
