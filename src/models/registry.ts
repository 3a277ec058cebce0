/**
 * The models and their attributes: validation, lifecycle (draft -> published -> fix/delete), the
 * metadata file, and the store log of every published model.
 *
 * Every change runs alone on one promise chain, so a state check and the write it allows can never
 * interleave with another call. Models are deep-frozen and replaced, never mutated, so what
 * list()/get() hand out stays consistent and cannot be changed by callers.
 */
import { InvalidArgumentError, NotFoundError, StateError, UnavailableError } from '../errors.js';
import type { ModelLog, ModelSpec, RetentionLimits, Store } from '../store/index.js';
import { effectiveRetention, parseRetention } from './retention-input.js';
import { existsSync } from 'node:fs';
import { SerialQueue, mkdirDurable } from '../util/atomic-file.js';
import { describeValue, mustBe, oneOf, named } from '../util/messages.js';
import {
  parseAttributeFields,
  parseModelDescription,
  parseModelName,
  requireObject,
  requireString,
  type AttributeFields,
} from './attribute-input.js';
import { newUniqueId } from './ids.js';
import { modelsFilePath, readModelsFile, writeModelsFile, type ModelsState } from './models-file.js';
import { checkRecord } from './record-check.js';
import { parseRestoreMarker } from './backup-format.js';
import { TEMPLATE_IDS, templateFieldsOf, templateList } from './templates.js';
import { ATTRIBUTES_MAX, type Attribute, type DataModel, type RecordCheck } from './types.js';


export class ModelRegistry {
  private models: readonly DataModel[];
  private uuidIndex: { of: readonly DataModel[]; map: Map<string, DataModel> } | undefined;
  private pendingDrops: readonly string[];
  private readonly logs = new Map<string, ModelLog>();
  /** Published models whose store log refused to open (see FIELDS): the others serve. */
  private readonly closedModels = new Map<string, string>();
  private readonly listeners = new Set<() => void>();
  private readonly queue = new SerialQueue();

  private constructor(
    private readonly file: string,
    private readonly store: Store,
    state: ModelsState,
  ) {
    this.models = state.models.map(deepFreeze);
    this.pendingDrops = state.pendingDrops;
  }

  /** Loads models.json, finishes interrupted deletes and fixes, opens the log of every published model. */
  static async open(opts: { dataDir: string; store: Store }): Promise<ModelRegistry> {
    await mkdirDurable(opts.dataDir);
    const file = modelsFilePath(opts.dataDir);
    const restored = await finishSwaps(opts.store);
    if (!existsSync(file)) await refuseOrphanedData(file, opts.store, restored);
    const registry = new ModelRegistry(file, opts.store, await readModelsFile(file));
    for (const model of restored.values()) await registry.record(model);
    await registry.finishPendingDrops();
    const dirs = new Set(await opts.store.modelDirs());
    for (const model of registry.models) {
      if (!model.published) continue;
      if (!dirs.has(model.uuid)) {
        // Opening would create it empty: the records would be gone without a word, and ids start over.
        const dir = `${opts.store.options.rootDir}/${model.uuid}`;
        registry.closedModels.set(
          model.uuid,
          `model ${model.name} (${model.uuid}) cannot be opened: its data directory ${dir} is missing; restore it, or fix the model (schema/fix) to start it empty`,
        );
        continue;
      }
      try {
        registry.logs.set(model.uuid, await opts.store.openModel(model.uuid, specOf(model, opts.store.options.retention)));
      } catch (err) {
        if (!(err instanceof StateError)) throw err;
        registry.closedModels.set(model.uuid, `model ${model.name} (${model.uuid}) cannot be opened: ${err.message}`);
      }
    }
    return registry;
  }

  list(): DataModel[] {
    return [...this.models];
  }

  get(uuid: string): DataModel {
    const model = this.byUuid().get(uuid);
    if (!model) throw new NotFoundError(`model ${uuidText(uuid)} not found`);
    return model;
  }

