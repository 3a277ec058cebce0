/** Turns one raw ini (or environment) string into a typed value, or throws naming the key and the rule. */
import { InvalidArgumentError } from '../errors.js';
import { keyName, type EnumKey, type IntKey } from './keys.js';

const INTEGER = /^[+-]?\d+$/;

export function parseIntValue(spec: IntKey, raw: string): number {
  const value = INTEGER.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < spec.min || value > spec.max) {
    throw new InvalidArgumentError(
      `${keyName(spec)} must be an integer in ${spec.min}..${spec.max} (got ${JSON.stringify(raw)})`,
    );
  }
  return value;
}

/** Case-insensitive; returns the canonical spelling. */
export function parseEnumValue(spec: EnumKey, raw: string): string {
  const value = spec.values.find((v) => v === raw.toLowerCase());
  if (value === undefined) {
    throw new InvalidArgumentError(
      `${keyName(spec)} must be one of ${spec.values.join(', ')} (got ${JSON.stringify(raw)})`,
    );
  }
  return value;
}

/** RHILEX's secret list: every occurrence, each split on commas, items trimmed, empty items dropped, duplicates once. */
export function splitSecrets(occurrences: readonly string[]): string[] {
  const secrets = occurrences.flatMap((value) => value.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  return [...new Set(secrets)];
}
