/**
 * The fields of one model's log and the stored columns they read (field-layout.ts): how a record
 * becomes the value array of a frame, and back. Replaced as a whole when the attributes change after
 * publish, so a read sees either the old layout or the new one, never a mix.
 */
import { projection, type Projection } from '../read/reader.js';
import { type StoredFields, writeFieldsSync } from '../segment/fields-file.js';
import { type FieldLayout, type VisibleFields, layoutOf, validateFields, withColumnsFor } from '../segment/field-layout.js';
import { MODEL_FIELDS_MAX } from '../base/constants.js';
import { InvalidArgumentError } from '../../errors.js';

export class LogFields {
  private readonly index: Map<string, number>;
  /** The projection of every field, made once (latest() without select uses it on every call). */
  readonly full: Projection;
  /** One past the last column a visible field reads. */
  private readonly visibleEnd: number;
  /** valuesFrom's last keys array and the column of each key (-1: no such field). */
  private lastKeys: readonly string[] | undefined;
  private lastKeyColumns: number[] = [];
  /** storesInKeyOrder's last keys array and its answer. */
  private inOrderKeys: readonly string[] | undefined;
  private inOrder = false;

  constructor(
    readonly columns: StoredFields,
    readonly layout: FieldLayout,
    /**
     * How many leading columns records may hold values in: the longest value array made so far. Not known
     * for the records already on disk, so at open: every column.
     */
    private written = columns.names.length,
  ) {
    this.index = new Map(layout.names.map((f, i) => [f, i]));
    this.full = projection(layout, undefined);
    this.visibleEnd = layout.columns.reduce((end, k) => Math.max(end, k + 1), 0);
  }

  /** The fields a record shows, in the model's order. */
  get names(): readonly string[] {
    return this.layout.names;
  }

  /**
   * The fields after an attribute change (contract 13): a field without a column gets a new one, written
   * to FIELDS in `dir` before it is used, so a crash can only leave an unused column behind. Hidden columns
   * past `written` go in the same write (withColumnsFor); a change that adds no column writes nothing.
   */
  changed(modelId: string, dir: string, visible: VisibleFields): LogFields {
    validateFields(visible.names);
    const columns = withColumnsFor(this.columns, visible, this.written);
    if (columns.names.length > MODEL_FIELDS_MAX) {
      throw new InvalidArgumentError(columnsFullMessage(modelId, columns.names.length, columns.names.length - visible.names.length));
    }
    const layout = layoutOf(modelId, columns, visible);
    if (columns !== this.columns) writeFieldsSync(dir, columns);
    return new LogFields(columns, layout, this.written);
  }

  /** The stored column of field `name`, or -1 when the model has no such field. */
  columnOf(name: string): number {
    const i = this.index.get(name);
    return i === undefined ? -1 : this.layout.columns[i];
  }

  /**
   * A frame's values for `record`: each field in its column. The record does not hold a hidden column
   * (a deleted attribute's): one past the last field's is left out, one before it stored as undefined,
   * which every read takes for "not held" as it does the end of the array. So when an attribute of the
   * same name and type comes back, this record reads its default (contract 13), never a null it was
   * given; and a hidden column past every record written stays empty, so withColumnsFor can drop it.
   */
  valuesOf(record: Record<string, unknown>): unknown[] {
    const { names, columns } = this.layout;
    const values = new Array<unknown>(this.visibleEnd).fill(undefined);
    for (let i = 0; i < names.length; i++) values[columns[i]] = record[names[i]] ?? null;
    return this.noteWritten(values);
  }

  /**
   * valuesOf for the record whose keys are `keys` and values source[at..]: the same array valuesOf gives
   * the object of those keys and values. The columns of the keys are looked up once per keys array (the
   * ops of a batch share one per shape).
   */
  valuesFrom(keys: readonly string[], source: readonly unknown[], at: number): unknown[] {
    if (keys !== this.lastKeys) {
      this.lastKeyColumns = keys.map((key) => this.columnOf(key));
      this.lastKeys = keys;
    }
    const keyColumns = this.lastKeyColumns;
    const { columns } = this.layout;
    const values = new Array<unknown>(this.visibleEnd).fill(undefined);
    for (let i = 0; i < columns.length; i++) values[columns[i]] = null;
    for (let k = 0; k < keys.length; k++) {
      if (keyColumns[k] >= 0) values[keyColumns[k]] = source[at + k] ?? null;
    }
    return this.noteWritten(values);
  }

  /**
   * Whether a record of `keys` stores its values as they come, in their order: the keys are the fields,
   * in order, each in the column of its place and no other column before the last. Then a value array
   * packed in the keys' order is the frame's payload (ModelLog.savePacked). Asked once per keys array.
   */
  storesInKeyOrder(keys: readonly string[]): boolean {
    if (keys !== this.inOrderKeys) {
      const { names, columns } = this.layout;
      this.inOrderKeys = keys;
      this.inOrder = keys.length === names.length && this.visibleEnd === keys.length && keys.every((key, i) => names[i] === key && columns[i] === i);
    }
    if (this.inOrder) this.written = Math.max(this.written, keys.length);
    return this.inOrder;
  }

  /** `last` with the given fields replaced (undefined leaves a field as it was); `what` names the caller in errors. */
  updated(last: readonly unknown[], fields: Record<string, unknown>, what: string): unknown[] {
    const values = last.slice();
    for (const k of Object.keys(fields)) {
      const column = this.columnOf(k);
      if (column < 0) throw new InvalidArgumentError(`${what}: unknown field ${JSON.stringify(k)}`);
      if (fields[k] !== undefined) values[column] = fields[k];
    }
    return this.noteWritten(values);
  }

  /** `values` is about to be written: its columns may hold values from now on. */
  private noteWritten(values: unknown[]): unknown[] {
    this.written = Math.max(this.written, values.length);
    return values;
  }
}

/** Every column counts against the limit, hidden ones too: say how many those are and what frees them. */
function columnsFullMessage(modelId: string, total: number, hidden: number): string {
  const head = `model ${modelId}: at most ${MODEL_FIELDS_MAX} stored columns, adding these would make ${total}`;
  if (hidden === 0) return head;
  return (
    `${head}: ${hidden} of them keep the values of deleted attributes (contract 13), which come back when an attribute of the same ` +
    'name and type is added again; add one of those back, or fix the model (back to draft: deletes every record and every stored ' +
    'column) and publish it again'
  );
}
