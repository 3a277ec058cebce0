/**
 * Wires the service together: config -> store -> models -> scripts -> HTTP, and stops it in reverse:
 * stop accepting requests, drain the script engine, then flush, sync and close the store (which marks
 * a clean shutdown).
 */
import { statfs } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Config } from './config/types.js';
import { Audit } from './http/guards/audit.js';
import { type HttpServer, startHttpServer } from './http/server.js';
import { loadTls } from './http/transport/tls.js';
import { ModelRegistry } from './models/registry.js';
import { ModelTransfers } from './models/backup.js';
import { ScriptEngine } from './scripts/engine.js';
import { Store } from './store/index.js';
import type { StoreOptions } from './store/base/types.js';
import type { Uplink } from './uplink/uplink.js';

export interface RunningService {
  host: string;
  port: number;
  scheme: 'http' | 'https';
  /** The HTTP library serving (`[plugin.http_server] transport`, `auto` resolved). */
  transport: HttpServer['transport'];
  /** The models, for tools and tests that look behind the API. */
  registry: ModelRegistry;
  /** Every route with the credential it asks for. */
  routes: HttpServer['routes'];
  stop(): Promise<void>;
}

const HOUR_MS = 3_600_000;

/** Store options from `[store]`; the models live under `<data_dir>/store/<model uuid>/`. */
export function storeOptionsOf(config: Config): StoreOptions {
  const s = config.store;
  return {
    rootDir: path.join(config.main.dataDir, 'store'),
    durability: s.sync,
    syncIntervalMs: s.syncIntervalMs,
    segmentBytesMax: s.segmentBytes,
    segmentAgeMsMax: s.segmentAgeHours * HOUR_MS,
    retention: {
      maxRecords: s.retentionMaxRecords,
      maxBytes: s.retentionMaxBytes,
      maxAgeMs: s.retentionMaxAgeHours * HOUR_MS,
    },
    clockJumpMaxMs: s.clockJumpMaxS * 1000,
    sealedFdsMax: s.sealedFdsMax,
    diskReserveBytes: s.diskReserveBytes,
    compactSealed: s.compactSealed === 'on',
  };
}

/** Opens the store and the model registry (also used by the `export` CLI command). */
export async function openData(config: Config, logger?: Logger): Promise<{ store: Store; registry: ModelRegistry }> {
  const storeLog = logger?.child({ module: 'store' });
  const store = await Store.open(storeOptionsOf(config), { warn: (message) => storeLog?.warn(message) });
  try {
    const registry = await ModelRegistry.open({ dataDir: config.main.dataDir, store });
    return { store, registry };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** One line an operator reads first: what is stored, how it is kept, and how much room is left. */
async function logStartSummary(config: Config, registry: ModelRegistry, logger: Logger): Promise<void> {
  const published = registry.list().filter((m) => m.published);
  let records = 0;
  for (const m of published) {
    try {
      records += registry.log(m.uuid).stats().total;
    } catch {
      // closed model: logged on its own
    }
  }
  const s = config.store;
  const disk = await statfs(config.main.dataDir).catch(() => undefined);
  const freeDiskBytes = disk === undefined ? undefined : disk.bavail * disk.bsize;
  logger.info(
    {
      models: registry.list().length,
      publishedModels: published.length,
      records,
      sync: s.sync,
      syncIntervalMs: s.syncIntervalMs,
      retention: { maxRecords: s.retentionMaxRecords, maxBytes: s.retentionMaxBytes, maxAgeHours: s.retentionMaxAgeHours },
      dataDir: config.main.dataDir,
      freeDiskBytes,
    },
    `${published.length} published models, ${records} records, sync ${s.sync}, ` +
      `${freeDiskBytes === undefined ? 'free disk unknown' : `${Math.floor(freeDiskBytes / 1_048_576)} MiB free`} in ${config.main.dataDir}`,
  );
}

/** What recovery cut or skipped reaches the operator's log, with the model's name and uuid. */
function logRecoveryFindings(registry: ModelRegistry, logger: Logger): void {
  const closed = new Set(registry.closed().map((c) => c.uuid));
  for (const model of registry.list()) {
    if (!model.published || closed.has(model.uuid)) continue;
    const r = registry.log(model.uuid).findingsAtOpen();
    if (r.truncatedBytes === 0 && r.lostRanges.length === 0) continue;
    logger.warn(
      { model: model.name, uuid: model.uuid, truncatedBytes: r.truncatedBytes, lostRanges: r.lostRanges },
      `recovery of model ${model.name} (${model.uuid}): cut ${r.truncatedBytes} bytes of unsynced tail, lost ${r.lostRanges.length} id ranges`,
    );
  }
}

export async function startService(config: Config, logger: Logger): Promise<RunningService> {
  const { store, registry } = await openData(config, logger);
  logRecoveryFindings(registry, logger.child({ module: 'store' }));
  await logStartSummary(config, registry, logger);
  for (const { uuid, reason } of registry.closed()) logger.error({ module: 'store', uuid }, reason);
  let engine: ScriptEngine | undefined;
  let uplink: Uplink | undefined;
  // Failed logins to an input's MQTT broker: audit lines of their own, in the HTTP audit's shape (kind mqtt-password).
  const brokerAudit = new Audit(logger.child({ module: 'inputs' }));
  try {
    // The same files and checks as the HTTP server's (which loads them again): an MQTT broker input with config.tls serves them.
    const tls = await loadTls(config.http);
    engine = await ScriptEngine.open({
      dataDir: config.main.dataDir,
      config: config.scripts,
      registry,
      log: logger.child({ module: 'scripts' }),
      onBrokerAuthFailed: ({ address }) => brokerAudit.authFailed({ remoteAddress: address }, 'mqtt-password'),
      inputTls: tls === undefined ? undefined : { cert: tls.cert, key: tls.key, passphrase: tls.passphrase },
    });
    if (config.uplink.engine === 'nats') {
      const uplinkLog = logger.child({ module: 'uplink' });
      // Loaded only when it ships: the NATS client costs about 10 MiB of memory on a gateway that does not.
      const { Uplink } = await import('./uplink/uplink.js');
      uplink = await Uplink.start({
        config: config.uplink,
        dataDir: config.main.dataDir,
        registry,
        log: { info: (m) => uplinkLog.info(m), warn: (m) => uplinkLog.warn(m) },
      });
    }
    const http = await startHttpServer({
      config,
      registry,
      uplink,
      transfers: new ModelTransfers(store, registry),
      engine,
      logger: logger.child({ module: 'http' }),
    });
    let stopping: Promise<void> | undefined;
    return {
      host: http.host,
      port: http.port,
      scheme: http.scheme,
      transport: http.transport,
      registry,
      routes: http.routes,
      stop() {
        // Pushes in flight are answered before connections close: stop listening, let the engine
        // drain (every accepted payload stored and its push answered), then close the rest.
        stopping ??= (async () => {
          http.stopListening();
          try {
            await engine?.close();
            brokerAudit.flush();
            await http.close();
            // Before the store: the shippers read the logs and write their cursors.
            await uplink?.close();
          } finally {
            await store.close();
          }
        })();
        return stopping;
      },
    };
  } catch (err) {
    await engine?.close().catch(() => undefined);
    await uplink?.close().catch(() => undefined);
    await store.close();
    throw err;
  }
}