  /** `models` is replaced, never changed in place, so the index is rebuilt when it is another array (a batch read looks up 100). */
  private byUuid(): Map<string, DataModel> {
    if (this.uuidIndex?.of !== this.models) this.uuidIndex = { of: this.models, map: new Map(this.models.map((m) => [m.uuid, m])) };
    return this.uuidIndex.map;
  }

  create(input: { name: unknown; description?: unknown }): Promise<DataModel> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const model: DataModel = {
        uuid: newUniqueId('SCHEMA', (id) => this.models.some((m) => m.uuid === id) || this.pendingDrops.includes(id)),
        name: parseModelName(body.name),
        description: parseModelDescription(body.description, ''),
        published: false,
        createdAtMs: Date.now(),
        attributes: [],
      };
      return this.replaceModel(model, [...this.models, model]);
    });
  }

  /** Name and description only; allowed in both states. An absent field keeps its value. */
  update(input: { uuid: unknown; name?: unknown; description?: unknown }): Promise<DataModel> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const current = this.get(requireString(body, 'uuid'));
      return this.replaceModel({
        ...current,
        name: body.name === undefined ? current.name : parseModelName(body.name),
        description: parseModelDescription(body.description, current.description),
      });
    });
  }

  /**
   * Removes the model and its data. The model leaves models.json and its id enters pendingDrops in
   * one atomic write before the data is dropped, so a crash at any point ends with both gone after
   * the next open.
   */
  delete(uuid: string): Promise<void> {
    return this.change(async () => {
      const model = this.get(uuid);
      await this.commit({
        models: this.models.filter((m) => m !== model),
        pendingDrops: [...this.pendingDrops, model.uuid],
      });
      await this.dropData(model.uuid);
    });
  }

  /** Opens an empty store log with the attributes as fields. */
  publish(uuid: string): Promise<DataModel> {
    return this.change(async () => {
      const model = this.get(uuid);
      if (model.published) throw new StateError(`model ${named(model.name, model.uuid)} is already published`);
      if (model.attributes.length === 0) {
        throw new InvalidArgumentError(`model ${named(model.name, model.uuid)} needs at least one attribute to be published`);
      }
      // A draft holds no data; dropping first clears whatever an interrupted fix or publish left.
      await this.dropData(model.uuid);
      const log = await this.store.openModel(model.uuid, specOf(model, this.store.options.retention));
      this.logs.set(model.uuid, log);
      return this.replaceModel({ ...model, published: true });
    });
  }

  /** RHILEX's way back to draft: destroys every record, keeps the attributes. Needs `confirm === true`. */
  fix(uuid: string, confirm: unknown): Promise<DataModel> {
    return this.change(async () => {
      const model = this.get(uuid);
      if (confirm !== true) {
        throw new InvalidArgumentError(
          `${mustBe('confirm', 'true', confirm)}: fix deletes every record of model ${named(model.name, model.uuid)}`,
        );
      }
      const draft = deepFreeze({ ...model, published: false });
      await this.commit({
        models: this.models.map((m) => (m === model ? draft : m)),
        pendingDrops: [...this.pendingDrops, model.uuid],
      });
      await this.dropData(model.uuid);
      return draft;
    });
  }

  createAttribute(input: Record<string, unknown>): Promise<Attribute> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const model = this.get(requireString(body, 'schemaId'));
      const fields = parseAttributeFields(body);
      assertRoom(model, 1);
      assertNamesFree(model, [fields.name]);
      const attribute: Attribute = { uuid: this.newAttributeId(), schemaId: model.uuid, ...fields };
      const changed = { ...model, attributes: [...model.attributes, attribute] };
      // Published (contract 13): the store records the new column before models.json names it.
      this.logs.get(model.uuid)?.setFields(visibleFieldsOf(changed));
      await this.replaceModel(changed);
      return this.getAttribute(attribute.uuid);
    });
  }

  /** Same rules as create; absent fields keep their value; the attribute keeps its position. */
  updateAttribute(input: Record<string, unknown>): Promise<Attribute> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const current = this.getAttribute(requireString(body, 'uuid'));
      if (body.schemaId !== undefined && body.schemaId !== current.schemaId) {
        throw new InvalidArgumentError(
          `schemaId cannot change: attribute ${current.uuid} belongs to model ${current.schemaId}, got ${describeValue(body.schemaId)}`,
        );
      }
      const model = this.get(current.schemaId);
      const fields = parseAttributeFields(body, current);
      if (model.published && (fields.name !== current.name || fields.type !== current.type)) {
        throw new StateError(
          `attribute ${named(current.name, current.uuid)} of published model ${named(model.name, model.uuid)}: its name and type cannot change (stored values are kept by ` +
            'name and type); add a new attribute instead, or fix the model back to draft',
        );
      }
      assertNamesFree(model, [fields.name], current.uuid);
      const updated: Attribute = { uuid: current.uuid, schemaId: current.schemaId, ...fields };
      const changed = { ...model, attributes: model.attributes.map((a) => (a.uuid === current.uuid ? updated : a)) };
      await this.replaceModel(changed);
      this.logs.get(model.uuid)?.setFields(visibleFieldsOf(changed));
      return this.getAttribute(current.uuid);
    });
  }

  deleteAttribute(uuid: string): Promise<void> {
    return this.change(async () => {
      const attribute = this.getAttribute(uuid);
      const model = this.get(attribute.schemaId);
      if (model.published && model.attributes.length === 1) {
        throw new StateError(`model ${named(model.name, model.uuid)} is published and ${attribute.name} is its last attribute: a published model keeps at least one`);
      }
      // Published: the stored values stay in their column and come back if the attribute is added again.
      const changed = { ...model, attributes: model.attributes.filter((a) => a.uuid !== attribute.uuid) };
      await this.replaceModel(changed);
      this.logs.get(model.uuid)?.setFields(visibleFieldsOf(changed));
    });
  }

  getAttribute(uuid: string): Attribute {
    for (const model of this.models) {
      const attribute = model.attributes.find((a) => a.uuid === uuid);
      if (attribute) return attribute;
    }
    throw new NotFoundError(`attribute ${uuidText(uuid)} not found`);
  }

  listAttributes(schemaUuid: string): Attribute[] {
    return [...this.get(schemaUuid).attributes];
  }

  templates(): Array<{ label: string; value: string }> {
    return templateList();
  }

  /** Exactly the fields applyTemplate inserts, without uuid and schemaId. */
  templateFields(templateId: string): AttributeFields[] {
    const fields = templateFieldsOf(templateId);
    if (!fields) {
      throw new InvalidArgumentError(mustBe('templateId', oneOf(TEMPLATE_IDS), templateId));
    }
    return fields;
  }

  /** All or nothing: a name clash (case-insensitive) inserts nothing. */
  applyTemplate(schemaUuid: string, templateId: string): Promise<Attribute[]> {
    return this.change(async () => {
      const model = this.draft(schemaUuid);
      const fields = this.templateFields(templateId);
      assertRoom(model, fields.length);
      assertNamesFree(model, fields.map((f) => f.name), undefined, `template ${templateId}`);
      const added = fields.map((f): Attribute => ({ uuid: this.newAttributeId(), schemaId: model.uuid, ...f }));
      const stored = await this.replaceModel({ ...model, attributes: [...model.attributes, ...added] });
      return stored.attributes.slice(model.attributes.length);
    });
  }

  /**
   * The model's own retention (null keys: the `[store]` default); applied at once to a published model's
   * log, kept for a draft until it is published.
   */
  setRetention(uuid: string, input: unknown): Promise<DataModel> {
    return this.change(async () => {
      const model = this.get(uuid);
      const retention = parseRetention(input);
      const stored = await this.replaceModel({ ...model, retention });
      const log = this.logs.get(model.uuid);
      if (log) {
        log.setRetention(this.retentionOf(stored));
        void log.enforceRetention().catch(() => {});
      }
      return stored;
    });
  }

  /**
   * Restore and import (src/models/backup.ts): the store holds a committed `.ready-<uuid>` directory
   * with `model`'s records. Swaps it in, records the model, published, in models.json (in place of the
   * model with that uuid, if any) and opens its log. Reads and writes of the model answer 503 meanwhile.
   */
  installRestored(model: DataModel): Promise<DataModel> {
    return this.change(async () => {
      this.logs.delete(model.uuid);
      this.closedModels.set(model.uuid, `model ${named(model.name, model.uuid)} is being restored; retry in a moment`);
      await this.store.adoptReady(model.uuid);
      const stored = await this.record(model);
      try {
        this.logs.set(stored.uuid, await this.store.openModel(stored.uuid, specOf(stored, this.store.options.retention)));
        this.closedModels.delete(stored.uuid);
      } catch (err) {
        if (!(err instanceof StateError)) throw err;
        this.closedModels.set(stored.uuid, `model ${stored.name} (${stored.uuid}) cannot be opened: ${err.message}`);
      }
      return stored;
    });
  }

  /** The limits the store applies to the model. */
  retentionOf(model: DataModel): RetentionLimits {
    return effectiveRetention(model.retention, this.store.options.retention);
  }

  /** Free and total bytes of the store's filesystem and the reserve below which writes stop (contract 14). */
  diskSpace(): { freeBytes: number; totalBytes: number; reserveBytes: number } | undefined {
    const space = this.store.disk.current;
    return space === undefined ? undefined : { ...space, reserveBytes: this.store.disk.reserveBytes };
  }

  /** Why each published model that could not be opened stays closed. */
  closed(): Array<{ uuid: string; reason: string }> {
    return [...this.closedModels].map(([uuid, reason]) => ({ uuid, reason }));
  }

  log(uuid: string): ModelLog {
    const model = this.get(uuid);
    const reason = this.closedModels.get(model.uuid);
    if (reason !== undefined) throw new UnavailableError(reason, 60);
    const log = this.logs.get(model.uuid);
    if (!model.published || !log) throw new StateError(`model ${named(model.name, model.uuid)} is not published`);
    return log;
  }

  /** checkRecord on the live model; an unknown model is an error string too (it goes back to Lua). */
  check(uuid: string, input: Record<string, unknown>, mode: 'save' | 'update'): RecordCheck {
    const model = this.models.find((m) => m.uuid === uuid);
    if (!model) return { ok: false, error: `unknown model ${uuidText(uuid)}` };
    return checkRecord(model, input, mode);
  }

  /** Called after every successful change; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Runs `operation` after every earlier change has finished, then tells the listeners. */
  private change<T>(operation: () => Promise<T>): Promise<T> {
    return this.queue.run(operation).then((value) => {
      for (const listener of this.listeners) {
        try {
          listener();
        } catch {
          // A failing listener must not turn a stored change into a failed call.
        }
      }
      return value;
    });
  }

  /** Writes the new state to models.json first; memory changes only once it is on disk. */
  private async commit(state: { models: readonly DataModel[]; pendingDrops: readonly string[] }): Promise<void> {
    await writeModelsFile(this.file, { models: [...state.models], pendingDrops: [...state.pendingDrops] });
    this.models = state.models;
    this.pendingDrops = state.pendingDrops;
  }

  /** Stores `model` in place of the model with its uuid (or the given list), returns the frozen copy. */
  private async replaceModel(model: DataModel, models?: readonly DataModel[]): Promise<DataModel> {
    const frozen = deepFreeze(structuredClone(model));
    const next = (models ?? this.models).map((m) => (m.uuid === model.uuid ? frozen : m));
    await this.commit({ models: next, pendingDrops: this.pendingDrops });
    return frozen;
  }

  /** A swapped-in model into models.json (published), then its store marker goes: a crash in between repeats this. */
  private async record(model: DataModel): Promise<DataModel> {
    const frozen = deepFreeze(structuredClone({ ...model, published: true }));
    const exists = this.models.some((m) => m.uuid === frozen.uuid);
    await this.commit({
      models: exists ? this.models.map((m) => (m.uuid === frozen.uuid ? frozen : m)) : [...this.models, frozen],
      pendingDrops: this.pendingDrops.filter((id) => id !== frozen.uuid),
    });
    await this.store.clearRestoreMarker(frozen.uuid);
    return frozen;
  }

  /** Drops the store data of `modelId` and clears its pending mark. Safe to repeat. */
  private async dropData(modelId: string): Promise<void> {
    this.logs.delete(modelId);
    this.closedModels.delete(modelId);
    await this.store.dropModel(modelId);
    if (this.pendingDrops.includes(modelId)) {
      await this.commit({ models: this.models, pendingDrops: this.pendingDrops.filter((id) => id !== modelId) });
    }
  }

  private async finishPendingDrops(): Promise<void> {
    for (const modelId of [...this.pendingDrops]) await this.dropData(modelId);
  }

  /** The model, which must exist and be a draft for its attributes to change. */
  private draft(uuid: string): DataModel {
    const model = this.get(uuid);
    if (model.published) {
      throw new StateError(`model ${named(model.name, model.uuid)} is published; its attributes cannot change (fix returns it to draft)`);
    }
    return model;
  }

  private newAttributeId(): string {
    return newUniqueId('PROPER', (id) => this.models.some((m) => m.attributes.some((a) => a.uuid === id)));
  }
}

