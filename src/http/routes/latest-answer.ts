/**
 * Answers about latest records, kept while the store hands out the same frozen view (until the model's
 * next write; each projection has its own view): HMIs poll the latest record far more often than it
 * changes, and serialising it was most of the cost of queryLastData and of a batch call.
 */
import type { RecordView } from '../../store/base/types.js';
import { formatRecord, spacedSeconds } from '../core/format.js';
import { JSON_HEADERS, RawReply } from '../core/reply.js';

export const ENVELOPE_HEADERS: Readonly<Record<string, string>> = Object.fromEntries(JSON_HEADERS);

const recordJson = new WeakMap<RecordView, string>();
const answers = new WeakMap<RecordView, RawReply>();
/** A model without records answers `data: {}` (contract section 4). */
const NO_RECORD = new RawReply(200, ENVELOPE_HEADERS, Buffer.from('{"code":200,"msg":"Success","data":{}}'));

/** The JSON of a latest record as queryLastData shows it (`create_at` as `YYYY-MM-DD HH:MM:SS`). */
export function latestJson(record: RecordView): string {
  let json = recordJson.get(record);
  if (json === undefined) {
    json = JSON.stringify(formatRecord(record, spacedSeconds));
    recordJson.set(record, json);
  }
  return json;
}

/** queryLastData's whole answer: the success envelope around the record. */
export function latestAnswer(record: RecordView | undefined): RawReply {
  if (record === undefined) return NO_RECORD;
  let answer = answers.get(record);
  if (answer === undefined) {
    answer = new RawReply(200, ENVELOPE_HEADERS, Buffer.from(`{"code":200,"msg":"Success","data":${latestJson(record)}}`));
    answers.set(record, answer);
  }
  return answer;
}
