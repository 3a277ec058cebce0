/**
 * queryLastDataBatch with 100 models against queryLastData with one (contract 12: the batch must keep at
 * least 50% of the single-model requests/s). The service runs in this process; the load comes from a
 * child process (node:http, keep-alive, `--connections` requests in flight) so both share the machine
 * the same way in both runs. wrk is not required.
 * Usage: npm run bench:batch [-- --seconds 5 --connections 32]
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { FIELDS, sensorRecord } from './records.js';
import { BENCH_SECRET, openBenchData } from './bench-service.js';
import { printTable, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    connections: { type: 'string', default: '32' },
    load: { type: 'string' },
  },
});
const MODELS = 100;

/** Child process: GET `url` for `seconds` with `connections` in flight; prints `{rps, p99Ms, errors}`. */
async function load(url: string, seconds: number, connections: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const latencies: number[] = [];
  let errors = 0;
  const end = performance.now() + seconds * 1000;
  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const t = performance.now();
      http
        .get(url, { agent }, (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode === 200) latencies.push(performance.now() - t);
            else errors++;
            resolve();
          });
        })
        .on('error', () => {
          errors++;
          resolve();
        });
    });
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (performance.now() < end) await one();
    }),
  );
  latencies.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ rps: latencies.length / seconds, p99Ms: latencies[Math.floor(latencies.length * 0.99)] ?? 0, errors }) + '\n');
  agent.destroy();
}

function runLoad(url: string): Promise<{ rps: number; p99Ms: number; errors: number }> {
  const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--load', url, '--seconds', args.seconds, '--connections', args.connections], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  return new Promise((resolve, reject) => child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`load exited ${code}`)))));
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-batch-'));
  const data = await openBenchData(dir);
  const { registry } = data;
  const uuids: string[] = [];
  for (let m = 0; m < MODELS; m++) {
    const model = await registry.create({ name: `tile ${m}` });
    for (const name of FIELDS) {
      const type = name === 'device_id' || name === 'status' ? 'STRING' : name === 'battery' ? 'INTEGER' : 'FLOAT';
      await registry.createAttribute({ schemaId: model.uuid, name, label: name, type });
    }
    await registry.publish(model.uuid);
    registry.log(model.uuid).save(sensorRecord(m));
    uuids.push(model.uuid);
  }
  const server = await data.serve();
  const base = `http://127.0.0.1:${server.port}/api/v1/datacenter`;
  try {
    const single = await runLoad(`${base}/queryLastData?uuid=${uuids[0]}&secrets=${BENCH_SECRET}`);
    const batchUrl = `${base}/queryLastDataBatch?uuid=${uuids.join(',')}&secrets=${BENCH_SECRET}`;
    const batch = await runLoad(batchUrl);
    // Every model written 10 times a second: the cached answer is rebuilt about 1,000 times a second.
    let written = MODELS;
    const writer = setInterval(() => uuids.forEach((u) => registry.log(u).save(sensorRecord(written++))), 100);
    const batchWrites = await runLoad(batchUrl);
    clearInterval(writer);
    const figures: Figure[] = [
      { name: 'queryLastData, 1 model', value: single.rps, unit: 'req/s', better: 'higher' },
      { name: 'queryLastDataBatch, 100 models', value: batch.rps, unit: 'req/s', better: 'higher', baseline: single.rps, target: '>= 50% of 1 model' },
      {
        name: 'queryLastDataBatch, 100 models each written 10/s',
        value: batchWrites.rps,
        unit: 'req/s',
        better: 'higher',
        baseline: single.rps,
        target: '>= 50% of 1 model',
      },
      { name: 'queryLastData p99', value: single.p99Ms, unit: 'ms', better: 'lower' },
      { name: 'queryLastDataBatch p99', value: batch.p99Ms, unit: 'ms', better: 'lower' },
      { name: 'errors', value: single.errors + batch.errors + batchWrites.errors, unit: '', better: 'lower' },
    ];
    printTable('queryLastDataBatch vs queryLastData', figures);
    await writeResults(
      'batch',
      'Latest record of 100 models in one call (`npm run bench:batch`)',
      'queryLastData, 1 model',
      figures,
      [
        `${MODELS} published models of the 6-attribute sensor record, one record each; ${args.connections} requests in`,
        `flight for ${args.seconds} s from a child process (node:http keep-alive), the service in the bench process.`,
        'The ratio column is batch / single requests/s (target >= 0.5). A batch answer is kept while none of its',
        'models changes; the run with writes rebuilds it about 1,000 times a second (the JSON of each record is',
        'still kept until its model changes). The machine was shared with other work: figures move by +-30%.',
      ].join('\n'),
    );
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (args.load !== undefined) await load(args.load, Number(args.seconds), Number(args.connections));
else await main();
