/**
 * The store side of the models: the log of every published model, why each published model that could
 * not be opened stays closed (the others serve), the retention each log applies, and the disk space
 * the store reports.
 */
import { StateError, UnavailableError } from '../errors.js';
import type { ModelLog, ModelSpec, RetentionLimits, Store } from '../store/index.js';
import { named } from '../util/messages.js';
import { effectiveRetention } from './retention-input.js';
import type { DataModel } from './types.js';

export class ModelLogs {
  private readonly logs = new Map<string, ModelLog>();
  /** Published models whose store log refused to open (see FIELDS), with the reason: the others serve. */
  private readonly closedModels = new Map<string, string>();
  /** Models whose closed reason is a restore's swap (closeForRestore), until reopen or forget. */
  private readonly restoring = new Set<string>();

  constructor(private readonly store: Store) {}

  /** At open: a published model whose data directory is missing stays closed rather than starting over empty. */
  async openPublished(models: readonly DataModel[]): Promise<void> {
    const dirs = new Set(await this.store.modelDirs());
    for (const model of models) {
      if (!model.published) continue;
      if (!dirs.has(model.uuid)) {
        // Opening would create it empty: the records would be gone without a word, and ids start over.
        const dir = `${this.store.options.rootDir}/${model.uuid}`;
        this.closedModels.set(
          model.uuid,
          `model ${model.name} (${model.uuid}) cannot be opened: its data directory ${dir} is missing; restore it, or fix the model (schema/fix) to start it empty`,
        );
        continue;
      }
      await this.reopen(model);
    }
  }

  /** Publish: an empty log with the attributes as fields. */
  async create(model: DataModel): Promise<void> {
    this.logs.set(model.uuid, await this.store.openModel(model.uuid, this.specOf(model)));
  }

  /** Opens the log of a published model; one the store refuses (StateError) leaves the model closed, saying why. */
  async reopen(model: DataModel): Promise<void> {
    this.restoring.delete(model.uuid);
    try {
      this.logs.set(model.uuid, await this.store.openModel(model.uuid, this.specOf(model)));
      this.closedModels.delete(model.uuid);
    } catch (err) {
      if (!(err instanceof StateError)) throw err;
      this.closedModels.set(model.uuid, `model ${model.name} (${model.uuid}) cannot be opened: ${err.message}`);
    }
  }

  /** Its data is being replaced (restore, import): reads and writes answer 503 until reopen. */
  closeForRestore(model: DataModel): void {
    this.logs.delete(model.uuid);
    this.closedModels.set(model.uuid, `model ${named(model.name, model.uuid)} is being restored; retry in a moment`);
    this.restoring.add(model.uuid);
  }

  /** Its data is being dropped: neither open nor closed any more. */
  forget(modelId: string): void {
    this.logs.delete(modelId);
    this.closedModels.delete(modelId);
    this.restoring.delete(modelId);
  }

  log(model: DataModel): ModelLog {
    const reason = this.closedModels.get(model.uuid);
    // A restore's swap takes milliseconds; a model that cannot be opened waits for the operator.
    if (reason !== undefined) throw new UnavailableError(reason, this.restoring.has(model.uuid) ? 1 : 60);
    const log = this.logs.get(model.uuid);
    if (!model.published || !log) throw new StateError(`model ${named(model.name, model.uuid)} is not published`);
    return log;
  }

  /** The open log's columns follow the attributes (contract 13); a draft has none. */
  setFields(model: DataModel): void {
    this.logs.get(model.uuid)?.setFields(visibleFieldsOf(model));
  }

  closed(): Array<{ uuid: string; reason: string }> {
    return [...this.closedModels].map(([uuid, reason]) => ({ uuid, reason }));
  }

  retentionOf(model: DataModel): RetentionLimits {
    return effectiveRetention(model.retention, this.store.options.retention);
  }

  /**
   * The open log applies the model's limits from now on, and a retention pass runs at once. Nobody waits
   * for that pass: its failure goes to the store's log, unless a drop, fix or restore overtook it.
   */
  applyRetention(model: DataModel): void {
    const log = this.logs.get(model.uuid);
    if (!log) return;
    log.setRetention(this.retentionOf(model));
    log.enforceRetention().catch((e: unknown) => {
      if (this.logs.get(model.uuid) !== log) return;
      this.store.warn(`model ${model.uuid}: retention after a retention change failed: ${e instanceof Error ? e.message : String(e)}`);
    });
  }

  diskSpace(): { freeBytes: number; totalBytes: number; reserveBytes: number } | undefined {
    const space = this.store.disk.current;
    return space === undefined ? undefined : { ...space, reserveBytes: this.store.disk.reserveBytes };
  }

  private specOf(model: DataModel): ModelSpec {
    return { ...visibleFieldsOf(model), retention: this.retentionOf(model) };
  }
}

/** What the store needs of the attributes: a record's keys, the column each reads (name and type), and its default. */
function visibleFieldsOf(model: DataModel): { fields: string[]; types: string[]; defaults: unknown[] } {
  return {
    fields: model.attributes.map((a) => a.name),
    types: model.attributes.map((a) => a.type),
    defaults: model.attributes.map((a) => a.rule.defaultValue),
  };
}
