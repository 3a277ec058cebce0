/**
 * The one domain of record ids and create_at (contract section 20), checked at every door that stores a
 * record: a rule's save (the clock), restore and import. Ids stop 2^32 short of 2^53 so that an id plus
 * any count the store adds to it stays an exact double; create_at is what `Date` prints as a four-digit
 * year. Imports nothing.
 */

/** The highest id a record may have: 2^53 - 2^32. */
export const ID_MAX = 2 ** 53 - 2 ** 32;
/** 1970-01-01T00:00:00.000Z. */
export const CREATE_AT_MIN_MS = 0;
/** 9999-12-31T23:59:59.999Z. */
export const CREATE_AT_MAX_MS = 253_402_300_799_999;

export function isIdInDomain(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 1 && id <= ID_MAX;
}

export function isCreateAtInDomain(ms: number): boolean {
  return Number.isSafeInteger(ms) && ms >= CREATE_AT_MIN_MS && ms <= CREATE_AT_MAX_MS;
}

/** The rule an id broke, for a message that names its line or caller; undefined when it is in the domain. */
export function idDomainRule(id: unknown): string | undefined {
  if (typeof id === 'number' && isIdInDomain(id)) return undefined;
  return `id must be an integer from 1 to ${ID_MAX} (2^53 - 2^32), got ${shown(id)}`;
}

/** The rule a create_at broke; undefined when it is in the domain. */
export function createAtDomainRule(ms: unknown): string | undefined {
  if (typeof ms === 'number' && isCreateAtInDomain(ms)) return undefined;
  return `create_at must be whole milliseconds from 1970-01-01T00:00:00.000Z (0) to 9999-12-31T23:59:59.999Z (${CREATE_AT_MAX_MS}), got ${shown(ms)}`;
}

function shown(v: unknown): string {
  const text = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
