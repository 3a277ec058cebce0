/**
 * What goes on the wire (contract 17, docs/uplink.md): a batch of records as NDJSON, one line per record
 * `{"gateway","model","generation","id","create_at_ms",<attributes>}`, on `<prefix>.<gateway>.<model>`;
 * a lost id range as one JSON object on `<prefix>.<gateway>.<model>.gap`.
 *
 * The Nats-Msg-Id names the id range and a digest of the body: a batch sent again with the same bytes
 * (after a failed ack) is a duplicate the hub drops, while a record changed by update-last gets another
 * id, so the hub's dedup window never swallows the newer value.
 */
import { createHash } from 'node:crypto';
import type { LineFormat } from '../store/read/record-lines.js';

export interface ShippedModel {
  gateway: string;
  model: string;
  generation: string;
}

export interface Message {
  subject: string;
  msgId: string;
  headers: Record<string, string>;
  body: Buffer;
}

export const HEADER_GENERATION = 'Edc-Generation';
export const HEADER_FIRST_ID = 'Edc-First-Id';
export const HEADER_LAST_ID = 'Edc-Last-Id';
export const HEADER_RECORDS = 'Edc-Records';
export const HEADER_KIND = 'Edc-Kind';

export function dataSubject(prefix: string, gateway: string, model: string): string {
  return `${prefix}.${gateway}.${model}`;
}

export function gapSubject(prefix: string, gateway: string, model: string): string {
  return `${dataSubject(prefix, gateway, model)}.gap`;
}

/** Keys of the envelope: an attribute named like one is not sent. */
export const ENVELOPE_KEYS: ReadonlySet<string> = new Set(['gateway', 'model', 'generation', 'id', 'create_at', 'create_at_ms']);

/** A record's line, as the store prints it from the stored bytes (ModelLog.lines, record-lines.ts). */
export function lineFormat(m: ShippedModel): LineFormat {
  return {
    head: `{"gateway":${JSON.stringify(m.gateway)},"model":${JSON.stringify(m.model)},"generation":${JSON.stringify(m.generation)},"id":`,
    createAtKey: ',"create_at_ms":',
    omit: ENVELOPE_KEYS,
  };
}

function digest(body: Buffer): string {
  return createHash('sha1').update(body).digest('hex').slice(0, 16);
}

/** Records `firstId..lastId`: `body` is their `records` lines (ids lost to corruption inside the range have none). */
export function batchMessage(prefix: string, m: ShippedModel, firstId: number, lastId: number, body: Buffer, records: number): Message {
  return {
    subject: dataSubject(prefix, m.gateway, m.model),
    msgId: `${m.gateway}:${m.model}:${m.generation}:${firstId === lastId ? firstId : `${firstId}-${lastId}`}:${digest(body)}`,
    headers: {
      [HEADER_KIND]: 'records',
      [HEADER_GENERATION]: m.generation,
      [HEADER_FIRST_ID]: String(firstId),
      [HEADER_LAST_ID]: String(lastId),
      [HEADER_RECORDS]: String(records),
    },
    body,
  };
}

/** Ids `fromId..toId` were removed before the hub acknowledged them (`[uplink] backlog_max_bytes`). */
export function gapMessage(prefix: string, m: ShippedModel, fromId: number, toId: number, reason: string): Message {
  const body = Buffer.from(JSON.stringify({ gateway: m.gateway, model: m.model, generation: m.generation, fromId, toId, records: toId - fromId + 1, reason }));
  return {
    subject: gapSubject(prefix, m.gateway, m.model),
    msgId: `${m.gateway}:${m.model}:${m.generation}:gap:${fromId}-${toId}`,
    headers: { [HEADER_KIND]: 'gap', [HEADER_GENERATION]: m.generation, [HEADER_FIRST_ID]: String(fromId), [HEADER_LAST_ID]: String(toId) },
    body,
  };
}
