/**
 * XLSX (RHILEX's export format) for `exportData?format=xlsx` and the `export` CLI command, written with
 * exceljs's streaming WorkbookWriter: each row is committed as it is read, strings are inline strings
 * (no shared-string table, so memory stays constant however many distinct values there are) and never
 * formulas, whatever they start with. exceljs is loaded on first use: most gateways never export XLSX.
 */
import { PassThrough } from 'node:stream';
import { once } from 'node:events';
import type { ExportOptions, ExportSource } from './export-source.js';
import { isCreateAtInDomain } from '../../store/index.js';

/** Rows written before the producer checks for backpressure from the consumer. */
const ROWS_PER_CHECK = 256;

type Cell = string | number | boolean | Date | null | { richText: Array<{ text: string }> };

/** A cell as the sheet should hold it: text as an inline string, create_at as a date (UTC), the rest as typed. */
function cellOf(key: string, value: unknown): Cell {
  if (value === undefined || value === null) return null;
  if (key === 'create_at' && typeof value === 'number') return isCreateAtInDomain(value) ? new Date(value) : value;
  if (typeof value === 'number' || typeof value === 'boolean') return value;
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return { richText: [{ text }] };
}

/** The workbook as binary chunks, one sheet named after the model, a header row, then one row per record. */
export async function* xlsxChunks(source: ExportSource, options: Pick<ExportOptions, 'onRecords'>): AsyncGenerator<Buffer, void, undefined> {
  const { default: ExcelJS } = await import('exceljs');
  const out = new PassThrough({ highWaterMark: 256 * 1024 });
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true, useSharedStrings: false });
  const sheet = workbook.addWorksheet(sheetName(source.model.name));
  const fields = ['id', 'create_at', ...source.model.attributes.map((a) => a.name)];
  sheet.columns = fields.map((key) => ({ key, width: key === 'create_at' ? 20 : 14, ...(key === 'create_at' ? { style: { numFmt: 'yyyy-mm-dd hh:mm:ss' } } : {}) }));
  sheet.addRow(fields.map((f) => cellOf('', f))).commit();
  let stopped = false;
  const producer = (async () => {
    const iterator = source.log.iterate({ fromId: source.fromId, toId: source.toId });
    let pending = 0;
    try {
      for await (const record of iterator) {
        if (stopped) break;
        sheet.addRow(fields.map((key) => cellOf(key, record[key]))).commit();
        if (++pending === ROWS_PER_CHECK) {
          options.onRecords?.(pending);
          pending = 0;
          await roomFor(sheet, out);
        }
      }
    } finally {
      await iterator.return?.();
    }
    if (pending > 0) options.onRecords?.(pending);
    sheet.commit();
    await workbook.commit();
  })();
  producer.catch((err: unknown) => out.destroy(err as Error));
  try {
    for await (const chunk of out) yield chunk as Buffer;
    await producer;
  } finally {
    stopped = true;
    out.resume();
    await producer.catch(() => {});
  }
}

/**
 * Waits while the compressor or the consumer is behind. exceljs writes a sheet's XML into the zip's
 * entry stream without looking at write()'s answer, so rows would pile up uncompressed in memory (91 MB
 * for 400k rows); the entry stream (readable-stream, hence `_writableState`) still records that it
 * wants a drain, and waiting for it keeps memory flat (5 MB of buffers for the same export).
 */
async function roomFor(sheet: object, out: PassThrough): Promise<void> {
  type Entry = NodeJS.EventEmitter & { _writableState?: { needDrain?: boolean } };
  const entry = (sheet as { stream?: { pipes?: Entry[] } }).stream?.pipes?.[0];
  if (entry?._writableState?.needDrain === true) await once(entry, 'drain');
  if (out.writableNeedDrain) await once(out, 'drain');
}

/** Excel's sheet-name rules: at most 31 characters, none of []:*?/\ . */
function sheetName(name: string): string {
  const cleaned = name.replace(/[[\]:*?/\\]/g, '_').slice(0, 31).trim();
  return cleaned.length > 0 ? cleaned : 'data';
}
