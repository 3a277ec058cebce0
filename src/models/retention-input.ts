/**
 * A model's own retention (contract 14): `{maxRecords, maxBytes, maxAgeHours}`, each a non-negative
 * integer (0 = unlimited) or null (the `[store]` default applies). Kept in models.json with the model.
 */
import { InvalidArgumentError } from '../errors.js';
import type { RetentionLimits } from '../store/base/types.js';
import type { ModelRetention } from './types.js';
import { requireObject } from './attribute-input.js';
import { mustBe, range } from '../util/messages.js';

const HOUR_MS = 3_600_000;
const MAX_AGE_HOURS_MAX = 876_000;
const KEYS = ['maxRecords', 'maxBytes', 'maxAgeHours'] as const;

/** The request body of `PUT schema/retention`; an absent key counts as null (the default). */
export function parseRetention(input: unknown): ModelRetention {
  const body = requireObject(input, 'request body');
  const unknown = Object.keys(body).filter((k) => !(KEYS as readonly string[]).includes(k));
  if (unknown.length > 0) {
    throw new InvalidArgumentError(`field '${unknown[0]}' is not a retention limit: use ${KEYS.join(', ')}`);
  }
  const out = { maxRecords: null, maxBytes: null, maxAgeHours: null } as ModelRetention;
  for (const key of KEYS) {
    const value = body[key];
    if (value === undefined || value === null) continue;
    const max = key === 'maxAgeHours' ? MAX_AGE_HOURS_MAX : Number.MAX_SAFE_INTEGER;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > max) {
      throw new InvalidArgumentError(mustBe(`field '${key}'`, `an integer in ${range(0, max)} (0 = unlimited) or null (the [store] default)`, value));
    }
    out[key] = value;
  }
  return out;
}

/** The limits the store applies: the model's own where set, else the store's defaults. */
export function effectiveRetention(own: ModelRetention | undefined, defaults: RetentionLimits): RetentionLimits {
  return {
    maxRecords: own?.maxRecords ?? defaults.maxRecords,
    maxBytes: own?.maxBytes ?? defaults.maxBytes,
    maxAgeMs: own?.maxAgeHours === null || own?.maxAgeHours === undefined ? defaults.maxAgeMs : own.maxAgeHours * HOUR_MS,
  };
}

/** As the API shows it: in the units of the request. */
export function retentionView(limits: RetentionLimits): { maxRecords: number; maxBytes: number; maxAgeHours: number } {
  return { maxRecords: limits.maxRecords, maxBytes: limits.maxBytes, maxAgeHours: limits.maxAgeMs / HOUR_MS };
}
