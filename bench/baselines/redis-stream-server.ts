import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RespClient, type Reply } from './resp-client.js';
import type { Row } from './sqlite-store.js';

/**
 * The Redis streams baseline: a small node:http front over one Redis 7 stream per model, the same two
 * query endpoints and envelope as the other references, and a write endpoint. A record is one XADD with
 * an automatic id (its milliseconds are `create_at`); the latest is XREVRANGE + - COUNT 1, a page of
 * the newest is XLEN + XREVRANGE COUNT size. Streams page by id (the client passes the last id it saw),
 * not by offset, so only page 1 is served. For benchmarks only.
 */
export interface RedisStreamServer {
  port: number;
  /** Appends rows, pipelined on the front's one connection. */
  add(rows: readonly Row[]): Promise<void>;
  close(): Promise<void>;
}

const ADD_CHUNK = 1000;

function isoSeconds(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19) + 'Z';
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export async function startRedisStreamServer(options: {
  redisPort: number;
  modelId: string;
  secret: string;
  fields: readonly string[];
  /** Fields answered as numbers (Redis keeps every value as a string). */
  numeric: ReadonlySet<string>;
}): Promise<RedisStreamServer> {
  const redis = await RespClient.connect(options.redisPort);
  const key = `model:${options.modelId}`;

  const xadd = (row: Row) => {
    const command: (string | number)[] = ['XADD', key, '*'];
    for (const field of options.fields) command.push(field, row[field] as string | number);
    return command;
  };
  const add = async (rows: readonly Row[]) => {
    for (let i = 0; i < rows.length; i += ADD_CHUNK) await redis.pipeline(rows.slice(i, i + ADD_CHUNK).map(xadd));
  };
  const recordOf = (entry: Reply, latest: boolean): Row => {
    const [id, values] = entry as [string, string[]];
    const ms = Number(id.slice(0, id.indexOf('-')));
    const iso = isoSeconds(ms);
    const row: Row = { create_at: latest ? iso.slice(0, 19).replace('T', ' ') : iso };
    for (let i = 0; i < values.length; i += 2) row[values[i]] = options.numeric.has(values[i]) ? Number(values[i + 1]) : values[i + 1];
    return row;
  };

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fail = (err: unknown) => send(500, { code: 500, msg: (err as Error).message, data: null });
    if (url.searchParams.get('secrets') !== options.secret) return send(401, { code: 401, msg: 'missing or wrong secret', data: null });
    if (url.searchParams.get('uuid') !== options.modelId) return send(404, { code: 404, msg: 'unknown model', data: null });
    if (url.pathname === '/write' && req.method === 'POST') {
      void readBody(req)
        .then(async (text) => {
          const rows = text
            .split('\n')
            .filter((line) => line.trim() !== '')
            .map((line) => JSON.parse(line) as Row);
          await redis.pipeline(rows.map(xadd));
          send(200, { code: 200, msg: 'Success', data: { accepted: rows.length } });
        })
        .catch(fail);
      return;
    }
    if (url.pathname === '/api/v1/datacenter/queryLastData') {
      void redis
        .command('XREVRANGE', key, '+', '-', 'COUNT', 1)
        .then((entries) => {
          const list = entries as Reply[];
          send(200, { code: 200, msg: 'Success', data: list.length ? recordOf(list[0], true) : {} });
        })
        .catch(fail);
      return;
    }
    if (url.pathname === '/api/v1/datacenter/queryDataList') {
      const current = Number(url.searchParams.get('current') ?? '1');
      const size = Number(url.searchParams.get('size') ?? '25');
      if (current !== 1) return send(400, { code: 400, msg: 'streams page by id: only current=1 is served', data: null });
      void redis
        .pipeline([
          ['XLEN', key],
          ['XREVRANGE', key, '+', '-', 'COUNT', size],
        ])
        .then(([total, entries]) => {
          const records = (entries as Reply[]).map((e) => recordOf(e, false));
          send(200, { code: 200, msg: 'Success', data: { current, size, total, records } });
        })
        .catch(fail);
      return;
    }
    send(404, { code: 404, msg: 'no such route', data: null });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    add,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          redis.close();
          resolve();
        });
      }),
  };
}
