/**
 * HTTP clients for tests against a service from ./service.ts. `call` (fetch) is the everyday one and
 * sends the admin token unless told otherwise. `raw` (node:http with a keep-alive agent) sends the
 * path byte for byte: fetch() would normalise `..`, backslashes and percent-encoding away, which is
 * what the robustness tests need to send, and it can choose the local address.
 */
import http from 'node:http';
import { ADMIN, SECRET } from './service.js';

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
