/**
 * Validation of management-API bodies for models and attributes (RHILEX's JSON shapes). Every error
 * is an InvalidArgumentError naming the field and the rule. Uniqueness and state are checked by the
 * registry, which knows the other attributes.
 */
import { InvalidArgumentError } from '../errors.js';
import { describeValue, mustBe, oneOf, range } from '../util/messages.js';
import { GEO_RULE, isGeo } from './record-check.js';
import {
  ATTRIBUTE_RW,
  ATTRIBUTE_TYPES,
  type Attribute,
  type AttributeRule,
  type AttributeRw,
  type AttributeType,
} from './types.js';

export const ATTRIBUTE_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** The store's own record keys. Compared case-insensitively, like every attribute name. */
export const RESERVED_NAMES = ['id', 'create_at'] as const;
const PROTOTYPE_KEY = '__proto__';
export const MODEL_NAME_MAX = 128;
const DESCRIPTION_MAX = 1024;
const LABEL_MAX = 256;
const UNIT_MAX = 64;
const BOOL_LABEL_MAX = 64;
const ROUND_MAX = 15;

export type AttributeFields = Omit<Attribute, 'uuid' | 'schemaId'>;

const NUMERIC_STRING = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

export function requireObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(mustBe(what, 'a JSON object', value));
  }
  return value as Record<string, unknown>;
}

/** A required id-like string field (`uuid`, `schemaId`). */
export function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '') {
    throw new InvalidArgumentError(mustBe(field, 'a non-empty string', value));
  }
  return value;
}

export function parseModelName(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MODEL_NAME_MAX) {
    throw new InvalidArgumentError(mustBe('name', `a non-empty string of at most ${MODEL_NAME_MAX} characters`, value));
  }
  return value;
}

/** `undefined` or `null`: `fallback`. */
export function optionalText(value: unknown, field: string, max: number, fallback: string): string {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string') throw new InvalidArgumentError(mustBe(field, 'a string', value));
  if (value.length > max) {
    throw new InvalidArgumentError(`${field} must be at most ${max} characters, got ${value.length}`);
  }
  return value;
}

export function parseModelDescription(value: unknown, fallback: string): string {
  return optionalText(value, 'description', DESCRIPTION_MAX, fallback);
}

/**
 * The attribute fields of a create (no `current`) or update body. On update, absent fields keep
 * their current value; a given `rule` replaces the whole rule. When the type changes and no rule
 * is given, the rule is kept except its default, which becomes the new type's zero value.
 */
export function parseAttributeFields(body: Record<string, unknown>, current?: Attribute): AttributeFields {
  const name = current && body.name === undefined ? current.name : parseAttributeName(body.name);
  const type = current && body.type === undefined ? current.type : parseType(body.type);
  const rw = body.rw === undefined || body.rw === null || body.rw === '' ? (current?.rw ?? 'R') : parseRw(body.rw);
  let rule: AttributeRule;
  if (body.rule !== undefined && body.rule !== null) rule = parseRule(requireObject(body.rule, 'rule'), type);
  else if (!current) rule = parseRule({}, type);
  else if (current.type === type) rule = current.rule;
  else rule = { ...current.rule, defaultValue: zeroValue(type) };
  return {
    label: optionalText(body.label, 'label', LABEL_MAX, current?.label ?? ''),
    name,
    description: optionalText(body.description, 'description', DESCRIPTION_MAX, current?.description ?? ''),
    type,
    rw,
    unit: optionalText(body.unit, 'unit', UNIT_MAX, current?.unit ?? ''),
    rule,
  };
}

export function parseAttributeName(value: unknown): string {
  if (typeof value !== 'string' || !ATTRIBUTE_NAME_PATTERN.test(value)) {
    throw new InvalidArgumentError(`attribute name must match ${ATTRIBUTE_NAME_PATTERN.source}, got ${describeValue(value)}`);
  }
  if ((RESERVED_NAMES as readonly string[]).includes(value.toLowerCase())) {
    throw new InvalidArgumentError(`attribute name "${value}" is reserved: ${RESERVED_NAMES.join(' and ')} are set by the store`);
  }
  // A record is a JavaScript object on its way to the log: assigning this key sets the object's prototype
  // instead, and the value was lost without a word.
  if (value === PROTOTYPE_KEY) throw new InvalidArgumentError(`attribute name "${PROTOTYPE_KEY}" is not allowed: it names a JavaScript object's prototype`);
  return value;
}

