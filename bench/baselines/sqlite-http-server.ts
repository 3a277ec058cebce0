import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SqliteBaseline, type Row } from './sqlite-store.js';

/**
 * The reference server built the common way: node:http + better-sqlite3, the same two query
 * endpoints and envelope, OFFSET paging and max(id) latest as RHILEX does. For benchmarks only.
 */
export interface SqliteHttpServer {
  port: number;
  db: SqliteBaseline;
  close(): Promise<void>;
}

function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}

function formatRecord(row: Row, latest: boolean): Row {
  const iso = isoSeconds(row.create_at as number);
  return { ...row, create_at: latest ? iso.slice(0, 19).replace('T', ' ') : iso };
}

export async function startSqliteHttpServer(options: {
  file: string;
  modelId: string;
  secret: string;
  fields: readonly string[];
}): Promise<SqliteHttpServer> {
  const db = new SqliteBaseline({ file: options.file, synchronous: 'NORMAL', fields: options.fields });
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (url.searchParams.get('secrets') !== options.secret) return send(401, { code: 401, msg: 'missing or wrong secret', data: null });
    if (url.searchParams.get('uuid') !== options.modelId) return send(404, { code: 404, msg: 'unknown model', data: null });
    if (url.pathname === '/api/v1/datacenter/queryLastData') {
      const row = db.latest();
      return send(200, { code: 200, msg: 'Success', data: row ? formatRecord(row, true) : {} });
    }
    if (url.pathname === '/api/v1/datacenter/queryDataList') {
      const current = Number(url.searchParams.get('current') ?? '1');
      const size = Number(url.searchParams.get('size') ?? '25');
      const { total, records } = db.page(current, size);
      return send(200, { code: 200, msg: 'Success', data: { current, size, total, records: records.map((r) => formatRecord(r, false)) } });
    }
    send(404, { code: 404, msg: 'no such route', data: null });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    db,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          db.close();
          resolve();
        });
      }),
  };
}
