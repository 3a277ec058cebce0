/**
 * rules.json and inends.json: a versioned JSON document holding one list, replaced atomically.
 * Field checks shared by the rule and input parsers live here too.
 */
import { readFile } from 'node:fs/promises';
import { InvalidArgumentError, StateError } from '../errors.js';
import { writeFileAtomicOrRestore } from '../util/atomic-file.js';
import { mustBe } from '../util/messages.js';

const FORMAT_VERSION = 1;
const NAME_CHARS_MAX = 200;

export async function readList<T>(path: string, key: string): Promise<T[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  let doc: Record<string, unknown>;
  try {
    doc = JSON.parse(text) as Record<string, unknown>;
  } catch (err) {
    throw new StateError(`${path} is not valid JSON (${(err as Error).message}): restore it from a backup`);
  }
  if (doc?.version !== FORMAT_VERSION || !Array.isArray(doc[key])) {
    throw new StateError(`${path}: expected {"version":${FORMAT_VERSION},"${key}":[...]}: restore it from a backup`);
  }
  return doc[key] as T[];
}

/** Writes `items`; on failure puts `previous` (what memory keeps) back, see writeFileAtomicOrRestore. */
export function writeList<T>(path: string, key: string, items: readonly T[], previous: readonly T[]): Promise<void> {
  return writeFileAtomicOrRestore(path, listText(key, items), listText(key, previous));
}

function listText<T>(key: string, items: readonly T[]): string {
  return `${JSON.stringify({ version: FORMAT_VERSION, [key]: items }, null, 2)}\n`;
}

export function requireBody(input: unknown): Record<string, unknown> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new InvalidArgumentError(mustBe('request body', 'a JSON object', input));
  }
  return input as Record<string, unknown>;
}

export function requireName(value: unknown, field = 'name'): string {
  if (typeof value !== 'string' || value.trim() === '') throw new InvalidArgumentError(mustBe(field, 'a non-empty string', value));
  if (value.length > NAME_CHARS_MAX) throw new InvalidArgumentError(`${field} must be at most ${NAME_CHARS_MAX} characters, got ${value.length}`);
  return value.trim();
}

/** Absent means empty; anything else must be a string. */
export function optionalText(value: unknown, field: string, maxLength: number): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new InvalidArgumentError(mustBe(field, 'a string', value));
  if (value.length > maxLength) throw new InvalidArgumentError(`${field} must be at most ${maxLength} characters, got ${value.length}`);
  return value;
}

export function requireUuid(value: unknown, field = 'uuid'): string {
  if (typeof value !== 'string' || value === '') throw new InvalidArgumentError(mustBe(field, 'a non-empty string', value));
  return value;
}
