/**
 * One server under test for bench/http.ts and bench/ingest.ts, in its own process: ours (the real
 * service), the node:http + better-sqlite3 reference, the Redis streams front (`--redis-port`), each
 * loaded with the same records, or the uWS ceiling (`--body`: a fixed answer for every GET). Prints
 * `DIR <data dir>` then `READY <port> <uuid> <secret>` when it serves, appends `--writes` records per
 * second while it runs, exits on SIGTERM.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRedisStreamServer } from './baselines/redis-stream-server.js';
import { startSqliteHttpServer } from './baselines/sqlite-http-server.js';
import type { Row } from './baselines/sqlite-store.js';
import { FIELDS, sensorRecord } from './records.js';
import { BENCH_SECRET, openBenchData } from './bench-service.js';

const WRITE_TICK_MS = 10;

const { values: args } = parseArgs({
  options: {
    impl: { type: 'string' },
    records: { type: 'string', default: '1000000' },
    writes: { type: 'string', default: '0' },
    'redis-port': { type: 'string' },
    /** base64 of `{headers, body}`: the ceiling's one answer. */
    body: { type: 'string' },
  },
});
const records = Number(args.records);
const writesPerTick = Math.round((Number(args.writes) * WRITE_TICK_MS) / 1000);

function progress(message: string): void {
  process.stderr.write(`[http-target ${args.impl}] ${message}\n`);
}

interface Running {
  port: number;
  uuid: string;
  write(i: number): void;
  close(): Promise<void>;
}

async function startOurs(dir: string): Promise<Running> {
  const data = await openBenchData(dir);
  const { registry } = data;
  const model = await registry.create({ name: 'bench' });
  for (const name of FIELDS) {
    const type = name === 'device_id' || name === 'status' ? 'STRING' : name === 'battery' ? 'INTEGER' : 'FLOAT';
    await registry.createAttribute({ schemaId: model.uuid, name, label: name, type });
  }
  await registry.publish(model.uuid);
  const log = registry.log(model.uuid);
  for (let i = 0; i < records; i++) {
    log.save(sensorRecord(i));
    if (i % 100_000 === 0) await log.durable();
  }
  await log.durable();
  const http = await data.serve();
  return {
    port: http.port,
    uuid: model.uuid,
    write: (i) => log.save(sensorRecord(i)),
    close: () => http.close(),
  };
}

async function startSqlite(dir: string): Promise<Running> {
  const uuid = 'SCHEMABENCH2345';
  const server = await startSqliteHttpServer({ file: join(dir, 'bench.db'), modelId: uuid, secret: BENCH_SECRET, fields: FIELDS });
  const batch: Row[] = [];
  for (let i = 0; i < records; i++) {
    batch.push(sensorRecord(i));
    if (batch.length === 10_000) server.db.insertMany(batch.splice(0));
  }
  server.db.insertMany(batch);
  return { port: server.port, uuid, write: (i) => server.db.insert(sensorRecord(i)), close: () => server.close() };
}

async function startRedisFront(): Promise<Running> {
  const uuid = 'SCHEMABENCH2345';
  const numeric = new Set(FIELDS.filter((f) => f !== 'device_id' && f !== 'status'));
  const redisPort = Number(args['redis-port']);
  const server = await startRedisStreamServer({ redisPort, modelId: uuid, secret: BENCH_SECRET, fields: FIELDS, numeric });
  for (let i = 0; i < records; i += 10_000) {
    await server.add(Array.from({ length: Math.min(10_000, records - i) }, (_, n) => sensorRecord(i + n)));
  }
  return { port: server.port, uuid, write: (i) => void server.add([sensorRecord(i)]), close: () => server.close() };
}

/** uWS answering every GET with one fixed answer: what a uWS server can do on this core at best. */
async function startCeiling(): Promise<Running> {
  const { default: uWS, listenExclusive } = await import('../src/http/transport/uws.js');
  const answer = JSON.parse(Buffer.from(args.body!, 'base64').toString('utf8')) as { headers: Record<string, string>; body: string };
  const headers = Object.entries(answer.headers);
  const app = uWS.App().get('/*', (res) => {
    res.cork(() => {
      for (const [name, value] of headers) res.writeHeader(name, value);
      res.end(answer.body);
    });
  });
  const socket = await new Promise<unknown>((resolve, reject) =>
    listenExclusive(app, '127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('ceiling: cannot listen')))),
  );
  return {
    port: uWS.us_socket_local_port(socket as never),
    uuid: 'CEILING',
    write: () => undefined,
    close: async () => void app.close(),
  };
}

function start(dir: string): Promise<Running> {
  switch (args.impl) {
    case 'ours':
      return startOurs(dir);
    case 'sqlite':
      return startSqlite(dir);
    case 'redis':
      return startRedisFront();
    case 'ceiling':
      return startCeiling();
    default:
      throw new Error(`--impl must be ours, sqlite, redis or ceiling, got ${args.impl}`);
  }
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), `bench-http-${args.impl}-`));
  progress(`loading ${records.toLocaleString()} records`);
  const running = await start(dir);
  let written = records;
  const writer =
    writesPerTick > 0
      ? setInterval(() => {
          for (let n = 0; n < writesPerTick; n++) running.write(written++);
        }, WRITE_TICK_MS)
      : undefined;
  process.once('SIGTERM', () => {
    clearInterval(writer);
    void running
      .close()
      .then(() => rm(dir, { recursive: true, force: true }))
      .then(() => process.exit(0));
  });
  process.stdout.write(`DIR ${dir}\n`);
  process.stdout.write(`READY ${running.port} ${running.uuid} ${BENCH_SECRET}\n`);
}

await main();
