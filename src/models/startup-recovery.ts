/**
 * What ModelRegistry.open settles in the store before it reads models.json: a restore or import that
 * committed before a crash is swapped in, and model data without a models.json stops the start.
 */
import { StateError } from '../errors.js';
import type { Store } from '../store/index.js';
import { parseRestoreMarker } from './backup-format.js';
import type { DataModel } from './types.js';

/**
 * A restore or import that committed before a crash: swap its ready directory in, and return the models
 * whose swapped-in directory still carries its definition (not yet in models.json).
 */
export async function finishSwaps(store: Store): Promise<Map<string, DataModel>> {
  for (const modelId of await store.readyModels()) await store.adoptReady(modelId);
  const restored = new Map<string, DataModel>();
  for (const { modelId, marker } of await store.restoreMarkers()) restored.set(modelId, parseRestoreMarker(marker, modelId));
  return restored;
}

/**
 * Without models.json the store's model directories cannot be read (the attribute names are in it):
 * starting empty would hide them, and the next model would write beside them. Stop and say how to recover.
 */
export async function refuseOrphanedData(file: string, store: Store, restored: ReadonlyMap<string, DataModel>): Promise<void> {
  const dirs = (await store.modelDirs()).filter((d) => !restored.has(d));
  if (dirs.length === 0) return;
  const shown = dirs.slice(0, 3).join(', ') + (dirs.length > 3 ? `, ... (${dirs.length} in all)` : '');
  throw new StateError(
    `${file} is missing but ${store.options.rootDir} holds model data (${shown}): restore models.json from a backup, or move those directories away to start without them`,
  );
}
