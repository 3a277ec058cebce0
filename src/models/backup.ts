/**
 * Backup, restore and import of a model's records (contract section 15), for the HTTP routes and the
 * CLI alike. Everything streams: a backup is written as ~64 KiB chunks from the store's iterator, and a
 * restore or import reads its upload line by line into a staging log (src/store/staging.ts) that is
 * swapped in only once the last line was good. Bad input, a client that goes away or a crash before the
 * commit leave the model exactly as it was; after the commit the swap finishes, at the latest at the
 * next open. See docs/models.md "Backup, restore and import".
 */
import { InvalidArgumentError, StateError } from '../errors.js';
import { ID_MAX, createAtDomainRule, type ModelLog, type ModelSpec, type Store } from '../store/index.js';
import { lineBatches } from '../util/lines.js';
import { named } from '../util/messages.js';
import { backupModel, headerLine, parseHeader, RecordLineChunker, RecordLineReader } from './backup-format.js';
import { importRows, type ImportFormat, type ImportRow } from './import-rows.js';
import type { ModelRegistry } from './registry.js';
import type { DataModel } from './types.js';

/** Chunks of up to this many characters: fewer writes (each a hop to a libuv thread or a socket write) for the same data. */
const CHUNK_CHARS = 256 * 1024;
/** A record is at most 1 MiB stored; its JSON line may be a few times that. */
export const LINE_BYTES_MAX = 8 * 1024 * 1024;
/**
 * Gaps between the ids of a restored backup. Each starts a segment file (its own fsync at the commit, a
 * scan at the next open), so a file of alternating ids would cost a file per record.
 */
export const RESTORE_GAPS_MAX = 128;

export type BackupLog = Pick<ModelLog, 'iterate' | 'stats' | 'recovery' | 'storedIdCount'>;

export interface Progress {
  /** Records backed up, restored or imported so far. */
  onRecords?: (total: number) => void;
}

export interface RestoreResult {
  uuid: string;
  name: string;
  records: number;
  /** The id the next new record gets. */
  nextId: number;
}

export interface ImportResult {
  uuid: string;
  name: string;
  imported: number;
  firstId: number | null;
  lastId: number | null;
}

/**
 * The backup of `log` as text chunks: the header, then every record up to the newest id at the start
 * (a snapshot: records written meanwhile are not in it, records removed meanwhile still are).
 */
export async function* backupChunks(model: DataModel, log: BackupLog, progress: Progress = {}): AsyncGenerator<string, void, undefined> {
  // stats() and the iterator's snapshot in one synchronous step: nothing is written in between.
  const stats = log.stats();
  const iterator = log.iterate({ toId: stats.lastId });
  const first = iterator.next();
  const lost = lostIdsWithin(log, stats.firstId, stats.lastId);
  const lines = new RecordLineChunker(model, CHUNK_CHARS);
  let header = headerLine(model, Math.max(0, stats.total - lost));
  let done = 0;
  try {
    for (let step = await first; step.done !== true; step = await iterator.next()) {
      const chunk = lines.add(step.value);
      done++;
      if (chunk !== undefined) {
        yield header + chunk;
        header = '';
        progress.onRecords?.(done);
      }
    }
  } finally {
    await iterator.return?.();
  }
  yield header + lines.flush();
  progress.onRecords?.(done);
}

/** Lost ids that stats().total counts: those inside the log's runs of ids (a range lost at the tail lies in a gap). */
function lostIdsWithin(log: BackupLog, a: number, b: number): number {
  let n = 0;
  for (const r of log.recovery.lostRanges) {
    const lo = Math.max(a, r.fromId);
    const hi = Math.min(b, r.toId);
    if (hi >= lo) n += log.storedIdCount(lo, hi);
  }
  return n;
}

/** Restores and imports, one at a time per model; backups run alongside anything. */
export class ModelTransfers {
  private readonly busy = new Set<string>();

