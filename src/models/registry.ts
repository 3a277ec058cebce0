/**
 * The models and their attributes: validation, lifecycle (draft -> published -> fix/delete), the
 * metadata file, and the store log of every published model.
 *
 * Every change runs alone on one promise chain, so a state check and the write it allows can never
 * interleave with another call. Models are deep-frozen and replaced, never mutated, so what
 * list()/get() hand out stays consistent and cannot be changed by callers.
 */
import { InvalidArgumentError, NotFoundError, StateError, UnavailableError } from '../errors.js';
import type { ModelLog, ModelSpec, Store } from '../store/index.js';
import { existsSync } from 'node:fs';
import { SerialQueue, mkdirDurable } from '../util/atomic-file.js';
import {
  parseAttributeFields,
  parseModelDescription,
  parseModelName,
  requireObject,
  requireString,
  shown,
  type AttributeFields,
} from './attribute-input.js';
import { newUniqueId } from './ids.js';
import { modelsFilePath, readModelsFile, writeModelsFile, type ModelsState } from './models-file.js';
import { checkRecord } from './record-check.js';
import { TEMPLATE_IDS, templateFieldsOf, templateList } from './templates.js';
import type { Attribute, DataModel, RecordCheck } from './types.js';

/** The store refuses logs with more fields (MODEL_FIELDS_MAX); refuse the attribute, not the publish. */
export const ATTRIBUTES_MAX = 1024;

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
    if (!existsSync(file)) await refuseOrphanedData(file, opts.store);
    const registry = new ModelRegistry(file, opts.store, await readModelsFile(file));
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
        registry.logs.set(model.uuid, await opts.store.openModel(model.uuid, specOf(model)));
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
      if (model.published) throw new StateError(`model ${model.uuid} is already published`);
      if (model.attributes.length === 0) {
        throw new InvalidArgumentError(`model ${model.uuid} needs at least one attribute to be published`);
      }
      // A draft holds no data; dropping first clears whatever an interrupted fix or publish left.
      await this.dropData(model.uuid);
      const log = await this.store.openModel(model.uuid, specOf(model));
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
          `confirm must be true: fix deletes every record of model ${model.uuid} (got ${shown(confirm)})`,
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
      const model = this.draft(requireString(body, 'schemaId'));
      const fields = parseAttributeFields(body);
      assertRoom(model, 1);
      assertNamesFree(model, [fields.name]);
      const attribute: Attribute = { uuid: this.newAttributeId(), schemaId: model.uuid, ...fields };
      await this.replaceModel({ ...model, attributes: [...model.attributes, attribute] });
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
          `schemaId cannot change: attribute ${current.uuid} belongs to model ${current.schemaId} (got ${shown(body.schemaId)})`,
        );
      }
      const model = this.draft(current.schemaId);
      const fields = parseAttributeFields(body, current);
      assertNamesFree(model, [fields.name], current.uuid);
      const updated: Attribute = { uuid: current.uuid, schemaId: current.schemaId, ...fields };
      await this.replaceModel({
        ...model,
        attributes: model.attributes.map((a) => (a.uuid === current.uuid ? updated : a)),
      });
      return this.getAttribute(current.uuid);
    });
  }

  deleteAttribute(uuid: string): Promise<void> {
    return this.change(async () => {
      const attribute = this.getAttribute(uuid);
      const model = this.draft(attribute.schemaId);
      await this.replaceModel({ ...model, attributes: model.attributes.filter((a) => a.uuid !== attribute.uuid) });
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
      throw new InvalidArgumentError(`templateId must be one of ${TEMPLATE_IDS.join(', ')} (got ${shown(templateId)})`);
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

  /** Why each published model that could not be opened stays closed. */
  closed(): Array<{ uuid: string; reason: string }> {
    return [...this.closedModels].map(([uuid, reason]) => ({ uuid, reason }));
  }

  log(uuid: string): ModelLog {
    const model = this.get(uuid);
    const reason = this.closedModels.get(model.uuid);
    if (reason !== undefined) throw new UnavailableError(reason, 60);
    const log = this.logs.get(model.uuid);
    if (!model.published || !log) throw new StateError(`model ${model.uuid} is not published`);
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
      throw new StateError(`model ${model.uuid} is published; its attributes cannot change (fix returns it to draft)`);
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
      `model ${model.uuid} can hold at most ${ATTRIBUTES_MAX} attributes (has ${model.attributes.length}, adding ${adding})`,
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
      ? `${source} clashes with existing attributes of model ${model.uuid}: ${list} (names are case-insensitive); nothing was added`
      : `attribute name ${list} is already used in model ${model.uuid} (names are case-insensitive)`,
  );
}

function specOf(model: DataModel): ModelSpec {
  return { fields: model.attributes.map((a) => a.name), types: model.attributes.map((a) => a.type) };
}

/** Ids come from query strings; never echo a huge or odd value verbatim. */
function uuidText(uuid: unknown): string {
  return typeof uuid === 'string' && uuid.length <= 64 ? uuid : shown(uuid);
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
async function refuseOrphanedData(file: string, store: Store): Promise<void> {
  const dirs = await store.modelDirs();
  if (dirs.length === 0) return;
  const shown = dirs.slice(0, 3).join(', ') + (dirs.length > 3 ? `, ... (${dirs.length} in all)` : '');
  throw new StateError(
    `${file} is missing but ${store.options.rootDir} holds model data (${shown}): restore models.json from a backup, or move those directories away to start without them`,
  );
}
