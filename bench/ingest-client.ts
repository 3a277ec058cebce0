/**
 * The load generator of bench/ingest.ts, a process of its own pinned to core 1: POSTs the sensor records
 * in batches (NDJSON or InfluxDB line protocol) over `connections` keep-alive connections until all are
 * sent, and prints `{seconds, records, failed, p99Ms}` as one JSON line. The bodies are built before the
 * clock starts, so the figure is the server's.
 * Usage: node ingest-client.js '<job JSON>'
 */
import { Agent } from 'node:http';
import { postBody } from './http-post.js';
import { lineOf } from './peers/influx.js';
import { sensorRecord } from './records.js';

export interface IngestJob {
  url: string;
  headers: Record<string, string>;
  format: 'ndjson' | 'line';
  /** Index of the first record (record i has the timestamp t0Ms + i in line protocol). */
  first: number;
  records: number;
  batch: number;
  connections: number;
  t0Ms: number;
}

export interface IngestResult {
  seconds: number;
  records: number;
  /** Records the server refused (ours: a rule failed; others: a non-2xx answer). */
  failed: number;
  p99Ms: number;
}

function body(job: IngestJob, from: number, to: number): Buffer {
  const lines: string[] = [];
  for (let i = from; i < to; i++) lines.push(job.format === 'line' ? lineOf(sensorRecord(i), job.t0Ms + i) : JSON.stringify(sensorRecord(i)));
  return Buffer.from(lines.join('\n'));
}

async function run(job: IngestJob): Promise<IngestResult> {
  const bodies: Array<{ records: number; data: Buffer }> = [];
  for (let i = job.first; i < job.first + job.records; i += job.batch) {
    const to = Math.min(job.first + job.records, i + job.batch);
    bodies.push({ records: to - i, data: body(job, i, to) });
  }
  const agent = new Agent({ keepAlive: true, maxSockets: job.connections });
  const url = new URL(job.url);
  const target = { host: url.hostname, port: url.port, path: url.pathname + url.search };
  const post = (data: Buffer) => postBody(agent, target, job.headers, data);
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: job.connections }, async () => {
      while (next < bodies.length) {
        const { records, data } = bodies[next++];
        const sent = performance.now();
        const { status, text } = await post(data);
        latencies.push(performance.now() - sent);
        if (status === 503) throw new Error(`the server refused a batch as too busy (503): ${text}`);
        if (status < 200 || status > 299) failed += records;
        else if (text.startsWith('{')) failed += (JSON.parse(text) as { data?: { failed?: number } }).data?.failed ?? 0;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort((a, b) => a - b);
  return { seconds, records: job.records, failed, p99Ms: latencies[Math.min(latencies.length - 1, Math.ceil(latencies.length * 0.99) - 1)] };
}

process.stdout.write(JSON.stringify(await run(JSON.parse(process.argv[2]) as IngestJob)) + '\n');
