/** What an export reads and how it is written: shared by the text writers (export.ts) and XLSX (xlsx-export.ts). */
import type { DataModel } from '../../models/types.js';
import type { ExportRange, RecordView } from '../../store/base/types.js';

export const EXPORT_FORMATS = ['csv', 'jsonl', 'xlsx'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** `escape` neutralises formula-looking STRING cells in CSV (the default); `raw` writes them as stored. */
export const FORMULA_MODES = ['escape', 'raw'] as const;
export type FormulaMode = (typeof FORMULA_MODES)[number];

export interface ExportOptions {
  format: ExportFormat;
  /** CSV only; JSON Lines and XLSX are always exact. Default `escape`. */
  formulas?: FormulaMode;
  /** Progress: records written, reported after each chunk. */
  onRecords?: (count: number) => void;
}

export interface ExportSource {
  model: DataModel;
  log: { iterate(range?: ExportRange): AsyncIterableIterator<RecordView> };
  fromId?: number;
  toId?: number;
}
