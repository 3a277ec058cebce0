/**
 * The models and their attributes: validation and lifecycle (draft -> published -> fix/delete).
 * models.json is saved-models.ts, the store logs of the published models model-logs.ts.
 *
 * Every change runs alone on one promise chain, so a state check and the write it allows can never
 * interleave with another call.
 */
import { InvalidArgumentError, NotFoundError, StateError } from '../errors.js';
import type { ModelLog, RetentionLimits, Store } from '../store/index.js';
import { parseRetention } from './retention-input.js';
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
import { ModelLogs } from './model-logs.js';
import { modelsFilePath, readModelsFile } from './models-file.js';
import { checkRecord } from './record-check.js';
import { SavedModels } from './saved-models.js';
import { finishSwaps, refuseOrphanedData } from './startup-recovery.js';
import { TEMPLATE_IDS, templateFieldsOf, templateList } from './templates.js';
import { ATTRIBUTES_MAX, type Attribute, type DataModel, type RecordCheck } from './types.js';


export class ModelRegistry {
  private readonly listeners = new Set<() => void>();
  private readonly queue = new SerialQueue();
  private readonly logs: ModelLogs;

  private constructor(
    private readonly saved: SavedModels,
    private readonly store: Store,
  ) {
    this.logs = new ModelLogs(store);
  }

  /** Loads models.json, finishes interrupted deletes and fixes, opens the log of every published model. */
  static async open(opts: { dataDir: string; store: Store }): Promise<ModelRegistry> {
    await mkdirDurable(opts.dataDir);
    const file = modelsFilePath(opts.dataDir);
    const restored = await finishSwaps(opts.store);
    if (!existsSync(file)) await refuseOrphanedData(file, opts.store, restored);
    const registry = new ModelRegistry(new SavedModels(file, await readModelsFile(file)), opts.store);
    for (const model of restored.values()) await registry.record(model);
    await registry.finishPendingDrops();
    await registry.logs.openPublished(registry.saved.models);
    return registry;
  }

  list(): DataModel[] {
    return [...this.saved.models];
  }

  /** The models as they are: the same frozen array until one of them changes, so a kept answer checks it by identity. */
  get models(): readonly DataModel[] {
    return this.saved.models;
  }

  get(uuid: string): DataModel {
    const model = this.saved.find(uuid);
    if (!model) throw new NotFoundError(`model ${uuidText(uuid)} not found`);
    return model;
  }

  create(input: { name: unknown; description?: unknown }): Promise<DataModel> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const model: DataModel = {
        uuid: newUniqueId('SCHEMA', (id) => this.saved.isTaken(id)),
        name: parseModelName(body.name),
        description: parseModelDescription(body.description, ''),
        published: false,
        createdAtMs: Date.now(),
        attributes: [],
      };
      return this.saved.add(model);
    });
  }

  /** Name and description only; allowed in both states. An absent field keeps its value. */
  update(input: { uuid: unknown; name?: unknown; description?: unknown }): Promise<DataModel> {
    return this.change(async () => {
      const body = requireObject(input, 'request body');
      const current = this.get(requireString(body, 'uuid'));
      return this.saved.replace({
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
      await this.saved.removeForDrop(model);
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
      await this.logs.create(model);
      return this.saved.replace({ ...model, published: true });
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
      const draft = await this.saved.replaceForDrop(model, { ...model, published: false });
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
      this.logs.setFields(changed);
      try {
        await this.saved.replace(changed);
      } catch (err) {
        // models.json refused it: the log shows the model as it still is (the new column stays, unused).
        this.logs.setFields(model);
        throw err;
      }
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
      await this.saved.replace(changed);
      this.logs.setFields(changed);
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
      await this.saved.replace(changed);
      this.logs.setFields(changed);
    });
  }

  getAttribute(uuid: string): Attribute {
    for (const model of this.saved.models) {
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
      const stored = await this.saved.replace({ ...model, attributes: [...model.attributes, ...added] });
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
      const stored = await this.saved.replace({ ...model, retention });
      this.logs.applyRetention(stored);
      return stored;
    });
  }

  /**
   * Restore and import (src/models/backup.ts): `transfer.commit` turns the staged records into a
   * committed `.ready-<uuid>` directory. It runs here, in the queue of changes, and only while the
   * model is still `transfer.expected`, the object the transfer started from (undefined: there was no
   * model): a delete, rename, attribute or retention change made meanwhile fails the transfer with 409
   * rather than being reverted by it (contract 20). Then the directory is swapped in, the model recorded,
   * published, in models.json (in place of the model with that uuid, if any) and its log opened. Reads and
   * writes of the model answer 503 meanwhile.
   */
  installRestored(model: DataModel, transfer: { expected: DataModel | undefined; commit: () => Promise<unknown> }): Promise<DataModel> {
    return this.change(async () => {
      const current = this.saved.find(model.uuid);
      if (current !== transfer.expected) {
        const what = current === undefined ? 'deleted' : transfer.expected === undefined ? 'created' : 'changed';
        throw new StateError(
          `model ${named(model.name, model.uuid)} was ${what} while this restore or import ran: nothing was written; run it again if it is still wanted`,
        );
      }
      await transfer.commit();
      this.logs.closeForRestore(model);
      await this.store.adoptReady(model.uuid);
      const stored = await this.record(model);
      await this.logs.reopen(stored);
      return stored;
    });
  }

  /** The limits the store applies to the model. */
  retentionOf(model: DataModel): RetentionLimits {
    return this.logs.retentionOf(model);
  }

  /** Free and total bytes of the store's filesystem and the reserve below which writes stop (contract 14). */
  diskSpace(): { freeBytes: number; totalBytes: number; reserveBytes: number } | undefined {
    return this.logs.diskSpace();
  }

  /** Why each published model that could not be opened stays closed. */
  closed(): Array<{ uuid: string; reason: string }> {
    return this.logs.closed();
  }

  log(uuid: string): ModelLog {
    return this.logs.log(this.get(uuid));
  }

  /** checkRecord on the live model; an unknown model is an error string too (it goes back to Lua). */
  check(uuid: string, input: Record<string, unknown>, mode: 'save' | 'update'): RecordCheck {
    const model = this.saved.find(uuid);
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

  /** A swapped-in model into models.json (published), then its store marker goes: a crash in between repeats this. */
  private async record(model: DataModel): Promise<DataModel> {
    const stored = await this.saved.install({ ...model, published: true });
    await this.store.clearRestoreMarker(stored.uuid);
    return stored;
  }

  /** Drops the store data of `modelId` and clears its pending mark. Safe to repeat. */
  private async dropData(modelId: string): Promise<void> {
    this.logs.forget(modelId);
    await this.store.dropModel(modelId);
    await this.saved.dropDone(modelId);
  }

  private async finishPendingDrops(): Promise<void> {
    for (const modelId of [...this.saved.pendingDrops]) await this.dropData(modelId);
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
    return newUniqueId('PROPER', (id) => this.saved.models.some((m) => m.attributes.some((a) => a.uuid === id)));
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

/** Ids come from query strings; never echo a huge or odd value verbatim. */
function uuidText(uuid: unknown): string {
  return typeof uuid === 'string' && uuid.length <= 64 ? uuid : describeValue(uuid);
}
