/**
 * queryLastDataBatch's kept answers (contract 12): whole answers of recent calls, by their exact query
 * string, with the ids they resolved. A page of tiles polled faster than its models change costs a lookup
 * and a check per model; one polled while they change, a new body from the records' kept JSON. Keyed by the
 * query string rather than by the parsed ids: splitting, trimming and looking up 100 ids was most of a call
 * (about 1 µs an id). Bounded in answers and in bytes: a record may be up to 1 MiB, so 100 of them in each
 * of 64 answers would otherwise keep gigabytes for anyone holding the data secret.
 */
import type { DataModel } from '../../models/types.js';
import type { RecordView } from '../../store/base/types.js';
import type { LogView, RegistryView } from '../core/deps.js';
import { ENVELOPE_HEADERS, latestJson } from './latest-answer.js';
import { RawReply } from '../core/reply.js';

export const BATCH_ANSWERS_MAX = 64;
/** Bytes of the bodies kept, all answers together; a body over a quarter of it is answered, not kept. */
export const BATCH_ANSWERS_BYTES_MAX = 4 * 1024 * 1024;

/** A batch answer kept for the query string that asked it, with what it was made from. */
export interface KeptBatch {
  /** registry.models when it was made: the same array means no model was changed, unpublished or removed. */
  models: readonly DataModel[];
  /** The models' ids as the answer spells them, and per model its log, select and latest view. */
  uuids: string[];
  logs: LogView[];
  selects: Array<string[] | undefined>;
  records: Array<RecordView | undefined>;
  reply: RawReply;
}

const kept = new Map<string, KeptBatch>();
let keptBytes = 0;

function bodyBytes(reply: RawReply): number {
  return (reply.body as Buffer).length;
}

/**
 * The answer to a query asked before while its models are the same: the kept one while every log hands out
 * the same latest views, else one rebuilt from the new views, without parsing and resolving the ids again.
 */
export function keptBatch(rawQuery: string, registry: RegistryView): RawReply | undefined {
  const batch = kept.get(rawQuery);
  if (batch === undefined || batch.models !== registry.models) return undefined;
  const { logs, selects, records } = batch;
  let changed = false;
  for (let i = 0; i < logs.length; i++) {
    const record = logs[i].latest(selects[i]);
    if (record !== records[i]) {
      records[i] = record;
      changed = true;
    }
  }
  if (!changed) return batch.reply;
  const reply = batchReply(batch.uuids, records);
  keep(rawQuery, { ...batch, reply });
  return reply;
}

/** Keeps `batch` for `rawQuery` if its body fits, dropping the oldest answers to stay within the bounds. */
export function keep(rawQuery: string, batch: KeptBatch): void {
  forget(rawQuery);
  const bytes = bodyBytes(batch.reply);
  if (bytes > BATCH_ANSWERS_BYTES_MAX / 4) return;
  while (kept.size >= BATCH_ANSWERS_MAX || keptBytes + bytes > BATCH_ANSWERS_BYTES_MAX) forget(kept.keys().next().value as string);
  kept.set(rawQuery, batch);
  keptBytes += bytes;
}

function forget(rawQuery: string): void {
  const batch = kept.get(rawQuery);
  if (batch === undefined) return;
  kept.delete(rawQuery);
  keptBytes -= bodyBytes(batch.reply);
}

/** Bytes and count of the answers kept, for tests. */
export function keptBatchStats(): { answers: number; bytes: number } {
  return { answers: kept.size, bytes: keptBytes };
}

export function batchReply(uuids: readonly string[], records: ReadonlyArray<RecordView | undefined>): RawReply {
  const parts = uuids.map((uuid, i) => {
    const record = records[i];
    return `${JSON.stringify(uuid)}:${record === undefined ? '{}' : latestJson(record)}`;
  });
  return new RawReply(200, ENVELOPE_HEADERS, Buffer.from(`{"code":200,"msg":"Success","data":{${parts.join(',')}}}`));
}
