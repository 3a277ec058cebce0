/**
 * `edge-datacenter export | backup | restore | import`: contract section 15 offline, on the store
 * directly (the service must be stopped: the store's directory lock says so otherwise), with a
 * progress bar on stderr. cli.ts loads this module only for these commands.
 */
import { createReadStream, createWriteStream, statSync, type WriteStream } from 'node:fs';
import { once } from 'node:events';
import cliProgress from 'cli-progress';
import type { Config } from './config/types.js';
import { exportChunks, type ExportFormat, type FormulaMode } from './http/export/export.js';
import { ModelTransfers } from './models/backup.js';
import { importFormat } from './models/import-rows.js';
import { NotFoundError, StateError } from './errors.js';
import { openData } from './server.js';

/** What each offline command does over HTTP while the service runs. */
const ONLINE_ALTERNATIVE: Record<OfflineCommand, string> = {
  export: 'GET /api/v1/datacenter/exportData',
  backup: 'GET /api/v1/datacenter/backup',
  restore: 'POST /api/v1/datacenter/restore',
  import: 'POST /api/v1/datacenter/importData',
};
export type OfflineCommand = 'export' | 'backup' | 'restore' | 'import';

/**
 * Opens the store for a command that reads or writes it directly. The running service holds the data
 * directory's lock (src/store/base/dir-lock.ts): say that the service is to be stopped, or the HTTP API used.
 */
export async function openOffline(config: Config, command: OfflineCommand): ReturnType<typeof openData> {
  try {
    return await openData(config);
  } catch (err) {
    if (err instanceof StateError && / is in use by /.test(err.message)) {
      const held = err.message.replace(/; stop it first$/, '');
      throw new StateError(`${held}: ${command} works on the store directly; stop the service first or use the HTTP API (${ONLINE_ALTERNATIVE[command]})`);
    }
    throw err;
  }
}

/** A model the command names but the data directory lacks: name the directory (the wrong --config is the usual cause). */
export function modelNotFoundIn(err: unknown, dataDir: string): unknown {
  if (!(err instanceof NotFoundError) || !/^model /.test(err.message)) return err;
  return new NotFoundError(`${err.message} in data directory ${dataDir} (give the service's configuration file with --config)`);
}

function bar(label: string, unit: string): cliProgress.SingleBar {
  return new cliProgress.SingleBar(
    { stream: process.stderr, format: `${label} [{bar}] {percentage}% | {value}/{total} ${unit} | {duration_formatted}` },
    cliProgress.Presets.shades_classic,
  );
}

/** The input file (or stdin) as chunks, moving a bar by MiB read when the size is known. */
async function* inputChunks(file: string | undefined, label: string): AsyncGenerator<Uint8Array, void, undefined> {
  const stream = file === undefined ? process.stdin : createReadStream(file, { highWaterMark: 1024 * 1024 });
  const total = file === undefined ? 0 : statSync(file).size;
  const progress = bar(label, 'MiB');
  const mib = (n: number): number => Math.round((n / 1_048_576) * 10) / 10;
  if (total > 0) progress.start(mib(total), 0);
  let read = 0;
  try {
    for await (const chunk of stream) {
      read += (chunk as Buffer).length;
      if (total > 0) progress.update(mib(read));
      yield chunk as Buffer;
    }
  } finally {
    if (total > 0) progress.stop();
  }
}

async function withTransfers<T>(config: Config, command: OfflineCommand, run: (t: ModelTransfers) => Promise<T>): Promise<T> {
  const { store, registry } = await openOffline(config, command);
  try {
    return await run(new ModelTransfers(store, registry));
  } catch (err) {
    throw modelNotFoundIn(err, config.main.dataDir);
  } finally {
    await store.close();
  }
}

export interface ExportCommandOptions {
  format: ExportFormat;
  formulas: FormulaMode;
  fromId?: number;
  toId?: number;
}