function parseType(value: unknown): AttributeType {
  if (!(ATTRIBUTE_TYPES as readonly unknown[]).includes(value)) {
    throw new InvalidArgumentError(mustBe('type', oneOf(ATTRIBUTE_TYPES), value));
  }
  return value as AttributeType;
}

function parseRw(value: unknown): AttributeRw {
  if (!(ATTRIBUTE_RW as readonly unknown[]).includes(value)) {
    throw new InvalidArgumentError(mustBe('rw', oneOf(ATTRIBUTE_RW), value));
  }
  return value as AttributeRw;
}

/** RHILEX's rule object; unknown keys (the UI sends latitude/longitude/range for GEO) are ignored. */
export function parseRule(body: Record<string, unknown>, type: AttributeType): AttributeRule {
  const min = ruleInteger(body, 'min');
  const max = ruleInteger(body, 'max');
  const round = ruleInteger(body, 'round');
  if (round < 0 || round > ROUND_MAX) {
    throw new InvalidArgumentError(mustBe('rule.round', `an integer in ${range(0, ROUND_MAX)}`, round));
  }
  if ((type === 'INTEGER' || type === 'FLOAT') && max < min) {
    throw new InvalidArgumentError(`${mustBe('rule.max', `at least rule.min (${min})`, max)}; min and max both 0 mean no bound`);
  }
  if (type === 'STRING' && max < 0) {
    throw new InvalidArgumentError(`${mustBe('rule.max', 'at least 0 for STRING', max)}; it is the longest length in bytes, 0 for no limit`);
  }
  // Key order as RHILEX serialises the rule.
  return {
    defaultValue: parseDefaultValue(body.defaultValue, type),
    max,
    min,
    trueLabel: optionalText(body.trueLabel, 'rule.trueLabel', BOOL_LABEL_MAX, ''),
    falseLabel: optionalText(body.falseLabel, 'rule.falseLabel', BOOL_LABEL_MAX, ''),
    round,
  };
}

function ruleInteger(body: Record<string, unknown>, field: 'min' | 'max' | 'round'): number {
  const value = body[field];
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isSafeInteger(value)) {
    throw new InvalidArgumentError(mustBe(`rule.${field}`, 'an integer', value));
  }
  return value;
}

/**
 * Typed defaults. RHILEX's UI sends `"0"` whatever the type, so exact numeric strings are numbers,
 * "0"/"1"/"true"/"false" are booleans, and "0" means "0,0" for GEO. Missing, null or "" is the
 * type's zero value. Bounds are not applied: they constrain written values, and the default stands
 * for "never received" (and the UI's "0" would otherwise break every bounded attribute).
 */
export function parseDefaultValue(value: unknown, type: AttributeType): number | boolean | string {
  if (value === undefined || value === null || value === '') return zeroValue(type);
  const refuse = (rule: string): never => {
    throw new InvalidArgumentError(mustBe('rule.defaultValue', `${rule} for ${type}`, value));
  };
  switch (type) {
    case 'INTEGER':
    case 'FLOAT': {
      const number = typeof value === 'string' && NUMERIC_STRING.test(value) ? Number(value) : value;
      if (typeof number !== 'number' || !Number.isFinite(number)) return refuse('a number');
      if (type === 'INTEGER' && !Number.isSafeInteger(number)) return refuse('an integer');
      return number;
    }
    case 'BOOL':
      if (value === true || value === 'true' || value === '1' || value === 1) return true;
      if (value === false || value === 'false' || value === '0' || value === 0) return false;
      return refuse('true or false');
    case 'STRING':
      return typeof value === 'string' ? value : refuse('a string');
    case 'GEO':
      if (value === '0' || value === 0) return zeroValue('GEO');
      return typeof value === 'string' && isGeo(value)
        ? value
        : refuse(GEO_RULE);
  }
}

export function zeroValue(type: AttributeType): number | boolean | string {
  switch (type) {
    case 'INTEGER':
    case 'FLOAT':
      return 0;
    case 'BOOL':
      return false;
    case 'STRING':
      return '';
    case 'GEO':
      return '0,0';
  }
}
