/**
 * Live reads (contract 11): `--subscribers` SSE clients of one model while a writer stores `--rate`
 * records/s, each record stamped with its write time. Reports the delivery latency (write to client
 * parse, same clock), records received per subscriber, gaps, and how much the writer slowed: the mean
 * time of a save() and the records/s actually written, against the same run without subscribers.
 * The service and the writer run in this process; the subscribers in a child process.
 * Usage: npm run bench:live [-- --subscribers 1000 --rate 1000 --seconds 10]
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BENCH_SECRET, openBenchData } from './bench-service.js';
import { printTable, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    subscribers: { type: 'string', default: '1000' },
    rate: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '10' },
    subscribe: { type: 'string' },
  },
});
const SUBSCRIBERS = Number(args.subscribers);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const TICK_MS = 10;

/** Child: opens the streams, prints READY, then on stdin EOF prints the latency histogram and counts. */
async function subscribe(url: string, n: number): Promise<void> {
  const hist = new Float64Array(10_001); // 1 ms buckets, the last one 10 s and more
  let records = 0;
  let gaps = 0;
  let open = 0;
  const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  for (let i = 0; i < n; i++) {
    http.get(url, { agent }, (res) => {
      open++;
      if (open === n) process.stdout.write('READY\n');
      res.setEncoding('utf8');
      let tail = '';
      res.on('data', (chunk: string) => {
        // Complete events only (a chunk may end inside one). The first record of a delivery waited longest:
        // its latency is taken for every record of it, so the client does not spend its CPU parsing JSON.
        const text = tail + chunk;
        const cut = text.lastIndexOf('\n\n') + 2;
        tail = text.slice(cut);
        if (cut < 2) return;
        const now = Date.now();
        let n = 0;
        for (let at = text.indexOf('event: '); at >= 0 && at < cut; at = text.indexOf('event: ', at + 7)) {
          if (text.startsWith('event: gap', at)) gaps++;
          else n++;
        }
        records += n;
        const m = /"sent_ms":([0-9.]+)/.exec(text);
        if (m && n > 0) hist[Math.min(10_000, Math.max(0, Math.floor(now - Number(m[1]))))] += n;
      });
    });
  }
  process.stdin.resume();
  process.stdin.on('end', () => {
    process.stdout.write(JSON.stringify({ hist: Array.from(hist), records, gaps }) + '\n');
    process.exit(0);
  });
}

function percentile(hist: number[], p: number): number {
  const total = hist.reduce((a, b) => a + b, 0);
  let seen = 0;
  for (let ms = 0; ms < hist.length; ms++) {
    seen += hist[ms];
    if (seen >= total * p) return ms + 1;
  }
  return hist.length;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-live-'));
  const data = await openBenchData(dir, { EDGE_DATACENTER_HTTP_MAX_CONNECTIONS: String(SUBSCRIBERS + 100) });
  const { registry } = data;
  const model = await registry.create({ name: 'live' });
  await registry.createAttribute({ schemaId: model.uuid, name: 'seq', label: 'seq', type: 'INTEGER' });
  await registry.createAttribute({ schemaId: model.uuid, name: 'sent_ms', label: 'sent_ms', type: 'FLOAT' });
  await registry.publish(model.uuid);
  const log = registry.log(model.uuid);
  const server = await data.serve();

  /** Writes RATE records/s for `seconds`: returns the mean save() time (µs) and the records/s written. */
  const write = async (seconds: number): Promise<{ saveUs: number; rate: number }> => {
    let n = 0;
    let busyMs = 0;
    const t0 = performance.now();
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const due = Math.floor(((performance.now() - t0) / 1000) * RATE) - n;
        const t = performance.now();
        for (let i = 0; i < due; i++) log.save({ seq: n++, sent_ms: Date.now() });
        busyMs += performance.now() - t;
        if (performance.now() - t0 >= seconds * 1000) {
          clearInterval(timer);
          resolve();
        }
      }, TICK_MS);
    });
    return { saveUs: (busyMs * 1000) / n, rate: n / ((performance.now() - t0) / 1000) };
  };

  try {
    const idle = await write(SECONDS);
    const url = `http://127.0.0.1:${server.port}/api/v1/datacenter/stream?uuid=${model.uuid}&secrets=${BENCH_SECRET}`;
    const child = spawn(process.execPath, [fileURLToPath(import.meta.url), '--subscribe', url, '--subscribers', String(SUBSCRIBERS)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    while (!out.includes('READY')) await new Promise((r) => setTimeout(r, 50));
    out = '';
    const busy = await write(SECONDS);
    await new Promise((r) => setTimeout(r, 500));
    child.stdin.end();
    await new Promise((r) => child.on('exit', r));
    const result = JSON.parse(out.trim().split('\n').at(-1) as string) as { hist: number[]; records: number; gaps: number };
    const perSubscriberPerS = result.records / SUBSCRIBERS / SECONDS;
    const figures: Figure[] = [
      { name: `delivery latency p50, ${SUBSCRIBERS} SSE subscribers`, value: percentile(result.hist, 0.5), unit: 'ms', better: 'lower' },
      { name: `delivery latency p99, ${SUBSCRIBERS} SSE subscribers`, value: percentile(result.hist, 0.99), unit: 'ms', better: 'lower', target: '< 50 ms' },
      { name: 'records received per subscriber per second', value: perSubscriberPerS, unit: 'rec/s', better: 'higher', target: `${RATE}` },
      { name: 'gap events received', value: result.gaps, unit: '', better: 'lower' },
      { name: 'records written per second, with subscribers', value: busy.rate, unit: 'rec/s', baseline: idle.rate, better: 'higher' },
      { name: 'mean save() time, with subscribers', value: busy.saveUs, unit: 'µs', baseline: idle.saveUs, better: 'lower', target: '< 10% slower' },
    ];
    printTable('live reads over SSE', figures);
    await writeResults(
      'live',
      'Live reads over SSE (`npm run bench:live`)',
      'no subscribers',
      figures,
      [
        `One model written ${RATE} records/s (${TICK_MS} ms timer) for ${SECONDS} s, first alone, then with ${SUBSCRIBERS} SSE`,
        'subscribers (mode all) in a child process on the same machine. Latency: from the save() that stamped the record',
        'to the subscriber reading it, 1 ms resolution; every record of a received chunk counts with the latency of its first',
        '(oldest) record, so the subscriber process does not parse JSON. The writer is slowed only through the shared event loop: live',
        'reads have no hook in the write path.',
      ].join('\n'),
    );
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (args.subscribe !== undefined) await subscribe(args.subscribe, SUBSCRIBERS);
else await main();
