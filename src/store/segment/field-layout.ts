/**
 * Stored columns and visible fields (contract 13). A model's records are value arrays; position k holds
 * the k-th *column*, identified by name and type. Columns are appended, and a column some record may hold
 * a value in never moves or goes. So a published model can gain an attribute (a new column: older records
 * read its default), lose one (its column stays, hidden; its values come back if an attribute of the same
 * name and type is added again), and list its attributes in any order, without rewriting a byte, and no
 * value can ever come back under another attribute. A hidden column no record holds a value in is dropped
 * at the next addition (withColumnsFor), so churning attribute names does not fill the MODEL_FIELDS_MAX
 * columns: only columns that may hold values count. The columns are kept in FIELDS (fields-file.ts).
 */
import { InvalidArgumentError, StateError } from '../../errors.js';
import { MODEL_FIELDS_MAX } from '../base/constants.js';
import type { StoredFields } from './fields-file.js';

/** The fields a model shows, in its order, with their types and what a record without the column reads. */
export interface VisibleFields {
  names: readonly string[];
  /** Absent for callers that do not type their fields (a column then matches by name). */
  types?: readonly string[];
  defaults?: readonly unknown[];
}

/** For each visible field: the column it reads and its default. */
export interface FieldLayout {
  names: readonly string[];
  columns: readonly number[];
  defaults: readonly unknown[];
}

function columnOf(stored: StoredFields, name: string, type: string | undefined): number {
  for (let k = 0; k < stored.names.length; k++) {
    if (stored.names[k] !== name) continue;
    const storedType = stored.types?.[k];
    if (type === undefined || storedType === undefined || storedType === type) return k;
  }
  return -1;
}

/**
 * The columns plus one for each visible field that has none yet (in visible order); the same object when
 * none is new. Records hold values in the first `written` columns only, so a hidden column at `written` or
 * after holds nothing (its attribute was added and deleted with no record written while it existed): it
 * is dropped then, and its place taken, as contract 13 has no value of it to bring back. Dropping only
 * beyond `written` never moves a column a record holds a value in.
 */
export function withColumnsFor(stored: StoredFields, visible: VisibleFields, written: number): StoredFields {
  const read = visible.names.map((name, i) => columnOf(stored, name, visible.types?.[i]));
  if (!read.includes(-1)) return stored;
  const visibleColumns = new Set(read);
  const names: string[] = [];
  const types: string[] | undefined = stored.types === undefined ? undefined : [];
  const add = (name: string, type: string | undefined): void => {
    names.push(name);
    types?.push(type ?? '');
  };
  stored.names.forEach((name, k) => {
    if (k < written || visibleColumns.has(k)) add(name, stored.types?.[k]);
  });
  visible.names.forEach((name, i) => {
    if (read[i] < 0) add(name, visible.types?.[i]);
  });
  return types === undefined ? { names } : { names, types };
}

/** Throws (the model stays closed) when a visible field has no column: it was not added through the API. */
export function layoutOf(modelId: string, stored: StoredFields, visible: VisibleFields): FieldLayout {
  const columns = visible.names.map((name, i) => columnOf(stored, name, visible.types?.[i]));
  const missing = visible.names.filter((_, i) => columns[i] < 0);
  if (missing.length > 0) {
    const what = missing.map((n) => `${n}${visible.types ? ` (${visible.types[visible.names.indexOf(n)]})` : ''}`).join(', ');
    const known = stored.names.map((n, k) => `${n}${stored.types?.[k] ? ` (${stored.types[k]})` : ''}`).join(', ');
    throw new StateError(
      `model ${modelId}: the attributes ${what} have no stored column (stored: ${known}); the model definition was ` +
        'changed outside the API (an edited or restored models.json), so the model stays closed until it lists only stored attributes',
    );
  }
  return { names: visible.names, columns, defaults: visible.defaults ?? visible.names.map(() => null) };
}

/** A record's keys: at most MODEL_FIELDS_MAX, none empty, reserved (id, create_at) or repeated. */
export function validateFields(fields: readonly string[]): void {
  if (!Array.isArray(fields) || fields.length > MODEL_FIELDS_MAX) {
    throw new InvalidArgumentError(`fields must be an array of at most ${MODEL_FIELDS_MAX} names`);
  }
  const seen = new Set<string>();
  for (const f of fields) {
    if (typeof f !== 'string' || f.length === 0 || f === 'id' || f === 'create_at' || seen.has(f)) {
      throw new InvalidArgumentError(`field ${JSON.stringify(f)} is empty, reserved (id, create_at) or repeated`);
    }
    seen.add(f);
  }
}
