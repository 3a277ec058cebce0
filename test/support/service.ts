/**
 * The one way tests start the service in this process: a temp ini file, then src/server.ts
 * `startService` (store, registry, a script engine with one real worker, HTTP on a free loopback port),
 * with the log lines kept in memory. Tests of the real CLI start it as a child process instead
 * (test/reliability/support/service.mjs).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import type { ModelRegistry } from '../../src/models/registry.js';
import { type RunningService, startService as startRealService } from '../../src/server.js';
import { TEST_TRANSPORT } from './transport.js';

export const SECRET = 's3cret-one';
/** A second data secret with characters that must be percent-encoded in a URL. */
export const SECRET_2 = 'second;secret&+/';
export const ADMIN = 'admin-token-0123456789abcdef';

/**
 * Lua limits for tests that run endless rules: `ini: { scripts: SHORT_LUA_LIMITS }`. An endless rule ends at
 * the soft limit within half a second; the hard limit (a task's whole run) is far beyond what a busy machine
 * stretches a run of the other rules to, so only an endless rule can reach a limit.
 */
export const SHORT_LUA_LIMITS = ['timeout_ms = 500', 'hard_timeout_ms = 20000'];

export interface ServiceOptions {
  /** Extra ini lines per section, e.g. { 'plugin.http_server': ['max_connections = 3'] }. */
  ini?: Record<string, string[]>;
  /** The data secrets, first one first; default SECRET and SECRET_2. */
  secrets?: readonly string[];
  /** Default `debug`, so tests can look for any line; the lines stay in `logs`. */
  logLevel?: string;
}

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface TestService {
  base: string;
  port: number;
  /** The temp directory holding the ini file and the data; removed by close(). */
  dir: string;
  config: Config;
  registry: ModelRegistry;
  routes: RunningService['routes'];
  logs: LogLine[];
  close(): Promise<void>;
}

/**
 * Writes `<new temp dir>/test.ini`: data dir inside, the test credentials, loopback port 0, the test
 * transport (test/support/transport.ts), sync none, one worker.
 */
export async function writeTestConfig(options: Pick<ServiceOptions, 'ini' | 'secrets'> = {}): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'edc-test-'));
  const file = join(dir, 'test.ini');
  const secrets = options.secrets ?? [SECRET, SECRET_2];
  const sections: Record<string, string[]> = {
    main: [
      `data_dir = ${join(dir, 'data')}`,
      ...secrets.map((s) => `dataschema_secrets = ${JSON.stringify(s)}`),
      `admin_token = ${ADMIN}`,
      'log_level = silent',
    ],
    'plugin.http_server': ['host = 127.0.0.1', 'port = 0', `transport = ${TEST_TRANSPORT}`],
    store: ['sync = none'],
    scripts: ['workers = 1'],
  };
  for (const [section, lines] of Object.entries(options.ini ?? {})) (sections[section] ??= []).push(...lines);
  await writeFile(file, Object.entries(sections).map(([s, lines]) => `[${s}]\n${lines.join('\n')}\n`).join(''));
  return { dir, file };
}

export async function startService(options: ServiceOptions = {}): Promise<TestService> {
  const { dir, file } = await writeTestConfig(options);
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line.length > 0) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  try {
    const { config } = await loadConfig({ file, env: {} });
    const service = await startRealService(config, pino({ level: options.logLevel ?? 'debug' }, sink));
    return {
      base: `http://127.0.0.1:${service.port}`,
      port: service.port,
      dir,
      config,
      registry: service.registry,
      routes: service.routes,
      logs,
      async close() {
        await service.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}
