/**
 * The time parameters of contract section 10: instants (`from`, `to`) and bucket widths (`interval`).
 * Errors name the parameter and the rule in the one shape of params.ts.
 */
import { badParameter, one, type QueryParams } from '../core/params.js';

const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?(Z|[+-]\d{2}:\d{2})$/;
const INSTANT_RULE = 'an ISO 8601 time (2026-11-22T10:00:00Z, optional .mmm and +hh:mm offset) or integer epoch milliseconds';
/** 9999-12-31T23:59:59.999Z: what the ISO form can write, so both forms cover the same instants. */
export const INSTANT_MAX_MS = 253402300799999;

/** Epoch milliseconds of an ISO 8601 time with a zone, or undefined when it is not one (Feb 30 is not). */
export function parseIso(text: string): number | undefined {
  const m = ISO.exec(text);
  if (!m) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const ms = m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0'));
  const local = Date.UTC(y, mo - 1, d, h, mi, s, ms);
  const back = new Date(local);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d || h > 23 || mi > 59 || s > 59) {
    return undefined;
  }
  const zone = m[8];
  if (zone === 'Z') return local;
  const sign = zone[0] === '-' ? -1 : 1;
  const zh = Number(zone.slice(1, 3));
  const zm = Number(zone.slice(4, 6));
  if (zh > 23 || zm > 59) return undefined;
  return local - sign * (zh * 60 + zm) * 60_000;
}

/** An optional instant parameter: ISO 8601 or integer epoch milliseconds. */
export function instant(query: QueryParams, name: string): number | undefined {
  const raw = one(query, name)?.trim();
  if (raw === undefined || raw.length === 0) return undefined;
  const value = /^[0-9]{1,15}$/.test(raw) ? Number(raw) : parseIso(raw);
  if (value === undefined || value < 0 || value > INSTANT_MAX_MS) throw badParameter(name, INSTANT_RULE, raw);
  return value;
}

/** `from` and `to` of a time range; `from >= to` is a 400 naming `from`. */
export function timeRange(query: QueryParams): { fromMs?: number; toMs?: number } {
  const fromMs = instant(query, 'from');
  const toMs = instant(query, 'to');
  if (fromMs !== undefined && toMs !== undefined && fromMs >= toMs) {
    throw badParameter('from', `earlier than 'to' (${new Date(toMs).toISOString()})`, one(query, 'from') ?? '');
  }
  return { ...(fromMs === undefined ? {} : { fromMs }), ...(toMs === undefined ? {} : { toMs }) };
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const INTERVAL_RULE = 'a duration such as 500ms, 10s, 1m, 1h, 1d or integer milliseconds, at least 1 ms';

/** A bucket width in milliseconds: `<n>ms|s|m|h|d` or a bare integer (ms). */
export function intervalMs(query: QueryParams): number {
  const raw = one(query, 'interval')?.trim();
  if (raw === undefined || raw.length === 0) throw badParameter('interval', INTERVAL_RULE, '');
  const m = /^([0-9]{1,12})(ms|s|m|h|d)?$/.exec(raw);
  const value = m ? Number(m[1]) * UNIT_MS[m[2] ?? 'ms'] : NaN;
  if (!Number.isSafeInteger(value) || value < 1) throw badParameter('interval', INTERVAL_RULE, raw);
  return value;
}
