/**
 * `GENERATION` in a model directory: 64 random bits (16 hex digits) naming this incarnation of the log.
 * Ids restart at 1 when a model is cleared, so (generation, id) is what identifies a record outside the
 * gateway (the fleet uplink, docs/uplink.md). The file is written when the directory is created, so a
 * clear (which renames the old directory away and creates a new one) changes it in the same atomic step
 * as the data; a directory from before this file gets one the first time it opens.
 */
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { writeFileAtomicSync } from '../base/file-io.js';

export const GENERATION_FILE = 'GENERATION';
const GENERATION = /^[0-9a-f]{16}$/;

export function newGeneration(): string {
  return randomBytes(8).toString('hex');
}

export function writeGenerationSync(dir: string, generation: string): void {
  writeFileAtomicSync(dir, GENERATION_FILE, Buffer.from(`${generation}\n`));
}

/** The directory's generation; a missing or unreadable file gets a new one (never shipped under the old name). */
export function loadGenerationSync(dir: string): string {
  let text: string | undefined;
  try {
    text = fs.readFileSync(`${dir}/${GENERATION_FILE}`, 'utf8').trim();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  if (text !== undefined && GENERATION.test(text)) return text;
  const generation = newGeneration();
  writeGenerationSync(dir, generation);
  return generation;
}
