/** Timestamps and record shapes on the wire (contract section 4). All times are UTC. */
import type { DataModel } from '../models/types.js';
import type { RecordView } from '../store/types.js';

/** History results and exports: `YYYY-MM-DDTHH:MM:SSZ`. */
export function isoSeconds(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, iso.length - 5)}Z`;
}

/** Latest-record results: `YYYY-MM-DD HH:MM:SS`. */
export function spacedSeconds(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, iso.length - 14)} ${iso.slice(iso.length - 13, iso.length - 5)}`;
}

/** File-name stamp `YYYYMMDD-HHMMSS`. */
export function compactStamp(ms: number): string {
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/**
 * A copy of a store record with `create_at` formatted; key order (id, create_at, attributes in model
 * order) is kept. Never mutates the store's object, which may be its in-memory latest record.
 */
export function formatRecord(record: RecordView, stamp: (ms: number) => string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in record) {
    const value = record[key];
    out[key] = key === 'create_at' && typeof value === 'number' ? stamp(value) : value;
  }
  return out;
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
