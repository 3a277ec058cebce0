/**
 * `<data_dir>/models.json`: every model with its attributes, plus the ids whose store data still has
 * to be dropped (a delete or fix that a crash interrupted). Replaced atomically on every change.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomicOrRestore } from '../util/atomic-file.js';
import { StateError } from '../errors.js';
import type { DataModel } from './types.js';

export const MODELS_FILE = 'models.json';
const FORMAT = 1;

export interface ModelsState {
  models: DataModel[];
  /** Model ids whose store data is being dropped; finished at the next open. */
  pendingDrops: string[];
}

export function modelsFilePath(dataDir: string): string {
  return join(dataDir, MODELS_FILE);
}

export async function readModelsFile(path: string): Promise<ModelsState> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { models: [], pendingDrops: [] };
    throw error;
  }
  let content: unknown;
  try {
    content = JSON.parse(text);
  } catch (error) {
    // The file is only ever replaced whole, so this is damage or an edit from outside: stop, never start empty.
    throw new StateError(`${path} is not valid JSON (${(error as Error).message}): restore it from a backup`);
  }
  const { format, models, pendingDrops } = (content ?? {}) as Record<string, unknown>;
  if (format !== FORMAT || !Array.isArray(models) || !Array.isArray(pendingDrops)) {
    throw new StateError(
      `${path} is not a format ${FORMAT} models file (expected {"format":${FORMAT},"models":[...],"pendingDrops":[...]})`,
    );
  }
  return { models: models as DataModel[], pendingDrops: pendingDrops as string[] };
}

/** Writes `state`; on failure puts `previous` (what memory keeps) back, see writeFileAtomicOrRestore. */
export async function writeModelsFile(path: string, state: ModelsState, previous: ModelsState): Promise<void> {
  await writeFileAtomicOrRestore(path, modelsText(state), modelsText(previous));
}

function modelsText(state: ModelsState): string {
  const content = { format: FORMAT, models: state.models, pendingDrops: state.pendingDrops };
  return `${JSON.stringify(content, null, 2)}\n`;
}
