/**
 * The one shape of a message about a value that breaks a rule, `<name> must be <rule>, got <value>`,
 * with ranges written `min..max`: the shape src/http/core/params.ts's `badParameter` gives query parameters,
 * used by the configuration, the models and the scripts too.
 */

/** Characters of a string value a message shows; the rest is cut (a value can be a whole request body). */
export const VALUE_CHARS_SHOWN = 48;

/** A value as a message shows it: strings JSON-quoted and cut, objects and arrays named, not dumped. */
export function describeValue(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object' && value !== null) return 'an object';
  if (typeof value === 'string') {
    return JSON.stringify(value.length > VALUE_CHARS_SHOWN ? `${value.slice(0, VALUE_CHARS_SHOWN)}...` : value);
  }
  return String(value);
}

/** An inclusive range as every message writes it. */
export function range(min: number, max: number): string {
  return `${min}..${max}`;
}

/** A choice as every message writes it: `one of none, interval or always` (no comma before the value). */
export function oneOf(values: readonly string[]): string {
  return values.length < 2 ? `one of ${values.join('')}` : `one of ${values.slice(0, -1).join(', ')} or ${values[values.length - 1]}`;
}

/** `rule` is written to follow "must be": `an integer in ${range(1, 1000)}`, `one of a, b`. */
export function mustBe(name: string, rule: string, value: unknown): string {
  return `${name} must be ${rule}, got ${describeValue(value)}`;
}

/** An object as messages for people name it (contract 18): `water (SCHEMA…)`, the bare uuid when the name is unknown. */
export function named(name: string | undefined, uuid: string): string {
  return name === undefined || name === '' ? uuid : `${name} (${uuid})`;
}