  constructor(
    private readonly store: Pick<Store, 'stage'>,
    private readonly registry: Pick<ModelRegistry, 'list' | 'get' | 'log' | 'installRestored'>,
  ) {}

  backup(uuid: string, progress?: Progress): { model: DataModel; chunks: AsyncGenerator<string, void, undefined> } {
    const model = this.registry.get(uuid);
    return { model, chunks: backupChunks(model, this.registry.log(uuid), progress) };
  }

  /**
   * Recreates the backed-up model (same uuid, attributes, ids, create_at), published. An existing uuid
   * is refused (409) unless `replace`; then its records are replaced. All or nothing.
   */
  async restore(body: AsyncIterable<Uint8Array>, options: { replace: boolean } & Progress): Promise<RestoreResult> {
    const batches = lineBatches(body, 'backup', LINE_BYTES_MAX);
    let header: ReturnType<typeof parseHeader> | undefined;
    let reader: RecordLineReader | undefined;
    let staging: ReturnType<Store['stage']> | undefined;
    let claimed: string | undefined;
    let expected: DataModel | undefined;
    let lineNo = 0;
    let lastId = 0;
    let gaps = 0;
    try {
      for await (const batch of batches) {
        for (let i = 0; i < batch.lines.length; i++) {
          const line = batch.lines[i];
          lineNo = batch.first + i;
          if (line.length === 0) continue;
          if (header === undefined || reader === undefined || staging === undefined) {
            if (lineNo !== 1) throw new InvalidArgumentError(`line ${lineNo}: the header must be line 1`);
            header = parseHeader(line);
            expected = this.checkRestorable(header.model, options.replace);
            this.claim(header.model.uuid);
            claimed = header.model.uuid;
            reader = new RecordLineReader(header.model);
            staging = this.store.stage(header.model.uuid, specOf(header.model));
            continue;
          }
          const r = reader.read(line, lineNo);
          if (lastId > 0 && r.id > lastId + 1 && ++gaps > RESTORE_GAPS_MAX) {
            throw new InvalidArgumentError(
              `line ${lineNo}: id ${r.id} leaves gap number ${gaps} after id ${lastId}; a backup may leave at most ${RESTORE_GAPS_MAX} gaps between ids ` +
                '(each starts a segment file; a backup the service wrote has one per crash that lost records)',
            );
          }
          staging.append(r.id, r.tsMs, r.record);
          lastId = r.id;
        }
        if (staging !== undefined) {
          options.onRecords?.(staging.count);
          await staging.settle();
        }
      }
      if (header === undefined || staging === undefined) throw new InvalidArgumentError('backup is empty: line 1 must be the header');
      if (staging.count !== header.records) {
        throw new InvalidArgumentError(
          `backup ends at line ${lineNo} after ${staging.count} records, but its header announces ${header.records}: the file is cut short or was edited`,
        );
      }
      const ready = staging;
      const restored = header.model;
      const model = await this.registry.installRestored(restored, { expected, commit: () => ready.commit(backupModel(restored)) });
      return { uuid: model.uuid, name: model.name, records: staging.count, nextId: lastId + 1 };
    } catch (err) {
      await staging?.discard();
      throw err;
    } finally {
      if (claimed !== undefined) this.busy.delete(claimed);
    }
  }

