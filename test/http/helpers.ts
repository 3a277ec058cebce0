/**
 * Starts the real HTTP server on a free loopback port over a real store and registry in a temp dir.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config/index.js';
import type { Config } from '../../src/config/types.js';
import { startHttpServer } from '../../src/http/server.js';
import type { ModelRegistry } from '../../src/models/registry.js';
import { openData } from '../../src/server.js';

export const SECRET = 's3cret-one';
export const SECRET_2 = 'second;secret&+/';
export const ADMIN = 'admin-token-0123456789abcdef';

export interface TestServer {
  base: string;
  dir: string;
  config: Config;
  registry: ModelRegistry;
  close(): Promise<void>;
}

export async function testConfig(extra = ''): Promise<{ dir: string; file: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'edc-http-'));
  const file = join(dir, 'test.ini');
  await writeFile(
    file,
    [
      '[main]',
      `data_dir = ${join(dir, 'data')}`,
      `dataschema_secrets = ${SECRET}`,
      `dataschema_secrets = "${SECRET_2}"`,
      `admin_token = ${ADMIN}`,
      'log_level = silent',
      '[plugin.http_server]',
      'host = 127.0.0.1',
      'port = 0',
      'body_bytes_max = 4096',
      '[store]',
      'sync = none',
      '[scripts]',
      'workers = 1',
      extra,
      '',
    ].join('\n'),
  );
  return { dir, file };
}

export async function startTestServer(): Promise<TestServer> {
  const { dir, file } = await testConfig();
  const { config } = await loadConfig({ file, env: {} });
  const { store, registry } = await openData(config);
  const http = await startHttpServer({ config, registry, logger: pino({ level: process.env.EDC_TEST_LOG ?? 'silent' }) });
  return {
    base: `http://127.0.0.1:${http.port}`,
    dir,
    config,
    registry,
    async close() {
      await http.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface Answer {
  status: number;
  headers: Headers;
  body: any;
  text: string;
}

export async function call(
  base: string,
  path: string,
  init: { method?: string; body?: unknown; token?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token !== null) headers.Authorization = `Bearer ${init.token ?? ADMIN}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const res = await fetch(base + path, { method: init.method ?? 'GET', headers, body });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

/** GET with the data secret in `secrets` (no admin token). */
export function query(base: string, path: string): Promise<Answer> {
  const sep = path.includes('?') ? '&' : '?';
  return call(base, `${path}${sep}secrets=${encodeURIComponent(SECRET)}`, { token: null });
}

/** Minimal RFC 4180 parser for checking exports. */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"') {
        if (text[i + 1] === '"') {
          field += '"';
          i++;
        } else quoted = false;
      } else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i++;
    } else field += c;
  }
  if (field.length > 0 || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}
