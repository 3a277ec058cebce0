/**
 * `FIELDS` in a model directory: the stored columns, name and type, in the order of the payloads' value
 * arrays; columns are only appended (see field-layout.ts). Written atomically (tmp + fsync + rename +
 * fsync of the dir) when the directory is created and whenever a column is added; a format-1 file (names
 * only, written before types were kept) gains the types the first time the model opens with them.
 */
import fs from 'node:fs';
import { writeFileAtomicSync } from '../base/file-io.js';
import { StateError } from '../../errors.js';

export const FIELDS_FILE = 'FIELDS';
const FORMAT = 2;

export interface StoredFields {
  names: readonly string[];
  /** One per name; undefined for a format-1 file or a model opened without types. */
  types?: readonly string[];
}

export function writeFieldsSync(dir: string, fields: StoredFields): void {
  const body = fields.types === undefined ? { format: FORMAT, fields: fields.names } : { format: FORMAT, fields: fields.names, types: fields.types };
  writeFileAtomicSync(dir, FIELDS_FILE, Buffer.from(`${JSON.stringify(body)}\n`));
}

function isStringArray(v: unknown): v is string[] {
  return Array.isArray(v) && v.every((f) => typeof f === 'string');
}

/** The stored names and types; undefined for a directory written before this file existed. */
export function readFieldsSync(dir: string): StoredFields | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`${dir}/${FIELDS_FILE}`, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const parsed = JSON.parse(text) as { format?: unknown; fields?: unknown; types?: unknown };
  const typesOk = parsed.types === undefined || (isStringArray(parsed.types) && isStringArray(parsed.fields) && parsed.types.length === parsed.fields.length);
  if ((parsed.format !== 1 && parsed.format !== FORMAT) || !isStringArray(parsed.fields) || !typesOk) {
    throw new StateError(`${dir}/${FIELDS_FILE} is damaged: expected {"format":${FORMAT},"fields":[names],"types":[types]}`);
  }
  return { names: parsed.fields, ...(isStringArray(parsed.types) ? { types: parsed.types } : {}) };
}

/**
 * The stored columns, written when the directory predates FIELDS and gaining the types a format-1 file
 * lacks (a format-1 file listed the visible fields, which were the columns then).
 */
export function loadColumnsSync(dir: string, visible: StoredFields): StoredFields {
  const stored = readFieldsSync(dir);
  if (stored === undefined) {
    writeFieldsSync(dir, visible);
    return visible;
  }
  if (stored.types !== undefined || visible.types === undefined || stored.names.length !== visible.names.length) return stored;
  if (stored.names.some((n, i) => n !== visible.names[i])) return stored;
  const typed = { names: stored.names, types: visible.types };
  writeFieldsSync(dir, typed);
  return typed;
}
