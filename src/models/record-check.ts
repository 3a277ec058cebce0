/**
 * Checks a record that a script writes (`rds:Save`, `rds:UpdateLast`) against its model. Pure and
 * synchronous, on plain data only: it also runs inside the script worker threads on a cloned model.
 * The error strings are what Lua receives; keep them short and stable (docs/models.md lists them). Each
 * names the model by name and uuid (contract 18): a rule may write to several.
 */
import { describeValue, named, range } from '../util/messages.js';
import type { Attribute, DataModel, RecordCheck } from './types.js';

const RESERVED_KEYS = new Set(['id', 'create_at']);
const GEO_PART = /^[+-]?(\d+(\.\d+)?|\.\d+)$/;

/**
 * `save` returns every attribute in model order, missing ones set to their default; `update`
 * returns only the given attributes, in model order. The first problem found is reported.
 */
export function checkRecord(model: DataModel, input: Record<string, unknown>, mode: 'save' | 'update'): RecordCheck {
  if (!model.published) return fail(`model ${named(model.name, model.uuid)} is not published`);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return fail(`record for model ${named(model.name, model.uuid)} must be a table, got ${typeName(input)}`);
  }
  // Checked values by attribute index: this runs for every record a rule stores, so no Map and no
  // entry arrays (the garbage overflows a busy worker's young generation, docs/performance.md "Memory").
  const { attributes } = model;
  const given: unknown[] = new Array<unknown>(attributes.length).fill(NOT_GIVEN);
  for (const key of Object.keys(input)) {
    const value = input[key];
    // A Lua table never holds nil; an undefined property is the same as an absent one.
    if (value === undefined) continue;
    if (RESERVED_KEYS.has(key)) return fail(`model ${named(model.name, model.uuid)}: key '${key}' is set by the store and cannot be written`);
    const index = attributeIndex(attributes, key);
    if (index < 0) return fail(`unknown attribute '${key}' for model ${named(model.name, model.uuid)}`);
    const checked = checkValue(attributes[index], value);
    if (checked instanceof RefusedValue) return fail(`model ${named(model.name, model.uuid)}: ${checked.error}`);
    given[index] = checked;
  }
  const record: Record<string, unknown> = {};
  for (let i = 0; i < attributes.length; i++) {
    const attribute = attributes[i];
    if (given[i] !== NOT_GIVEN) record[attribute.name] = given[i];
    else if (mode === 'save') record[attribute.name] = attribute.rule.defaultValue;
  }
  return { ok: true, record };
}

const NOT_GIVEN = Symbol('not given');

function attributeIndex(attributes: readonly Attribute[], name: string): number {
  for (let i = 0; i < attributes.length; i++) if (attributes[i].name === name) return i;
  return -1;
}

/**
 * Why checkValue refused a value. The value it accepts comes back as it is, not wrapped: this runs for
 * every field of every record a rule stores, and an answer object per field was garbage for each.
 */
export class RefusedValue {
  constructor(readonly error: string) {}
}

/** Returns the value to store (converted and rounded), or a RefusedValue saying why not. */
export function checkValue(attribute: Attribute, value: unknown): unknown {
  const { name, type, rule } = attribute;
  switch (type) {
    case 'INTEGER':
    case 'FLOAT': {
      const number = typeof value === 'bigint' && Number.isSafeInteger(Number(value)) ? Number(value) : value;
      if (typeof number !== 'number') return wrongType(attribute, value);
      if (!Number.isFinite(number)) return new RefusedValue(`attribute '${name}' expects a finite number, got ${luaNumber(number)}`);
      let stored = number;
      if (type === 'INTEGER') {
        if (!Number.isInteger(number)) return new RefusedValue(`attribute '${name}' expects INTEGER, got fraction ${number}`);
        if (!Number.isSafeInteger(number)) {
          return new RefusedValue(`attribute '${name}' expects INTEGER within ±${Number.MAX_SAFE_INTEGER}, got ${number}`);
        }
      } else if (rule.round > 0) {
        stored = roundDecimals(number, rule.round);
      }
      if (rule.max > rule.min && (stored < rule.min || stored > rule.max)) {
        return new RefusedValue(`attribute '${name}' must be in ${range(rule.min, rule.max)}, got ${stored}`);
      }
      return stored === 0 ? 0 : stored;
    }
    case 'BOOL':
      return typeof value === 'boolean' ? value : wrongType(attribute, value);
    case 'STRING': {
      if (typeof value !== 'string') return wrongType(attribute, value);
      // UTF-8 takes at most 3 bytes a UTF-16 unit: a string that short is within the limit uncounted.
      if (rule.max > 0 && value.length * 3 > rule.max) {
        const bytes = Buffer.byteLength(value, 'utf8');
        if (bytes > rule.max) return new RefusedValue(`attribute '${name}' must be at most ${rule.max} bytes, got ${bytes}`);
      }
      return value;
    }
    case 'GEO':
      if (typeof value !== 'string') return wrongType(attribute, value);
      if (!isGeo(value)) {
        return new RefusedValue(`attribute '${name}' expects GEO ${GEO_RULE}, got ${describeValue(value)}`);
      }
      return value;
  }
}

/** What a GEO value must be, as messages write it. */
export const GEO_RULE = `"lat,lng" with lat in ${range(-90, 90)} and lng in ${range(-180, 180)}`;

/** `"lat,lng"`: two decimal numbers, spaces around them allowed, lat in -90..90, lng in -180..180. */
export function isGeo(value: string): boolean {
  const parts = value.split(',').map((p) => p.trim());
  if (parts.length !== 2 || !parts.every((p) => GEO_PART.test(p))) return false;
  const [lat, lng] = parts.map(Number);
  return Math.abs(lat) <= 90 && Math.abs(lng) <= 180;
}

/**
 * Half away from zero, on the decimal digits as written: 1.005 -> 1.01, which scaling the binary
 * value by 100 would get wrong. Numbers too large to hold more decimals are returned unchanged.
 */
export function roundDecimals(value: number, decimals: number): number {
  if (Math.abs(value) * 10 ** decimals >= Number.MAX_SAFE_INTEGER) return value;
  const [mantissa, exponent = '0'] = Math.abs(value).toString().split('e');
  const shifted = Math.round(Number(`${mantissa}e${Number(exponent) + decimals}`));
  const rounded = Number(`${shifted}e${-decimals}`);
  return value < 0 ? -rounded : rounded;
}

function wrongType(attribute: Attribute, value: unknown): RefusedValue {
  return new RefusedValue(`attribute '${attribute.name}' expects ${attribute.type}, got ${typeName(value)}`);
}

/** Lua's names for what a script passed: a JS object or array came from a table, null from nil. */
function typeName(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'object') return 'table';
  if (typeof value === 'bigint') return 'number';
  return typeof value;
}

function luaNumber(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  return value > 0 ? 'inf' : '-inf';
}

function fail(error: string): RecordCheck {
  return { ok: false, error };
}
