/**
 * `FIELDS` in a model directory: the attribute names, in the order the payloads' value arrays use them,
 * and their types. Values are stored by position and decoded as they were written, so a model definition
 * that lists other names, another order or another type for a name (an edited or restored models.json)
 * would bring values back under the wrong name or type. The store refuses to open such a model instead.
 * Written when the directory is created (tmp + fsync + rename + fsync of the dir); a format-1 file (names
 * only, written before types were kept) gains the types the first time the model opens with them.
 */
import fs from 'node:fs';
import { writeFileAtomicSync } from './file-io.js';
import { StateError } from '../errors.js';

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

/** Throws when the directory was written with other field names, another order or other types. */
export function checkFieldsSync(dir: string, modelId: string, fields: StoredFields): void {
  const stored = readFieldsSync(dir);
  if (stored === undefined) return writeFieldsSync(dir, fields);
  const { names } = fields;
  if (stored.names.length !== names.length || stored.names.some((f, i) => f !== names[i])) {
    throw new StateError(
      `model ${modelId}: its data was written with the attributes [${stored.names.join(', ')}] but the model now lists [${names.join(', ')}]; ` +
        'values are stored by position, so it stays closed until the model definition lists them in that order again',
    );
  }
  if (fields.types === undefined) return;
  if (stored.types === undefined) return writeFieldsSync(dir, fields);
  const retyped = names.filter((_, i) => stored.types?.[i] !== fields.types?.[i]);
  if (retyped.length === 0) return;
  const what = retyped.map((n) => `${n} (stored ${stored.types?.[names.indexOf(n)]}, now ${fields.types?.[names.indexOf(n)]})`);
  throw new StateError(
    `model ${modelId}: its data was written with other attribute types: ${what.join(', ')}; ` +
      'it stays closed until the model definition gives those attributes their stored types again',
  );
}
