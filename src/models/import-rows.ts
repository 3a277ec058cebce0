/**
 * The rows of an export file (contract section 6: CSV with a header row, or JSON Lines) as records to
 * import: `create_at` parsed, `id` ignored (imported rows get new ids), every attribute checked as a
 * script's write is (type, bounds, rounding). Errors name the line and the column.
 */
import { InvalidArgumentError } from '../errors.js';
import type { LineBatch } from '../util/lines.js';
import { describeValue, named } from '../util/messages.js';
import { checkValue } from './record-check.js';
import type { Attribute, DataModel } from './types.js';

export const IMPORT_FORMATS = ['csv', 'jsonl'] as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[number];

export interface ImportRow {
  /** Where the row starts in the file (1-based). */
  lineNo: number;
  tsMs: number;
  record: Record<string, unknown>;
}

export function importFormat(raw: string | undefined): ImportFormat {
  const value = (raw ?? 'csv').trim().toLowerCase();
  if (value === '' || value === 'csv') return 'csv';
  if (value === 'jsonl' || value === 'ndjson') return 'jsonl';
  throw new InvalidArgumentError(`format must be csv or jsonl, got ${describeValue(raw)}`);
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
  if ('error' in result) throw new InvalidArgumentError(`line ${lineNo}: ${result.error}`);
  return result.value;
}

/** RFC 4180 with a header row naming the columns; a quoted field may run over several lines. */
function csvRows(model: DataModel): RowReader {
  const byName = new Map(model.attributes.map((a) => [a.name, a]));
  let columns: Array<Attribute | 'id' | 'create_at'> | undefined;
  let createAtColumn = -1;
  const parser = new CsvRecordParser();
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

/** Fields of one CSV record, fed line by line. */
class CsvRecordParser {
  private fields: string[] = [];
  private field = '';
  private quoted = false;
  /** Inside a quoted field at the end of the last line. */
  open = false;
  startLine = 0;

  /** The record's fields once it is complete, else undefined (a quoted field goes on). */
  push(line: string, lineNo: number): string[] | undefined {
    if (this.open) this.field += '\n';
    else {
      this.startLine = lineNo;
      this.fields = [];
      this.field = '';
      this.quoted = false;
    }
    let i = 0;
    while (i < line.length) {
      const c = line[i];
      if (this.open) {
        if (c === '"') {
          if (line[i + 1] === '"') {
            this.field += '"';
            i += 2;
            continue;
          }
          this.open = false;
        } else this.field += c;
        i++;
        continue;
      }
      if (c === ',') {
        this.fields.push(this.field);
        this.field = '';
        this.quoted = false;
      } else if (c === '"' && this.field === '' && !this.quoted) {
        this.open = true;
        this.quoted = true;
      } else if (this.quoted) {
        throw new InvalidArgumentError(`line ${lineNo}: text after a closing quote in column ${this.fields.length + 1}`);
      } else this.field += c;
      i++;
    }
    if (this.open) return undefined;
    this.fields.push(this.field);
    return this.fields;
  }
}