export async function exportCommand(config: Config, uuid: string, options: ExportCommandOptions, outFile: string | undefined): Promise<void> {
  const { store, registry } = await openOffline(config, 'export');
  try {
    let model;
    try {
      model = registry.get(uuid);
    } catch (err) {
      throw modelNotFoundIn(err, config.main.dataDir);
    }
    const log = registry.log(uuid);
    const { fromId, toId } = options;
    const stats = log.stats();
    const first = Math.max(fromId ?? stats.firstId, stats.firstId);
    const last = Math.min(toId ?? stats.lastId, stats.lastId);
    const progress = bar('export', 'records');
    const out = await openOutput(outFile);
    progress.start(stats.total === 0 || last < first ? 0 : last - first + 1, 0);
    let written = 0;
    try {
      const onRecords = (n: number): void => {
        written += n;
        progress.update(written);
      };
      for await (const chunk of exportChunks({ model, log, fromId, toId }, { format: options.format, formulas: options.formulas, onRecords })) {
        await out.write(chunk);
      }
    } finally {
      progress.stop();
    }
    if (await out.finish()) process.stderr.write(`exported ${written} records of ${model.uuid} to ${outFile}\n`);
  } finally {
    await store.close();
  }
}

/** Standard output, or the file `outFile` opened before the first chunk. */
async function openOutput(outFile: string | undefined): Promise<{ write(chunk: string | Buffer): Promise<void>; finish(): Promise<boolean> }> {
  const out: WriteStream | NodeJS.WriteStream = outFile === undefined ? process.stdout : createWriteStream(outFile);
  if (outFile !== undefined) await once(out, 'open');
  return {
    async write(chunk) {
      if (!out.write(chunk)) await once(out, 'drain');
    },
    /** Closes a file and waits until it is; true when there was one. */
    async finish() {
      if (outFile === undefined) return false;
      (out as WriteStream).end();
      await once(out, 'close');
      return true;
    },
  };
}

export async function backupCommand(config: Config, uuid: string, outFile: string | undefined): Promise<void> {
  await withTransfers(config, 'backup', async (transfers) => {
    const progress = bar('backup', 'records');
    let total = 0;
    const { chunks } = transfers.backup(uuid, { onRecords: (n) => progress.update(n) });
    const out = await openOutput(outFile);
    let first = true;
    try {
      for await (const chunk of chunks) {
        if (first) {
          total = (JSON.parse(chunk.slice(0, chunk.indexOf('\n'))) as { records: number }).records;
          progress.start(total, 0);
          first = false;
        }
        await out.write(chunk);
      }
    } finally {
      progress.stop();
    }
    if (await out.finish()) process.stderr.write(`backed up ${total} records of ${uuid} to ${outFile}\n`);
  });
}

export async function restoreCommand(config: Config, inFile: string | undefined, replace: boolean): Promise<void> {
  const result = await withTransfers(config, 'restore', (t) => t.restore(inputChunks(inFile, 'restore'), { replace })).catch((err: unknown) => {
    throw withReplaceFlag(err);
  });
  process.stderr.write(`restored ${result.records} records of model ${result.name} (${result.uuid}); the next id is ${result.nextId}\n`);
}

/** The refusal of a restore over a model that exists names the HTTP parameter; here the flag is --replace. */
function withReplaceFlag(err: unknown): unknown {
  if (!(err instanceof StateError) || !err.message.includes('replace=true')) return err;
  return new StateError(err.message.replace('replace=true', '--replace'));
}

export async function importCommand(config: Config, uuid: string, format: string | undefined, inFile: string | undefined): Promise<void> {
  const result = await withTransfers(config, 'import', (t) => t.importData(uuid, importFormat(format, '--format'), inputChunks(inFile, 'import')));
  const ids = result.firstId === null ? '' : `, ids ${result.firstId}..${result.lastId}`;
  process.stderr.write(`imported ${result.imported} records into model ${result.name} (${result.uuid})${ids}\n`);
}