/** Throws when `adding` more attributes would exceed ATTRIBUTES_MAX. */
function assertRoom(model: DataModel, adding: number): void {
  if (model.attributes.length + adding > ATTRIBUTES_MAX) {
    throw new InvalidArgumentError(
      `model ${named(model.name, model.uuid)} can hold at most ${ATTRIBUTES_MAX} attributes (has ${model.attributes.length}, adding ${adding})`,
    );
  }
}

/** Throws naming every name already used in `model` (case-insensitively), ignoring attribute `except`. */
function assertNamesFree(model: DataModel, names: string[], except?: string, source?: string): void {
  const used = new Set(model.attributes.filter((a) => a.uuid !== except).map((a) => a.name.toLowerCase()));
  const clashes = names.filter((n) => used.has(n.toLowerCase()));
  if (clashes.length === 0) return;
  const list = clashes.map((n) => `"${n}"`).join(', ');
  throw new InvalidArgumentError(
    source
      ? `${source} clashes with existing attributes of model ${named(model.name, model.uuid)}: ${list} (names are case-insensitive); nothing was added`
      : `attribute name ${list} is already used in model ${named(model.name, model.uuid)} (names are case-insensitive)`,
  );
}

/**
 * A restore or import that committed before a crash: swap its ready directory in, and return the models
 * whose swapped-in directory still carries its definition (not yet in models.json).
 */
