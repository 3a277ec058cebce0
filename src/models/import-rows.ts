/**
 * The rows of an export file (contract section 6: CSV with a header row, or JSON Lines) as records to
 * import: `create_at` parsed, `id` ignored (imported rows get new ids), every attribute checked as a
 * script's write is (type, bounds, rounding). Errors name the line and the column.
 */
import { InvalidArgumentError } from '../errors.js';
import type { LineBatch } from '../util/lines.js';
import { describeValue, mustBe, named } from '../util/messages.js';
import { checkValue, RefusedValue } from './record-check.js';
import type { Attribute, DataModel } from './types.js';

export const IMPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

export interface ImportRow {
  /** Where the row starts in the file (1-based). */
  lineNo: number;
  tsMs: number;
  record: Record<string, unknown>;
}

/**
 * `raw` as an import format (csv by default). `name` is how the caller's door names the value in the
 * 400: the query parameter, or the CLI's `--format`.
 */
export function importFormat(raw: string | undefined, name = "parameter 'format'"): ImportFormat {
  const value = (raw ?? 'csv').trim().toLowerCase();
  if (value === '' || value === 'csv') return 'csv';
  if (value === 'jsonl' || value === 'ndjson') return 'jsonl';
  throw new InvalidArgumentError(mustBe(name, 'csv or jsonl', raw));
}

/** `YYYY-MM-DDTHH:MM:SSZ` (exports), also with milliseconds, and `YYYY-MM-DD HH:MM:SS` (UTC). */
const STAMP = /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,3}))?Z?$/;

export function parseCreateAt(value: unknown, lineNo: number): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  const m = typeof value === 'string' ? STAMP.exec(value) : null;
  if (m) {
    const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
    const ms = Date.UTC(y, mo - 1, d, h, mi, s, m[7] === undefined ? 0 : Number(m[7].padEnd(3, '0')));
    const back = new Date(ms);
    if (back.getUTCMonth() === mo - 1 && back.getUTCDate() === d && h < 24 && mi < 60 && s < 60) return ms;
  }
  throw new InvalidArgumentError(`line ${lineNo}: create_at must be a UTC time YYYY-MM-DDTHH:MM:SSZ as exports write it, got ${describeValue(value)}`);
}

export async function* importRows(format: ImportFormat, model: DataModel, batches: AsyncIterable<LineBatch>): AsyncGenerator<ImportRow[], void, undefined> {
  const rows = format === 'csv' ? csvRows(model) : jsonRows(model);
  for await (const batch of batches) {
    const out: ImportRow[] = [];
    for (let i = 0; i < batch.lines.length; i++) {
      const row = rows(batch.lines[i], batch.first + i);
      if (row !== undefined) out.push(row);
    }
    yield out;
  }
  rows(undefined, 0);
}

type RowReader = (line: string | undefined, lineNo: number) => ImportRow | undefined;

function jsonRows(model: DataModel): RowReader {
  const byName = new Map(model.attributes.map((a) => [a.name, a]));
  return (line, lineNo) => {
    if (line === undefined || line.trim().length === 0) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      throw new InvalidArgumentError(`line ${lineNo}: not valid JSON (${(err as Error).message})`);
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new InvalidArgumentError(`line ${lineNo}: a row must be a JSON object, got ${describeValue(value)}`);
    }
    const input = value as Record<string, unknown>;
    const record: Record<string, unknown> = {};
    for (const key in input) {
      if (key === 'id' || key === 'create_at') continue;
      const attribute = byName.get(key);
      if (attribute === undefined) throw new InvalidArgumentError(`line ${lineNo}: unknown attribute '${key}' for model ${named(model.name, model.uuid)}`);
      record[key] = checked(attribute, input[key], lineNo);
    }
    if (input.create_at === undefined) throw new InvalidArgumentError(`line ${lineNo}: create_at is missing`);
    return { lineNo, tsMs: parseCreateAt(input.create_at, lineNo), record };
  };
}

function checked(attribute: Attribute, value: unknown, lineNo: number): unknown {
  if (value === null) return null;
  const result = checkValue(attribute, value);
  if (result instanceof RefusedValue) throw new InvalidArgumentError(`line ${lineNo}: ${result.error}`);
  return result;
}

