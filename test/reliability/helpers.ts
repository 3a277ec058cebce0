/**
 * The whole service on a loopback port, wired as src/server.ts does (store, registry, script engine with
 * a real worker, HTTP), with the logs kept in memory; plus a raw HTTP/1.1 client (node:http with a
 * keep-alive agent) that sends paths exactly as given: fetch() would normalise `..`, backslashes and
 * percent-encoding away, which is what these tests need to send.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import { startHttpServer } from '../../src/http/server.js';
import type { ModelRegistry } from '../../src/models/registry.js';
import { ScriptEngine } from '../../src/scripts/engine.js';
import { openData } from '../../src/server.js';

export const SECRET = 'reliability-secret-1';
export const ADMIN = 'reliability-admin-token-0123456789';

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export interface Service {
  base: string;
  port: number;
  dir: string;
  config: Config;
  registry: ModelRegistry;
  engine: ScriptEngine | undefined;
  routes: ReadonlyArray<{ method: string; path: string }>;
  logs: LogLine[];
  close(): Promise<void>;
}

export interface ServiceOptions {
  /** Extra ini lines per section, e.g. { 'plugin.http_server': ['max_connections = 3'] }. */
  ini?: Record<string, string[]>;
  engine?: boolean;
  logLevel?: string;
}

export async function startService(options: ServiceOptions = {}): Promise<Service> {
  const dir = await mkdtemp(join(tmpdir(), 'edc-rel-'));
  const file = join(dir, 'test.ini');
  const sections: Record<string, string[]> = {
    main: [`data_dir = ${join(dir, 'data')}`, `dataschema_secrets = ${SECRET}`, `admin_token = ${ADMIN}`, 'log_level = silent'],
    'plugin.http_server': ['host = 127.0.0.1', 'port = 0'],
    store: ['sync = none'],
    scripts: ['workers = 1', 'timeout_ms = 50', 'hard_timeout_ms = 1000'],
  };
  for (const [section, lines] of Object.entries(options.ini ?? {})) (sections[section] ??= []).push(...lines);
  const text = Object.entries(sections).map(([s, lines]) => `[${s}]\n${lines.join('\n')}\n`).join('');
  await writeFile(file, text);
  const { config } = await loadConfig({ file, env: {} });
  const logs: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line.length > 0) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const logger = pino({ level: options.logLevel ?? 'debug' }, sink);
  const { store, registry } = await openData(config);
  let engine: ScriptEngine | undefined;
  if (options.engine !== false) {
    engine = await ScriptEngine.open({ dataDir: config.main.dataDir, config: config.scripts, registry, log: logger.child({ module: 'scripts' }) });
  }
  const server = await startHttpServer({ config, registry, engine, logger: logger.child({ module: 'http' }) });
  return {
    base: `http://127.0.0.1:${server.port}`,
    port: server.port,
    dir,
    config,
    registry,
    engine,
    routes: server.routes,
    logs,
    async close() {
      server.close();
      await engine?.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

export interface RawRequest {
  method?: string;
  path: string;
  headers?: Record<string, string | string[]>;
  body?: string | Buffer;
  /** Default 127.0.0.1; 127.0.0.2 etc. reach the same server from another loopback address. */
  localAddress?: string;
  agent?: http.Agent | false;
  timeoutMs?: number;
}

export const keepAlive = new http.Agent({ keepAlive: true, maxSockets: 8 });

/** One request; the path is sent byte for byte (latin1), nothing is normalised. */
export async function raw(port: number, r: RawRequest): Promise<RawAnswer> {
  try {
    return await rawOnce(port, r);
  } catch (err) {
    // A kept-alive socket the server closed meanwhile: node's documented race; retry on a new socket.
    if ((err as { reused?: boolean }).reused === true) return rawOnce(port, r);
    throw err;
  }
}

function rawOnce(port: number, r: RawRequest): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method: r.method ?? 'GET',
        path: r.path,
        // node sends a DELETE or OPTIONS body without framing unless the length is given
        headers: r.body === undefined ? r.headers : { 'Content-Length': String(Buffer.byteLength(r.body)), ...r.headers },
        localAddress: r.localAddress,
        agent: r.agent ?? (r.localAddress === undefined ? keepAlive : false),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.setTimeout(r.timeoutMs ?? 15_000, () => req.destroy(new Error(`timeout: ${r.method ?? 'GET'} ${r.path.slice(0, 200)}`)));
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (req.reusedSocket && err.code === 'ECONNRESET') Object.assign(err, { reused: true });
      reject(err);
    });
    req.end(r.body);
  });
}

export function bearer(token: string): Record<string, string> {
  return { Authorization: `Bearer ${token}` };
}

/** A JSON call with the admin token. */
export async function admin(port: number, method: string, path: string, body?: unknown): Promise<RawAnswer> {
  return raw(port, {
    method,
    path,
    headers: { ...bearer(ADMIN), 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
}

/** A published model with the given FLOAT attributes; returns its uuid. */
export async function publishedModel(port: number, name: string, attributes: string[]): Promise<string> {
  const created = await admin(port, 'POST', '/api/v1/schema/create', { name, description: '' });
  if (created.status !== 200) throw new Error(created.text);
  const uuid = created.body.data.uuid as string;
  for (const attr of attributes) {
    const r = await admin(port, 'POST', '/api/v1/schema/properties/create', { schemaId: uuid, name: attr, type: 'FLOAT' });
    if (r.status !== 200) throw new Error(r.text);
  }
  const p = await admin(port, 'POST', `/api/v1/schema/publish?uuid=${uuid}`);
  if (p.status !== 200) throw new Error(p.text);
  return uuid;
}

/** Looks like a stack trace or an internal path leaking into an answer. */
export const STACK_LIKE = /\n\s+at |\bat [\w.<>]+ \(|node:internal|node_modules|\.ts:\d+|\.js:\d+:\d+|\/src\/|\/dist\//;
