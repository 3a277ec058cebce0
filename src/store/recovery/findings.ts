/**
 * `FINDINGS` in a model directory: what recovery or a read found lost and nobody has acknowledged yet
 * (truncated unsynced tails, id ranges lost to corruption). Kept on disk so a restart does not forget
 * them: the next open is usually clean and would report nothing. Acknowledging removes the file.
 */
import fs from 'node:fs';
import { type FileIo, writeFileAtomicSync } from '../base/file-io.js';
import { SerialQueue } from '../../util/atomic-file.js';
import type { RecoveryFindings, RecoveryReport } from '../base/types.js';

const FINDINGS_FILE = 'FINDINGS';
/** Acknowledged ranges remembered so a gap that every open sees again is not news again (bounded). */
const ACKNOWLEDGED_RANGES_MAX = 1024;

type IdRange = { fromId: number; toId: number };

interface FindingsFile {
  found?: RecoveryFindings;
  acknowledged: IdRange[];
}

function isFindings(f: RecoveryFindings | undefined): f is RecoveryFindings {
  return f !== undefined && f !== null && Number.isSafeInteger(f.truncatedBytes) && Array.isArray(f.lostRanges);
}

/** Also reads the first format, which held the findings alone. */
function readFindingsSync(dir: string): FindingsFile {
  try {
    const f = JSON.parse(fs.readFileSync(`${dir}/${FINDINGS_FILE}`, 'utf8')) as Partial<FindingsFile> & Partial<RecoveryFindings>;
    if (isFindings(f as RecoveryFindings)) return { found: f as RecoveryFindings, acknowledged: [] };
    return { ...(isFindings(f.found) ? { found: f.found } : {}), acknowledged: Array.isArray(f.acknowledged) ? f.acknowledged : [] };
  } catch {
    return { acknowledged: [] };
  }
}

function covered(ranges: readonly IdRange[], r: IdRange): boolean {
  return ranges.some((k) => k.fromId <= r.fromId && k.toId >= r.toId);
}

/** `prev` plus what `found` adds; undefined when there is nothing to report. */
function mergeFindings(
  prev: RecoveryFindings | undefined,
  found: Pick<RecoveryReport, 'truncatedBytes' | 'lostRanges'>,
  nowMs: number,
): RecoveryFindings | undefined {
  const ranges = [...(prev?.lostRanges ?? [])];
  for (const r of found.lostRanges) {
    if (!covered(ranges, r)) ranges.push({ fromId: r.fromId, toId: r.toId });
  }
  const truncatedBytes = (prev?.truncatedBytes ?? 0) + found.truncatedBytes;
  if (truncatedBytes === 0 && ranges.length === 0) return undefined;
  return {
    truncatedBytes,
    lostRanges: ranges,
    lostIds: ranges.reduce((n, r) => n + r.toId - r.fromId + 1, 0),
    sinceMs: prev?.sinceMs ?? nowMs,
  };
}

function encodeFindings(f: FindingsFile): Buffer {
  return Buffer.from(`${JSON.stringify(f)}\n`);
}

/**
 * One model's findings: loaded and extended at open, grown by reads, written one change at a time. A
 * lost range that is already reported or was acknowledged is not news: a gap between segments is seen by
 * every open that scans, and must not come back after the operator acknowledged it.
 */
export class FindingsBook {
  private found: RecoveryFindings | undefined;
  private acknowledged: IdRange[];
  private readonly writes = new SerialQueue();
  /** What this open found that was not known before: the operator's log says it once. */
  readonly newAtOpen: Pick<RecoveryReport, 'truncatedBytes' | 'lostRanges'>;

  constructor(
    private readonly io: FileIo,
    private readonly dir: string,
    report: RecoveryReport,
    /** Where a failed write of FINDINGS goes (the findings stay in memory, and the next change tries again). */
    private readonly warn: (message: string) => void,
  ) {
    const prev = readFindingsSync(dir);
    this.acknowledged = prev.acknowledged;
    const known = [...(prev.found?.lostRanges ?? []), ...prev.acknowledged];
    this.newAtOpen = { truncatedBytes: report.truncatedBytes, lostRanges: report.lostRanges.filter((r) => !covered(known, r)) };
    this.found = mergeFindings(prev.found, this.newAtOpen, Date.now());
    if (this.newAtOpen.truncatedBytes > 0 || this.newAtOpen.lostRanges.length > 0) {
      writeFileAtomicSync(dir, FINDINGS_FILE, encodeFindings(this.file()));
    }
  }

  get(): RecoveryFindings | undefined {
    return this.found;
  }

  /** A read found ids [fromId, toId] lost; written only when it is news. */
  lost(fromId: number, toId: number): void {
    if (covered(this.acknowledged, { fromId, toId })) return;
    const next = mergeFindings(this.found, { truncatedBytes: 0, lostRanges: [{ fromId, toId }] }, Date.now());
    if (next?.lostIds === this.found?.lostIds) return;
    this.found = next;
    const what = fromId === toId ? `record ${fromId} is lost: a read found its stored frame` : `records ${fromId}..${toId} are lost: a read found their stored frames`;
    this.warn(`${what} damaged (see schema/detail)`);
    this.write().catch((e: unknown) => this.warn(`FINDINGS could not be written: ${e instanceof Error ? e.message : String(e)}`));
  }

  acknowledge(): Promise<void> {
    const ranges = [...this.acknowledged, ...(this.found?.lostRanges ?? [])];
    this.acknowledged = ranges.slice(Math.max(0, ranges.length - ACKNOWLEDGED_RANGES_MAX));
    this.found = undefined;
    return this.write();
  }

  /** clear(): the data the findings were about is gone with the old directory (the file went with it). */
  forget(): void {
    this.found = undefined;
    this.acknowledged = [];
  }

  private file(): FindingsFile {
    return { ...(this.found ? { found: this.found } : {}), acknowledged: this.acknowledged };
  }

  private write(): Promise<void> {
    return this.writes.run(async () => {
      const file = `${this.dir}/${FINDINGS_FILE}`;
      if (this.found === undefined && this.acknowledged.length === 0) await this.io.remove(file);
      else await this.io.replaceFile(file, encodeFindings(this.file()));
    });
  }
}
