/**
 * CSV and JSONL writers (XLSX in xlsx-export.ts) for a model's records, shared by `GET /api/v1/datacenter/exportData` and the
 * `export` CLI command. Records come from `log.iterate()` in id order and leave as ~64 KiB text chunks,
 * so a model is never held in memory whole; the consumer applies backpressure between chunks.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { DataModel } from '../../models/types.js';
import type { ExportFormat, ExportOptions, ExportSource, FormulaMode } from './export-source.js';
import { compactStamp, isoSeconds } from '../core/format.js';
import { badParameter } from '../core/params.js';
import { xlsxChunks } from './xlsx-export.js';

export { EXPORT_FORMATS, FORMULA_MODES, type ExportFormat, type ExportOptions, type ExportSource, type FormulaMode } from './export-source.js';

const CHUNK_CHARS = 64 * 1024;

export function exportFormat(raw: string | undefined): ExportFormat {
  const value = (raw ?? 'csv').trim().toLowerCase();
  if (value === '' || value === 'csv') return 'csv';
  if (value === 'jsonl' || value === 'ndjson') return 'jsonl';
  if (value === 'xlsx') return 'xlsx';
  throw badParameter('format', 'csv, jsonl or xlsx', raw ?? '');
}

export function formulaMode(raw: string | undefined): FormulaMode {
  const value = (raw ?? '').trim().toLowerCase();
  if (value === '' || value === 'escape') return 'escape';
  if (value === 'raw') return 'raw';
  throw badParameter('formulas', 'escape (the default) or raw', raw ?? '');
}

const CONTENT_TYPES: Record<ExportFormat, string> = {
  csv: 'text/csv; charset=utf-8',
  jsonl: 'application/x-ndjson; charset=utf-8',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
};

export function exportContentType(format: ExportFormat): string {
  return CONTENT_TYPES[format];
}

/** `<name>-<YYYYMMDD-HHMMSS>.<ext>`: the name cut to safe ASCII, else the uuid. */
export function exportFileName(model: Pick<DataModel, 'uuid' | 'name'>, format: ExportFormat, nowMs: number): string {
  const safe = model.name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9._-]+/g, '_')
    .replace(/^[._]+|[._]+$/g, '')
    .slice(0, 64);
  const base = /[A-Za-z0-9]/.test(safe) ? safe : model.uuid;
  return `${base}-${compactStamp(nowMs)}.${format}`;
}

/** The header value, with an RFC 5987 `filename*` carrying the model's own (UTF-8) name too. */
export function contentDisposition(model: Pick<DataModel, 'uuid' | 'name'>, format: ExportFormat, nowMs: number): string {
  const ascii = exportFileName(model, format, nowMs);
  const name = model.name.replace(/[\u0000-\u001f\u007f/\\"]+/g, '_').trim().slice(0, 64);
  const plain = `attachment; filename="${ascii}"`;
  if (name.length === 0 || ascii.startsWith(`${name}-`)) return plain;
  const utf8 = encodeURIComponent(`${name}-${compactStamp(nowMs)}.${format}`).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${plain}; filename*=UTF-8''${utf8}`;
}

/** RFC 4180: quote a field holding a comma, quote, CR or LF (or edge spaces); double the quotes. */
export function csvField(value: unknown): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (/[",\r\n]/.test(text) || /^\s|\s$/.test(text)) return `"${text.replace(/"/g, '""')}"`;
  return text;
}

/**
 * Spreadsheets read a cell starting with one of these as a formula (OWASP "CSV injection"): `=`, `+`,
 * `-`, `@`, TAB, CR. A device with a push token could otherwise plant `=HYPERLINK(...)` or a DDE call
 * that runs when the administrator opens the export.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
/** A plain signed number ("-12.5", "+3", "-1e5") is read as that number, never as a formula. */
const SIGNED_NUMBER = /^[+-](?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Prefixes `'` to a formula-looking string, so a spreadsheet shows it as text. The apostrophe stays
 * visible in the cell; `formulas=raw` gives the stored value to programs.
 */
export function neutraliseFormula(text: string): string {
  return FORMULA_START.test(text) && !SIGNED_NUMBER.test(text) ? `'${text}` : text;
}



/**
 * The export as chunks: text for CSV and JSONL, binary for XLSX (see xlsx-export.ts).
 * CSV: UTF-8 BOM, header `id,create_at,<attributes>`, CRLF line ends, formula-looking STRING cells
 * neutralised unless `formulas` is `raw`. JSONL: one JSON object per line, values exact.
 * `create_at` is `YYYY-MM-DDTHH:MM:SSZ` (UTC) in both.
 */
export async function* exportChunks(source: ExportSource, options: ExportOptions): AsyncGenerator<string | Buffer, void, undefined> {
  if (options.format === 'xlsx') return yield* xlsxChunks(source, options);
  yield* textChunks(source, options);
}

async function* textChunks(source: ExportSource, options: ExportOptions): AsyncGenerator<string, void, undefined> {
  const { format, onRecords } = options;
  const fields = ['id', 'create_at', ...source.model.attributes.map((a) => a.name)];
  // Only STRING attributes can hold free text; GEO is validated to two numbers on write.
  const escapeAt = fields.map((_, i) => options.formulas !== 'raw' && source.model.attributes[i - 2]?.type === 'STRING');
  let chunk = format === 'csv' ? `\ufeff${fields.map(csvField).join(',')}\r\n` : '';
  let pending = 0;
  const iterator = source.log.iterate({ fromId: source.fromId, toId: source.toId });
  try {
    for await (const record of iterator) {
      if (format === 'csv') {
        let line = '';
        for (let i = 0; i < fields.length; i++) {
          const key = fields[i];
          const value = record[key];
          if (i > 0) line += ',';
          if (key === 'create_at' && typeof value === 'number') line += isoSeconds(value);
          else line += csvField(escapeAt[i] && typeof value === 'string' ? neutraliseFormula(value) : value);
        }
        chunk += `${line}\r\n`;
      } else {
        const out: Record<string, unknown> = {};
        for (const key of fields) {
          const value = record[key];
          out[key] = key === 'create_at' && typeof value === 'number' ? isoSeconds(value) : value;
        }
        chunk += `${JSON.stringify(out)}\n`;
      }
      pending++;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        onRecords?.(pending);
        chunk = '';
        pending = 0;
      }
    }
  } finally {
    // Stops the store's reader when the consumer gives up early (client gone).
    await iterator.return?.();
  }
  if (chunk.length > 0) yield chunk;
  if (pending > 0) onRecords?.(pending);
}

/** Writes chunks to a stream sink, waiting for drain whenever the socket is full. */
export async function pumpToSink(
  chunks: AsyncGenerator<string | Buffer, void, undefined>,
  sink: { write(chunk: string | Uint8Array): boolean; drain(): Promise<void>; readonly aborted: boolean },
): Promise<void> {
  try {
    for await (const chunk of chunks) {
      if (sink.aborted) return;
      if (!sink.write(chunk)) await sink.drain();
      if (sink.aborted) return;
    }
  } finally {
    await chunks.return(undefined);
  }
}
