/**
 * Object ids as RHILEX makes them: a prefix and 8 characters from [2-9A-Z] (shortuuid's alphabet
 * upper-cased, without the easily confused 0 and 1). 34^8 ≈ 1.8e12 values; callers that need
 * uniqueness check their own ids and draw again on a clash.
 */
import { randomInt } from 'node:crypto';

export type IdPrefix = 'SCHEMA' | 'PROPER' | 'RULE' | 'INEND';

const ALPHABET = '23456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const SUFFIX_LENGTH = 8;

export function newId(prefix: IdPrefix): string {
  let id = prefix;
  for (let i = 0; i < SUFFIX_LENGTH; i++) id += ALPHABET[randomInt(ALPHABET.length)];
  return id;
}

/** A fresh id that `taken` does not know yet. */
export function newUniqueId(prefix: IdPrefix, taken: (id: string) => boolean): string {
  let id = newId(prefix);
  while (taken(id)) id = newId(prefix);
  return id;
}

export function isId(prefix: IdPrefix, value: unknown): value is string {
  return typeof value === 'string' && new RegExp(`^${prefix}[2-9A-Z]{${SUFFIX_LENGTH}}$`).test(value);
}
