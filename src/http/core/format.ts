/** Timestamps and record shapes on the wire (contract section 4). All times are UTC. */
import type { DataModel } from '../../models/types.js';

/**
 * Formats whole seconds, remembering the last second formatted: the records of a page or an export
 * were mostly written within the same few seconds, and toISOString per record was a third of the
 * cost of a 1000-record page.
 */
function secondsFormatter(format: (iso: string) => string): (ms: number) => string {
  let lastSecond = NaN;
  let lastText = '';
  return (ms) => {
    const second = Math.floor(ms / 1000);
    if (second !== lastSecond) {
      const date = new Date(second * 1000);
      // Only a record stored before contract 20's domain was checked can be past what Date prints: shown as its number.
      if (Number.isNaN(date.getTime())) return String(ms);
      lastText = format(date.toISOString());
      lastSecond = second;
    }
    return lastText;
  };
}

/** History results and exports: `YYYY-MM-DDTHH:MM:SSZ`. */
export const isoSeconds = secondsFormatter((iso) => `${iso.slice(0, iso.length - 5)}Z`);

/** Latest-record results: `YYYY-MM-DD HH:MM:SS`. */
export const spacedSeconds = secondsFormatter((iso) => `${iso.slice(0, iso.length - 14)} ${iso.slice(iso.length - 13, iso.length - 5)}`);

/** File-name stamp `YYYYMMDD-HHMMSS`. */
export function compactStamp(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/** A copy of a store record with `create_at` formatted (the store prints pages the same way: record-json.ts). */
export { formatRecord } from '../../store/read/record-json.js';

/** A created object as RHILEX answers it: `uuid` first, then the object's own fields. */
export function withUuid(created: { uuid: string }): Record<string, unknown> {
  return Object.assign({ uuid: created.uuid }, created);
}

/** RHILEX's schema list/detail object. */
export function modelView(model: DataModel): Record<string, unknown> {
  return {
    uuid: model.uuid,
    published: model.published,
    name: model.name,
    description: model.description,
    attributes: model.attributes.length,
    createdAt: new Date(model.createdAtMs).toISOString(),
  };
}
