/**
 * The service in the bench process, as the HTTP benchmarks use it: config from the environment (a temp
 * data dir, the bench credentials, a free loopback port), the store and registry first so the bench can
 * fill models, then an idle script engine (the HTTP layer always has one, as in production) and HTTP.
 */
import { pino } from 'pino';
import { loadConfig } from '../src/config/index.js';
import type { Config } from '../src/config/types.js';
import { startHttpServer } from '../src/http/server.js';
import { ModelTransfers } from '../src/models/backup.js';
import type { ModelRegistry } from '../src/models/registry.js';
import { ScriptEngine } from '../src/scripts/engine.js';
import { openData } from '../src/server.js';
import type { Store } from '../src/store/index.js';

export const BENCH_SECRET = 'bench-secret';

export interface BenchData {
  config: Config;
  store: Store;
  registry: ModelRegistry;
  /** Starts the script engine and HTTP on the data opened; `close` stops all three. */
  serve(): Promise<{ port: number; close(): Promise<void> }>;
}

export async function openBenchData(dir: string, extraEnv: Record<string, string> = {}): Promise<BenchData> {
  const { config } = await loadConfig({
    env: {
      EDGE_DATACENTER_MAIN_DATA_DIR: dir,
      EDGE_DATACENTER_MAIN_DATASCHEMA_SECRETS: BENCH_SECRET,
      EDGE_DATACENTER_MAIN_ADMIN_TOKEN: 'bench-admin',
      EDGE_DATACENTER_HTTP_HOST: '127.0.0.1',
      EDGE_DATACENTER_HTTP_PORT: '0',
      // `EDGE_DATACENTER_HTTP_TRANSPORT=node npm run bench:http` measures the node:http transport.
      ...(process.env.EDGE_DATACENTER_HTTP_TRANSPORT === undefined ? {} : { EDGE_DATACENTER_HTTP_TRANSPORT: process.env.EDGE_DATACENTER_HTTP_TRANSPORT }),
      ...extraEnv,
    },
  });
  const { store, registry } = await openData(config);
  return {
    config,
    store,
    registry,
    async serve() {
      const logger = pino({ level: 'silent' });
      const engine = await ScriptEngine.open({ dataDir: config.main.dataDir, config: config.scripts, registry, log: logger });
      const http = await startHttpServer({ config, registry, transfers: new ModelTransfers(store, registry), engine, logger });
      return {
        port: http.port,
        async close() {
          await http.close();
          await engine.close();
          await store.close();
        },
      };
    },
  };
}
