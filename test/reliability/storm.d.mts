// Types of storm.mjs (plain JS so the storm runs under node without a compile step).
export declare const RETENTION_RECORDS: number;
export interface StormCounts {
  pushes: number;
  records: number;
  pages: number;
  lastReads: number;
  aggregates: number;
  exports: number;
  exportedRecords: number;
  clears: number;
  status5xx: number;
  refused: number;
}
export declare function runStorm(o?: { seconds?: number; models?: number; sealedFdsMax?: number; progress?: (line: string) => void }): Promise<{ problems: string[]; counts: StormCounts }>;
export declare function stormMinimums(models: number, seconds: number): { pushes: number; clears: number; reads: number; aggregates: number };
