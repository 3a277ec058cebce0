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
import type { RecordView } from '../store/types.js';

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

const ENVELOPE_KEYS = new Set(['gateway', 'model', 'generation', 'id', 'create_at', 'create_at_ms']);

/**
 * Renders records as NDJSON lines: the envelope keys first, then the attributes (one named like an
 * envelope key is not sent). The envelope and each key are escaped once; values are printed as
 * JSON.stringify prints them, by type, which is several times faster than JSON.stringify of an object
 * per record (the shipper's hottest path).
 */
export function recordLineWriter(m: ShippedModel): (r: RecordView) => string {
  const head = `{"gateway":${JSON.stringify(m.gateway)},"model":${JSON.stringify(m.model)},"generation":${JSON.stringify(m.generation)},"id":`;
  const keyPrefixes = new Map<string, string | null>();
  const prefixOf = (key: string): string | null => {
    let p = keyPrefixes.get(key);
    if (p === undefined) {
      p = ENVELOPE_KEYS.has(key) ? null : `,${JSON.stringify(key)}:`;
      keyPrefixes.set(key, p);
    }
    return p;
  };
  return (r) => {
    let line = `${head}${JSON.stringify(r.id)},"create_at_ms":${JSON.stringify(r.create_at)}`;
    for (const key in r) {
      const p = prefixOf(key);
      if (p === null) continue;
      const v = r[key];
      if (v === undefined) continue;
      line += p + (typeof v === 'number' ? (Number.isFinite(v) ? String(v) : 'null') : v === null ? 'null' : typeof v === 'boolean' ? String(v) : JSON.stringify(v));
    }
    return `${line}}`;
  };
}

function digest(body: Buffer): string {
  return createHash('sha1').update(body).digest('hex').slice(0, 16);
}

/** Records `firstId..lastId` (ids lost to corruption inside the range have no line). */
export function batchMessage(prefix: string, m: ShippedModel, firstId: number, lastId: number, lines: readonly string[]): Message {
  const body = Buffer.from(lines.join('\n'));
  return {
    subject: dataSubject(prefix, m.gateway, m.model),
    msgId: `${m.gateway}:${m.model}:${m.generation}:${firstId === lastId ? firstId : `${firstId}-${lastId}`}:${digest(body)}`,
    headers: {
      [HEADER_KIND]: 'records',
      [HEADER_GENERATION]: m.generation,
      [HEADER_FIRST_ID]: String(firstId),
      [HEADER_LAST_ID]: String(lastId),
      [HEADER_RECORDS]: String(lines.length),
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