  /**
   * Appends the rows of an export file (CSV or JSON Lines, contract section 6) with new ids, keeping their
   * create_at, which must not go back in time. Writes to the model answer 503 while it runs; all or nothing.
   */
  async importData(uuid: string, format: ImportFormat, body: AsyncIterable<Uint8Array>, progress: Progress = {}): Promise<ImportResult> {
    const model = this.registry.get(uuid);
    const log = this.registry.log(uuid) as ModelLog;
    this.claim(uuid);
    let release: (() => void) | undefined;
    let staging: ReturnType<Store['stage']> | undefined;
    try {
      staging = this.store.stage(uuid, specOf(model));
      release = log.holdWrites('an import is running; writes are refused until it ends');
      // Writes are held: the model is a fixed prefix of the new one, copied as it is.
      const stats = log.stats();
      let lastTs = -Infinity;
      for await (const view of log.iterate({ toId: stats.lastId })) {
        lastTs = view.create_at as number;
        staging.append(view.id as number, lastTs, view);
        if (staging.due) await staging.settle();
      }
      const kept = staging.count;
      let id = stats.nextId;
      const firstId = id;
      for await (const rows of importRows(format, model, lineBatches(body, `${format} file`, LINE_BYTES_MAX))) {
        for (const row of rows) {
          checkRowTime(row, lastTs, id === firstId);
          if (id > ID_MAX) throw new InvalidArgumentError(`line ${row.lineNo}: this row would take id ${id}, past ${ID_MAX}, the highest an id may be`);
          staging.append(id++, row.tsMs, row.record);
          lastTs = row.tsMs;
        }
        progress.onRecords?.(staging.count - kept);
        await staging.settle();
      }
      const imported = staging.count - kept;
      if (imported === 0) {
        await staging.discard();
        return { uuid, name: model.name, imported: 0, firstId: null, lastId: null };
      }
      const ready = staging;
      await this.registry.installRestored(model, { expected: model, commit: () => ready.commit(backupModel(model)) });
      return { uuid, name: model.name, imported, firstId, lastId: id - 1 };
    } catch (err) {
      await staging?.discard();
      throw err;
    } finally {
      release?.();
      this.busy.delete(uuid);
    }
  }

  /** Returns the model the restore replaces (undefined: none), which must still be there as it is when the restore commits. */
  private checkRestorable(model: DataModel, replace: boolean): DataModel | undefined {
    const models = this.registry.list();
    const existing = models.find((m) => m.uuid === model.uuid);
    if (!replace && existing !== undefined) {
      throw new StateError(`model ${named(model.name, model.uuid)} exists: restore with replace=true to replace it and its records`);
    }
    const mine = new Set(model.attributes.map((a) => a.uuid));
    for (const other of models) {
      if (other.uuid === model.uuid) continue;
      const clash = other.attributes.find((a) => mine.has(a.uuid));
      if (clash) throw new StateError(`attribute ${named(clash.name, clash.uuid)} of the backup belongs to model ${named(other.name, other.uuid)} here: delete that model first`);
    }
    return existing;
  }

  private claim(uuid: string): void {
    if (this.busy.has(uuid)) throw new StateError(`a restore or import of model ${uuid} is running; try again when it has finished`);
    this.busy.add(uuid);
  }
}

/**
 * An imported row's create_at: inside the domain (contract 20), and not before the row before it or, for
 * the first row, the model's newest record (the store's time ranges find records by a binary search over
 * create_at in id order).
 */
function checkRowTime(row: ImportRow, previousMs: number, first: boolean): void {
  const rule = createAtDomainRule(row.tsMs);
  if (rule !== undefined) throw new InvalidArgumentError(`line ${row.lineNo}: ${rule}`);
  if (row.tsMs >= previousMs) return;
  const at = `line ${row.lineNo}: create_at ${new Date(row.tsMs).toISOString()} is before ${new Date(previousMs).toISOString()}`;
  if (!first) throw new InvalidArgumentError(`${at}, the previous row's: imported rows must not go back in time; sort the file by create_at`);
  throw new InvalidArgumentError(
    `${at}, the create_at of the model's newest record: imported rows must not go back in time. Import only the rows from ` +
      `${new Date(previousMs).toISOString()} on; older rows go only into a model whose records are all older (a new or cleared model)`,
  );
}

function specOf(model: DataModel): ModelSpec {
  return { fields: model.attributes.map((a) => a.name), types: model.attributes.map((a) => a.type) };
}

