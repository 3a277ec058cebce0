/**
 * `FINDINGS` in a model directory: what recovery or a read found lost and nobody has acknowledged yet
 * (truncated unsynced tails, id ranges lost to corruption). Kept on disk so a restart does not forget
 * them: the next open is usually clean and would report nothing. Acknowledging removes the file.
 */
import fs from 'node:fs';
import type { RecoveryFindings, RecoveryReport } from './types.js';

export const FINDINGS_FILE = 'FINDINGS';

export function readFindingsSync(dir: string): RecoveryFindings | undefined {
  try {
    const f = JSON.parse(fs.readFileSync(`${dir}/${FINDINGS_FILE}`, 'utf8')) as RecoveryFindings;
    return Number.isSafeInteger(f.truncatedBytes) && Array.isArray(f.lostRanges) ? f : undefined;
  } catch {
    return undefined;
  }
}

/** `prev` plus what `found` adds; undefined when there is nothing to report. */
export function mergeFindings(
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

export function encodeFindings(f: RecoveryFindings): Buffer {
  return Buffer.from(`${JSON.stringify(f)}\n`);
}
