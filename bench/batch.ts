/**
 * queryLastDataBatch with 100 models against queryLastData with one (contract 12: the batch must keep at
 * least 50% of the single-model requests/s). The service runs in this process; the load comes from a
 * child process: wrk when it is installed, else node:http (keep-alive, `--connections` requests in flight),
 * so both share the machine the same way in both runs.
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
import { installed, runWrkAsync } from './targets.js';

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

interface Measured {
  rps: number;
  p99Ms: number;
  errors: number;
  /** CPU of this process (the service) per answered request. */
  cpuUsPerRequest: number;
}

const useWrk = installed('wrk');

/** The load, by wrk on core 1 when it is installed (it spends far less per request than a Node client), else by a node:http child. */
async function runLoad(url: string): Promise<Measured> {
  const cpu = process.cpuUsage();
  const seconds = Number(args.seconds);
  const load = useWrk
    ? await runWrkAsync(url, Number(args.connections), seconds).then((l) => ({ rps: l.requestsPerS, p99Ms: l.p99Ms, errors: l.errors }))
    : await runNodeLoad(url);
  const used = process.cpuUsage(cpu);
  return { ...load, cpuUsPerRequest: (used.user + used.system) / Math.max(1, load.rps * seconds) };
}

function runNodeLoad(url: string): Promise<{ rps: number; p99Ms: number; errors: number }> {
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
      { name: 'service CPU per request, queryLastData', value: single.cpuUsPerRequest, unit: 'µs', better: 'lower' },
      { name: 'service CPU per request, queryLastDataBatch', value: batch.cpuUsPerRequest, unit: 'µs', better: 'lower', baseline: single.cpuUsPerRequest },
      {
        name: 'service CPU per request, queryLastDataBatch, models written 10/s (writes included)',
        value: batchWrites.cpuUsPerRequest,
        unit: 'µs',
        better: 'lower',
        baseline: single.cpuUsPerRequest,
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
        `${MODELS} published models of the 6-attribute sensor record, one record each; ${args.connections} connections for`,
        `${args.seconds} s ${useWrk ? 'from wrk (1 thread, pinned to core 1 where taskset is present)' : 'from a node:http keep-alive child process (wrk is not installed)'}, the service in the bench`,
        'process. Service CPU per request is this process\'s user + system time over the requests answered.',
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