/** RFC 4180 with a header row naming the columns; a quoted field may run over several lines. */
function csvRows(model: DataModel): RowReader {
  const byName = new Map(model.attributes.map((a) => [a.name, a]));
  let columns: Array<Attribute | 'id' | 'create_at'> | undefined;
  let createAtColumn = -1;
  // A header names each attribute, id and create_at at most once: a longer one is refused at its first field too many.
  const parser = new CsvRecordParser(model.attributes.length + 2, `model ${named(model.name, model.uuid)} has ${model.attributes.length} attributes besides id and create_at`);
  return (line, lineNo) => {
    if (line === undefined) {
      if (parser.open) throw new InvalidArgumentError(`line ${parser.startLine}: a quoted field is never closed`);
      return undefined;
    }
    const fields = parser.push(lineNo === 1 ? line.replace(/^\ufeff/, '') : line, lineNo);
    if (fields === undefined) return undefined;
    const startLine = parser.startLine;
    if (columns === undefined) {
      columns = fields.map((name, i) => {
        if (name === 'id' || name === 'create_at') return name;
        const attribute = byName.get(name);
        if (attribute === undefined) throw new InvalidArgumentError(`line ${startLine}: column ${i + 1} '${name}' is not an attribute of model ${named(model.name, model.uuid)}`);
        return attribute;
      });
      if (new Set(fields).size !== fields.length) throw new InvalidArgumentError(`line ${startLine}: a column is named twice`);
      createAtColumn = fields.indexOf('create_at');
      if (createAtColumn < 0) throw new InvalidArgumentError(`line ${startLine}: the header row has no create_at column`);
      parser.limitFields(columns.length, `the header names ${columns.length} columns`);
      return undefined;
    }
    if (fields.length === 1 && fields[0] === '') return undefined;
    if (fields.length !== columns.length) {
      throw new InvalidArgumentError(`line ${startLine}: ${fields.length} fields, but the header names ${columns.length} columns`);
    }
    const record: Record<string, unknown> = {};
    for (let i = 0; i < columns.length; i++) {
      const column = columns[i];
      if (typeof column === 'string') continue;
      record[column.name] = checked(column, cellValue(column, fields[i], startLine), startLine);
    }
    return { lineNo: startLine, tsMs: parseCreateAt(fields[createAtColumn], startLine), record };
  };
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** A CSV cell as the attribute's type; an empty cell of a non-STRING attribute is "never received". */
function cellValue(attribute: Attribute, cell: string, lineNo: number): unknown {
  if (attribute.type === 'STRING') return cell;
  if (cell === '') return null;
  switch (attribute.type) {
    case 'INTEGER':
    case 'FLOAT':
      if (!NUMBER.test(cell)) throw new InvalidArgumentError(`line ${lineNo}: attribute '${attribute.name}' expects ${attribute.type}, got ${describeValue(cell)}`);
      return Number(cell);
    case 'BOOL':
      if (cell !== 'true' && cell !== 'false') throw new InvalidArgumentError(`line ${lineNo}: attribute '${attribute.name}' expects true or false, got ${describeValue(cell)}`);
      return cell === 'true';
    default:
      return cell;
  }
}

/**
 * The most one CSV record may hold, all its lines together: as much as one line of the upload (backup.ts
 * LINE_BYTES_MAX), which already admits the largest record (1 MiB stored) with every quote doubled.
 */
const CSV_RECORD_BYTES_MAX = 8 * 1024 * 1024;

const QUOTE = 0x22;
const COMMA = 0x2c;

/**
 * Fields of one CSV record, fed line by line. Fields are slices of the lines, never built a character
 * at a time (a string grown by += holds ~40 bytes per character until it is read), and a record that
 * spans lines is measured, so an unclosed quote costs at most CSV_RECORD_BYTES_MAX.
 */
class CsvRecordParser {
  private fields: string[] = [];
  /** The open quoted field so far, in pieces: joined once, when its closing quote comes. */
  private pieces: string[] = [];
  /** The bytes of the record so far, counted only once it spans lines (the splitter bounds one line). */
  private spanBytes = 0;
  /** Inside a quoted field at the end of the last line. */
  open = false;
  startLine = 0;

  constructor(
    private fieldsMax: number,
    private fieldsRule: string,
  ) {}

  /** From now on a record of more than `max` fields is refused at the first one too many, saying `rule`. */
  limitFields(max: number, rule: string): void {
    this.fieldsMax = max;
    this.fieldsRule = rule;
  }

  /** The record's fields once it is complete, else undefined (a quoted field goes on). */
  push(line: string, lineNo: number): string[] | undefined {
    const continued = this.open;
    let at: number;
    if (continued) {
      this.pieces.push('\n');
      at = this.quoted(line, 0, lineNo);
    } else {
      this.startLine = lineNo;
      this.fields = [];
      this.spanBytes = 0;
      at = this.field(line, 0, lineNo);
    }
    while (at >= 0 && at < line.length) at = this.field(line, at + 1, lineNo);
    if (continued || this.open) this.measure(line);
    return this.open ? undefined : this.fields;
  }

  /** Reads the field at `from`: returns where it ends (a comma or the line's end), -1 when a quoted field goes on. */
  private field(line: string, from: number, lineNo: number): number {
    if (line.charCodeAt(from) === QUOTE) {
      this.open = true;
      this.pieces = [];
      return this.quoted(line, from + 1, lineNo);
    }
    const comma = line.indexOf(',', from);
    const end = comma < 0 ? line.length : comma;
    this.add(line.slice(from, end));
    return end;
  }

  /** Reads on inside a quoted field from `from`: as field(), once its closing quote comes. */
  private quoted(line: string, from: number, lineNo: number): number {
    let at = from;
    for (let q = line.indexOf('"', at); q >= 0; q = line.indexOf('"', at)) {
      if (line.charCodeAt(q + 1) === QUOTE) {
        // A doubled quote is one quote in the value.
        this.pieces.push(line.slice(at, q + 1));
        at = q + 2;
        continue;
      }
      this.pieces.push(line.slice(at, q));
      this.open = false;
      this.add(this.pieces.join(''));
      this.pieces = [];
      const after = q + 1;
      if (after < line.length && line.charCodeAt(after) !== COMMA) {
        throw new InvalidArgumentError(`line ${lineNo}: text after a closing quote in column ${this.fields.length}`);
      }
      return after;
    }
    this.pieces.push(line.slice(at));
    return -1;
  }

  private add(value: string): void {
    if (this.fields.length === this.fieldsMax) {
      throw new InvalidArgumentError(`line ${this.startLine}: more than ${this.fieldsMax} fields, but ${this.fieldsRule}`);
    }
    this.fields.push(value);
  }

  private measure(line: string): void {
    this.spanBytes += Buffer.byteLength(line) + 1;
    if (this.spanBytes > CSV_RECORD_BYTES_MAX) {
      throw new InvalidArgumentError(`line ${this.startLine}: a quoted field is not closed within ${CSV_RECORD_BYTES_MAX / 1024 / 1024} MiB, the most one CSV record may hold`);
    }
  }
}
