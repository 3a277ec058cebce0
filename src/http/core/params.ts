/**
 * Query-string parsing and the parameter rules of contract section 4, with the exact 400 messages.
 * uWS's `req.getQuery(name)` returns one value only, so the raw query string is parsed here.
 * A value that breaks a rule is always reported by `badParameter`, in one shape:
 * `parameter 'size' must be an integer in 1..1000, got "abc"` (ranges as `min..max`, as the contract
 * and the config and model messages write them).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { DataModel } from '../../models/types.js';
import type { PageOrder } from '../../store/base/types.js';

/** Every value of every parameter, in request order. */
export type QueryParams = Map<string, string[]>;

export const PAGE_SIZE_DEFAULT = 25;
export const PAGE_SIZE_MAX = 1000;
/** Keeps `(current - 1) * size` an exact integer. */
export const PAGE_CURRENT_MAX = Math.floor(Number.MAX_SAFE_INTEGER / PAGE_SIZE_MAX);

function decodeComponent(text: string): string {
  if (text.indexOf('%') < 0 && text.indexOf('+') < 0) return text;
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new InvalidArgumentError('malformed percent-encoding in the query string');
  }
}

/**
 * `application/x-www-form-urlencoded` rules: `&` separates, `+` is a space, `%XX` must be valid UTF-8.
 * One pass of indexOf and slices, without splitting into a list first: every guarded request parses its
 * query (the secret may be in it), and a query without `%` or `+` (an HMI's poll) decodes nothing.
 */
export function parseQueryString(raw: string): QueryParams {
  const out: QueryParams = new Map();
  const encoded = raw.indexOf('%') >= 0 || raw.indexOf('+') >= 0;
  // The next `=` at or after `start`, found once and reused, so parts without one cost no rescans.
  let eq = raw.indexOf('=');
  let start = 0;
  while (start < raw.length) {
    let end = raw.indexOf('&', start);
    if (end < 0) end = raw.length;
    if (end > start) {
      if (eq >= 0 && eq < start) eq = raw.indexOf('=', start);
      const hasValue = eq >= 0 && eq < end;
      let key = raw.slice(start, hasValue ? eq : end);
      let value = hasValue ? raw.slice(eq + 1, end) : '';
      if (encoded) {
        key = decodeComponent(key);
        value = decodeComponent(value);
      }
      const list = out.get(key);
      if (list) list.push(value);
      else out.set(key, [value]);
    }
    start = end + 1;
  }
  return out;
}

/** A value quoted for an error message: JSON-escaped and cut to a readable length. */
export function quote(value: string): string {
  const cut = value.length > 48 ? `${value.slice(0, 48)}...` : value;
  return JSON.stringify(cut);
}

/** The 400 for a parameter whose value breaks `rule` (written to follow "must be"). */
export function badParameter(name: string, rule: string, value: string): InvalidArgumentError {
  return new InvalidArgumentError(`parameter '${name}' must be ${rule}, got ${quote(value)}`);
}

/** An inclusive range as every message writes it. */
export function range(min: number, max: number): string {
  return `${min}..${max}`;
}

/** The single value of a parameter; repeating it with different values is a 400. */
export function one(query: QueryParams, name: string): string | undefined {
  const values = query.get(name);
  if (values === undefined) return undefined;
  const first = values[0];
  for (let i = 1; i < values.length; i++) {
    if (values[i] !== first) {
      throw new InvalidArgumentError(`parameter '${name}' is given more than once with different values`);
    }
  }
  return first;
}

/** Comma-separated and/or repeated values, trimmed, empty items dropped, duplicates collapsed. */
export function listParam(query: QueryParams, name: string): string[] {
  const out = new Set<string>();
  for (const value of query.get(name) ?? []) {
    for (const item of value.split(',')) {
      const v = item.trim();
      if (v.length > 0) out.add(v);
    }
  }
  return [...out];
}

/** A required, non-empty parameter (trimmed). */
export function required(query: QueryParams, name: string): string {
  const value = one(query, name)?.trim();
  if (value === undefined || value.length === 0) throw new InvalidArgumentError(`missing parameter '${name}'`);
  return value;
}

/** An optional, non-empty parameter (trimmed); empty counts as absent. */
export function optional(query: QueryParams, name: string): string | undefined {
  const value = one(query, name)?.trim();
  return value === undefined || value.length === 0 ? undefined : value;
}

/** Decimal digits only; empty or absent gives the default. */
export function integer(query: QueryParams, name: string, min: number, max: number, fallback: number): number;
export function integer(query: QueryParams, name: string, min: number, max: number): number | undefined;
export function integer(query: QueryParams, name: string, min: number, max: number, fallback?: number): number | undefined {
  const raw = one(query, name)?.trim();
  if (raw === undefined || raw.length === 0) return fallback;
  const value = /^[0-9]{1,16}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw badParameter(name, `an integer in ${range(min, max)}`, raw);
  }
  return value;
}

export function pageCurrent(query: QueryParams): number {
  return integer(query, 'current', 1, PAGE_CURRENT_MAX, 1);
}

export function pageSize(query: QueryParams): number {
  return integer(query, 'size', 1, PAGE_SIZE_MAX, PAGE_SIZE_DEFAULT);
}

export function pageOrder(query: QueryParams): PageOrder {
  const raw = one(query, 'order')?.trim();
  if (raw === undefined || raw.length === 0) return 'desc';
  const lower = raw.toLowerCase();
  if (lower === 'asc' || lower === 'desc') return lower;
  throw badParameter('order', 'asc or desc', raw);
}

/** `true`/`false` (also 1/0, yes/no, case-insensitive); absent or empty gives the default. */
export function boolean(query: QueryParams, name: string, fallback: boolean): boolean {
  const raw = one(query, name)?.trim().toLowerCase();
  if (raw === undefined || raw.length === 0) return fallback;
  if (raw === 'true' || raw === '1' || raw === 'yes') return true;
  if (raw === 'false' || raw === '0' || raw === 'no') return false;
  throw badParameter(name, 'true or false', raw);
}

function canonicalField(model: DataModel, name: string): string | undefined {
  if (name === 'id' || name === 'create_at') return name;
  const attributes = model.attributes;
  for (let i = 0; i < attributes.length; i++) if (attributes[i].name === name) return name;
  const lower = name.toLowerCase();
  if (lower === 'id' || lower === 'create_at') return lower;
  for (let i = 0; i < attributes.length; i++) {
    if (attributes[i].name.toLowerCase() === lower) return attributes[i].name;
  }
  return undefined;
}

/**
 * `select`: comma-separated and/or repeated; names trimmed, matched case-insensitively to `id`,
 * `create_at` or an attribute (the response uses the model's spelling), duplicates collapsed.
 * Absent, or nothing but commas and spaces: undefined (all fields).
 */
export function selectFields(query: QueryParams, model: DataModel): string[] | undefined {
  const values = query.get('select');
  if (values === undefined) return undefined;
  const names: string[] = [];
  for (const value of values) {
    for (const item of value.split(',')) {
      const name = item.trim();
      if (name.length === 0) continue;
      const field = canonicalField(model, name);
      if (field === undefined) {
        throw new InvalidArgumentError(
          `parameter 'select' names an unknown field ${quote(name)}: allowed are id, create_at and the model's attributes`,
        );
      }
      if (!names.includes(field)) names.push(field);
    }
  }
  return names.length === 0 ? undefined : names;
}
