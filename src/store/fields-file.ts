/**
 * `FIELDS` in a model directory: the attribute names, in the order the payloads' value arrays use them.
 * Values are stored by position, so a model definition that lists other names or another order (an edited
 * or restored models.json) would bring values back under the wrong names. The store refuses to open such
 * a model instead. Written once when the directory is created (tmp + fsync + rename + fsync of the dir).
 */
import fs from 'node:fs';
import { writeFileAtomicSync } from './file-io.js';
import { StateError } from '../errors.js';

export const FIELDS_FILE = 'FIELDS';
const FORMAT = 1;

export function writeFieldsSync(dir: string, fields: readonly string[]): void {
  writeFileAtomicSync(dir, FIELDS_FILE, Buffer.from(`${JSON.stringify({ format: FORMAT, fields })}\n`));
}

/** The stored names; undefined for a directory written before this file existed. */
export function readFieldsSync(dir: string): string[] | undefined {
  let text: string;
  try {
    text = fs.readFileSync(`${dir}/${FIELDS_FILE}`, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  const parsed = JSON.parse(text) as { format?: unknown; fields?: unknown };
  if (parsed.format !== FORMAT || !Array.isArray(parsed.fields) || !parsed.fields.every((f) => typeof f === 'string')) {
    throw new StateError(`${dir}/${FIELDS_FILE} is damaged: expected {"format":${FORMAT},"fields":[names]}`);
  }
  return parsed.fields as string[];
}

/** Throws when the directory was written with other field names or another order. */
export function checkFieldsSync(dir: string, modelId: string, fields: readonly string[]): void {
  const stored = readFieldsSync(dir);
  if (stored === undefined) return writeFieldsSync(dir, fields);
  if (stored.length === fields.length && stored.every((f, i) => f === fields[i])) return;
  throw new StateError(
    `model ${modelId}: its data was written with the attributes [${stored.join(', ')}] but the model now lists [${fields.join(', ')}]; ` +
      'values are stored by position, so it stays closed until the model definition lists them in that order again',
  );
}
