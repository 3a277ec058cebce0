/**
 * The models and pending drops as models.json holds them. Every change writes the file first; memory
 * changes only once the new state is on disk, so what is served never runs ahead of what a restart finds.
 * Models are deep-frozen and replaced, never mutated, so what list()/get() hand out stays consistent
 * and cannot be changed by callers.
 */
import { MetadataWriteError } from '../errors.js';
import { writeModelsFile, type ModelsState } from './models-file.js';
import type { DataModel } from './types.js';

export class SavedModels {
  private current: readonly DataModel[];
  private drops: readonly string[];
  private uuidIndex: { of: readonly DataModel[]; map: Map<string, DataModel> } | undefined;

  constructor(
    private readonly file: string,
    state: ModelsState,
  ) {
    this.current = state.models.map(deepFreeze);
    this.drops = state.pendingDrops;
  }

  get models(): readonly DataModel[] {
    return this.current;
  }

  /** Ids whose store data is still to be dropped (a delete or fix a crash interrupted). */
  get pendingDrops(): readonly string[] {
    return this.drops;
  }

  find(uuid: string): DataModel | undefined {
    return this.byUuid().get(uuid);
  }

  /** A model id in use, or still waiting for its data to be dropped: a new model cannot take it. */
  isTaken(uuid: string): boolean {
    return this.byUuid().has(uuid) || this.drops.includes(uuid);
  }

  /** Appends `model`; returns the frozen copy. */
  add(model: DataModel): Promise<DataModel> {
    return this.replace(model, [...this.current, model]);
  }

  /** Stores `model` in place of the model with its uuid (or the given list); returns the frozen copy. */
  async replace(model: DataModel, models: readonly DataModel[] = this.current): Promise<DataModel> {
    const frozen = frozenCopy(model);
    await this.commit(models.map((m) => (m.uuid === model.uuid ? frozen : m)), this.drops);
    return frozen;
  }

  /** In place of the model with its uuid, or appended; its id no longer waits for a drop. Returns the frozen copy. */
  async install(model: DataModel): Promise<DataModel> {
    const frozen = frozenCopy(model);
    const exists = this.current.some((m) => m.uuid === frozen.uuid);
    await this.commit(
      exists ? this.current.map((m) => (m.uuid === frozen.uuid ? frozen : m)) : [...this.current, frozen],
      this.drops.filter((id) => id !== frozen.uuid),
    );
    return frozen;
  }

  /** In one write, `model` leaves and its id enters pendingDrops: a crash before its data is dropped finishes the drop at the next open. */
  removeForDrop(model: DataModel): Promise<void> {
    return this.commit(this.current.filter((m) => m !== model), [...this.drops, model.uuid]);
  }

  /** As removeForDrop, but `model` stays as `draft` (fix); returns the frozen draft. */
  async replaceForDrop(model: DataModel, draft: DataModel): Promise<DataModel> {
    const frozen = frozenCopy(draft);
    await this.commit(this.current.map((m) => (m === model ? frozen : m)), [...this.drops, model.uuid]);
    return frozen;
  }

  /**
   * The store data of `modelId` is gone: its id leaves pendingDrops. The delete or fix this finishes is
   * already on disk and in memory, so a failed write must not fail it: the id then stays pending, in
   * memory and in the file, and the next open drops its (absent) data again.
   */
  async dropDone(modelId: string): Promise<void> {
    if (!this.drops.includes(modelId)) return;
    await this.commit(this.current, this.drops.filter((id) => id !== modelId)).catch((err: unknown) => {
      if (!(err instanceof MetadataWriteError)) throw err;
    });
  }

  /** The file first, memory after: a failed write leaves memory as it was (and the file, see writeModelsFile). */
  private async commit(models: readonly DataModel[], pendingDrops: readonly string[]): Promise<void> {
    const previous = { models: [...this.current], pendingDrops: [...this.drops] };
    await writeModelsFile(this.file, { models: [...models], pendingDrops: [...pendingDrops] }, previous);
    this.current = models;
    this.drops = pendingDrops;
  }

  /** `current` is replaced, never changed in place, so the index is rebuilt when it is another array (a batch read looks up 100). */
  private byUuid(): Map<string, DataModel> {
    if (this.uuidIndex?.of !== this.current) this.uuidIndex = { of: this.current, map: new Map(this.current.map((m) => [m.uuid, m])) };
    return this.uuidIndex.map;
  }
}

function frozenCopy(model: DataModel): DataModel {
  return deepFreeze(structuredClone(model));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