async function finishSwaps(store: Store): Promise<Map<string, DataModel>> {
  for (const modelId of await store.readyModels()) await store.adoptReady(modelId);
  const restored = new Map<string, DataModel>();
  for (const { modelId, marker } of await store.restoreMarkers()) restored.set(modelId, parseRestoreMarker(marker, modelId));
  return restored;
}

function specOf(model: DataModel, retentionDefaults: RetentionLimits): ModelSpec {
  return { ...visibleFieldsOf(model), retention: effectiveRetention(model.retention, retentionDefaults) };
}

/** What the store needs of the attributes: a record's keys, the column each reads (name and type), and its default. */
function visibleFieldsOf(model: DataModel): { fields: string[]; types: string[]; defaults: unknown[] } {
  return {
    fields: model.attributes.map((a) => a.name),
    types: model.attributes.map((a) => a.type),
    defaults: model.attributes.map((a) => a.rule.defaultValue),
  };
}

/** Ids come from query strings; never echo a huge or odd value verbatim. */
function uuidText(uuid: unknown): string {
  return typeof uuid === 'string' && uuid.length <= 64 ? uuid : describeValue(uuid);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/**
 * Without models.json the store's model directories cannot be read (the attribute names are in it):
 * starting empty would hide them, and the next model would write beside them. Stop and say how to recover.
 */
async function refuseOrphanedData(file: string, store: Store, restored: ReadonlyMap<string, DataModel>): Promise<void> {
  const dirs = (await store.modelDirs()).filter((d) => !restored.has(d));
  if (dirs.length === 0) return;
  const shown = dirs.slice(0, 3).join(', ') + (dirs.length > 3 ? `, ... (${dirs.length} in all)` : '');
  throw new StateError(
    `${file} is missing but ${store.options.rootDir} holds model data (${shown}): restore models.json from a backup, or move those directories away to start without them`,
  );
}
