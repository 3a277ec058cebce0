/**
 * `FINDINGS` in a model directory: what recovery or a read found lost and nobody has acknowledged yet
 * (truncated unsynced tails, id ranges lost to corruption). Kept on disk so a restart does not forget
 * them: the next open is usually clean and would report nothing. Acknowledging removes the file.
 */
import fs from 'node:fs';
import { type FileIo, writeFileAtomicSync } from './file-io.js';
import { SerialQueue } from '../util/atomic-file.js';
import type { RecoveryFindings, RecoveryReport } from './types.js';

const FINDINGS_FILE = 'FINDINGS';

function readFindingsSync(dir: string): RecoveryFindings | undefined {
  try {
    const f = JSON.parse(fs.readFileSync(`${dir}/${FINDINGS_FILE}`, 'utf8')) as RecoveryFindings;
    return Number.isSafeInteger(f.truncatedBytes) && Array.isArray(f.lostRanges) ? f : undefined;
  } catch {
    return undefined;
  }
}

/** `prev` plus what `found` adds; undefined when there is nothing to report. */
function mergeFindings(
  prev: RecoveryFindings | undefined,
  found: Pick<RecoveryReport, 'truncatedBytes' | 'lostRanges'>,
  nowMs: number,
): RecoveryFindings | undefined {
  const ranges = [...(prev?.lostRanges ?? [])];
  for (const r of found.lostRanges) {
    if (!ranges.some((k) => k.fromId <= r.fromId && k.toId >= r.toId)) ranges.push({ fromId: r.fromId, toId: r.toId });
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

function encodeFindings(f: RecoveryFindings): Buffer {
  return Buffer.from(`${JSON.stringify(f)}\n`);
}

/** One model's findings: loaded and extended at open, grown by reads, written one change at a time. */
export class FindingsBook {
  private found: RecoveryFindings | undefined;
  private readonly writes = new SerialQueue();

  constructor(
    private readonly io: FileIo,
    private readonly dir: string,
    report: RecoveryReport,
  ) {
    this.found = mergeFindings(readFindingsSync(dir), report, Date.now());
    if (report.truncatedBytes > 0 || report.lostRanges.length > 0) {
      writeFileAtomicSync(dir, FINDINGS_FILE, encodeFindings(this.found as RecoveryFindings));
    }
  }

  get(): RecoveryFindings | undefined {
    return this.found;
  }

  /** A read found ids [fromId, toId] lost; written only when it is news. */
  lost(fromId: number, toId: number): void {
    const next = mergeFindings(this.found, { truncatedBytes: 0, lostRanges: [{ fromId, toId }] }, Date.now());
    if (next?.lostIds === this.found?.lostIds) return;
    this.found = next;
    void this.write().catch(() => {});
  }

  acknowledge(): Promise<void> {
    this.found = undefined;
    return this.write();
  }

  /** clear(): the data the findings were about is gone with the old directory (the file went with it). */
  forget(): void {
    this.found = undefined;
  }

  private write(): Promise<void> {
    return this.writes.run(async () => {
      const file = `${this.dir}/${FINDINGS_FILE}`;
      if (this.found === undefined) await this.io.remove(file);
      else await this.io.replaceFile(file, encodeFindings(this.found));
    });
  }
}
