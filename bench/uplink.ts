/**
 * Fleet uplink (contract 17) to a real 3-node nats-server cluster on loopback (test/uplink/nats-cluster.ts),
 * in one run:
 * - catch-up: `--records` already in the log, the uplink started, time until the hub acknowledged them all;
 * - lag at `--rate` records/s for `--seconds`: from save() to the hub's acknowledgement of the record;
 * - store append rate with the uplink shipping the same model against the rate with it off;
 * - shipper memory: heap (after GC) and RSS over the run, against before the uplink started.
 * Usage: npm run bench:uplink [-- --records 300000 --rate 10000 --seconds 10 --append 1000000]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Store } from '../src/store/store.js';
import { storeOptions } from '../src/store/base/constants.js';
import type { ModelLog } from '../src/store/log/model-log.js';
import { ModelRegistry } from '../src/models/registry.js';
import { Uplink } from '../src/uplink/uplink.js';
import { NatsLink } from '../src/uplink/nats-link.js';
import type { Message } from '../src/uplink/message.js';
import { HEADER_FIRST_ID, HEADER_KIND, HEADER_LAST_ID } from '../src/uplink/message.js';
import { NatsCluster, SKIP_REASON } from '../test/uplink/nats-cluster.js';
import { FIELDS, sensorRecord } from './records.js';
import { printTable, writeResults, type Figure } from './report.js';

const { values: args } = parseArgs({
  options: {
    records: { type: 'string', default: '300000' },
    rate: { type: 'string', default: '10000' },
    seconds: { type: 'string', default: '10' },
    append: { type: 'string', default: '1000000' },
    'sync-interval-ms': { type: 'string', default: '100' },
  },
});
const RECORDS = Number(args.records);
const RATE = Number(args.rate);
const SECONDS = Number(args.seconds);
const APPEND = Number(args.append);
const SYNC_INTERVAL_MS = Number(args['sync-interval-ms']);
const YIELD_EVERY = 10_000;
const TICK_MS = 10;
const GATEWAY = 'bench';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gc = (globalThis as { gc?: () => void }).gc ?? (() => {});

function progress(message: string): void {
  process.stderr.write(`[bench:uplink] ${message}\n`);
}

/** Per model: when each id was saved, and how long the hub took to acknowledge it. */
class AckClock {
  readonly savedAtMs = new Map<string, Float64Array>();
  readonly latenciesMs: number[] = [];

  track(uuid: string, records: number): Float64Array {
    const a = new Float64Array(records + 2);
    this.savedAtMs.set(uuid, a);
    return a;
  }

  acked(m: Message): void {
    if (m.headers[HEADER_KIND] !== 'records') return;
    const saved = this.savedAtMs.get(m.subject.split('.')[2]);
    if (saved === undefined) return;
    const now = performance.now();
    for (let id = Number(m.headers[HEADER_FIRST_ID]); id <= Number(m.headers[HEADER_LAST_ID]); id++) {
      if (saved[id] > 0) this.latenciesMs.push(now - saved[id]);
    }
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0;
}

/**
 * Sustained appends as bench:store measures them: yield every YIELD_EVERY, timed until the last is
 * accepted; also the mean time of a save() call alone (the store's write path, without the turns the
 * event loop gives to others between the slices).
 */
async function appendRate(log: ModelLog, count: number): Promise<{ rate: number; saveUs: number }> {
  const t0 = performance.now();
  let busyMs = 0;
  for (let i = 0; i < count; i += YIELD_EVERY) {
    const s0 = performance.now();
    for (let j = i; j < Math.min(count, i + YIELD_EVERY); j++) log.save(sensorRecord(j));
    busyMs += performance.now() - s0;
    await new Promise((r) => setImmediate(r));
  }
  const rate = count / ((performance.now() - t0) / 1000);
  await log.durable();
  return { rate, saveUs: (busyMs * 1000) / count };
}

async function caughtUp(uplink: Uplink, uuid: string, onTick: () => void = () => {}): Promise<void> {
  for (;;) {
    const m = uplink.status().models.find((x) => x.uuid === uuid);
    if (m !== undefined && m.newestId > 0 && m.lagRecords === 0 && m.inflightBatches === 0) return;
    onTick();
    await sleep(5);
  }
}

async function main(): Promise<void> {
  if (SKIP_REASON !== undefined) throw new Error(`bench:uplink needs nats-server: ${SKIP_REASON}`);
  const loadBefore = loadavg();
  const cluster = await NatsCluster.start(3);
  const dir = await mkdtemp(join(tmpdir(), 'bench-uplink-'));
  let uplink: Uplink | undefined;
  const store = await Store.open(storeOptions({ rootDir: join(dir, 'store'), durability: 'interval', syncIntervalMs: SYNC_INTERVAL_MS }));
  try {
    await cluster.createStream('edc', 600_000);
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    const model = async (name: string): Promise<{ uuid: string; log: ModelLog }> => {
      const m = await registry.create({ name });
      for (const f of FIELDS) await registry.createAttribute({ schemaId: m.uuid, name: f, type: f === 'device_id' || f === 'status' ? 'STRING' : 'FLOAT' });
      await registry.publish(m.uuid);
      return { uuid: m.uuid, log: registry.log(m.uuid) };
    };
    const backlog = await model('catch-up');
    const appendOff = await model('append-off');
    progress(`append rate with the uplink off (${APPEND} records)`);
    const offRate = await appendRate(appendOff.log, APPEND);
    progress(`${RECORDS} records into the log before the uplink starts`);
    for (let i = 0; i < RECORDS; i++) {
      backlog.log.save(sensorRecord(i));
      if (i % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    }
    await backlog.log.durable();

    const clock = new AckClock();
    const nats = new NatsLink({ servers: cluster.urls, credentials: '', gateway: GATEWAY, log: { info: () => {}, warn: progress } });
    const link = {
      get connected() {
        return nats.connected;
      },
      start: () => {}, // started below, before the uplink: the catch-up time does not include connecting
      close: () => nats.close(),
      async publish(m: Message) {
        const ack = await nats.publish(m);
        clock.acked(m);
        return ack;
      },
    };
    nats.start();
    while (!nats.connected) await sleep(5);
    gc();
    const heap0 = process.memoryUsage().heapUsed;
    const rss0 = process.memoryUsage().rss;
    let rssPeak = rss0;
    let heapPeak = heap0;
    const sampleMemory = (): void => {
      const now = process.memoryUsage();
      rssPeak = Math.max(rssPeak, now.rss);
      heapPeak = Math.max(heapPeak, now.heapUsed);
    };
    // Only the catch-up model ships first: the append-off model stays unshipped, the others are created later.
    uplink = await Uplink.start({
      config: { engine: 'nats', servers: cluster.urls, credentials: '', subjectPrefix: 'edc', gatewayId: GATEWAY, models: [], backlogMaxBytes: 0 },
      dataDir: dir,
      registry: { list: () => registry.list().filter((m) => m.uuid !== appendOff.uuid), onChange: (f) => registry.onChange(f), log: (u) => registry.log(u) },
      log: { info: () => {}, warn: progress },
      link,
    });
    progress('catch-up');
    const t0 = performance.now();
    await caughtUp(uplink, backlog.uuid, sampleMemory);
    const catchUpS = (performance.now() - t0) / 1000;
    gc();
    const heapAfterCatchUp = process.memoryUsage().heapUsed;

    progress(`lag at ${RATE} records/s for ${SECONDS} s`);
    const live = await model('lag');
    const savedAt = clock.track(live.uuid, RATE * SECONDS + RATE);
    await sleep(1500); // the uplink's registry scan starts the shipper
    let written = 0;
    const w0 = performance.now();
    await new Promise<void>((resolve) => {
      const timer = setInterval(() => {
        const due = Math.floor(((performance.now() - w0) / 1000) * RATE) - written;
        for (let i = 0; i < due && written < RATE * SECONDS; i++) {
          const id = live.log.save(sensorRecord(written++));
          savedAt[id] = performance.now();
        }
        if (written >= RATE * SECONDS) {
          clearInterval(timer);
          resolve();
        }
      }, TICK_MS);
    });
    await caughtUp(uplink, live.uuid);

    progress(`append rate with the uplink shipping the same model (${APPEND} records)`);
    const shipped = await model('append-on');
    await sleep(1500);
    const onRate = await appendRate(shipped.log, APPEND);
    const drainT0 = performance.now();
    await caughtUp(uplink, shipped.uuid);
    const drainS = (performance.now() - drainT0) / 1000;
    gc();
    const heapEnd = process.memoryUsage().heapUsed;
    const loadAfter = loadavg();

    const figures: Figure[] = [
      { name: `catch-up, ${RECORDS.toLocaleString('en-US')} records in the log`, value: RECORDS / catchUpS, unit: 'rec/s', better: 'higher', target: '>= 100,000 rec/s' },
      { name: `lag p50 at ${RATE.toLocaleString('en-US')} rec/s`, value: percentile(clock.latenciesMs, 0.5), unit: 'ms', better: 'lower' },
      { name: `lag p99 at ${RATE.toLocaleString('en-US')} rec/s`, value: percentile(clock.latenciesMs, 0.99), unit: 'ms', better: 'lower', target: `< 250 ms + sync ${SYNC_INTERVAL_MS} ms` },
      { name: 'store append rate, uplink shipping the model', value: onRate.rate, unit: 'rec/s', baseline: offRate.rate, better: 'higher', target: '>= 0.9x off' },
      { name: 'mean save() time, uplink shipping the model', value: onRate.saveUs, unit: 'µs', baseline: offRate.saveUs, better: 'lower' },
      { name: `then shipped ${APPEND.toLocaleString('en-US')} records in`, value: drainS, unit: 's', better: 'lower' },
      { name: 'shipper heap after GC (after catch-up)', value: (heapAfterCatchUp - heap0) / 2 ** 20, unit: 'MiB', better: 'lower', target: '<= 10 MiB' },
      { name: 'shipper heap after GC (end of run)', value: (heapEnd - heap0) / 2 ** 20, unit: 'MiB', better: 'lower', target: '<= 10 MiB' },
      { name: 'shipper heap, peak during catch-up (garbage included)', value: (heapPeak - heap0) / 2 ** 20, unit: 'MiB', better: 'lower' },
      { name: 'shipper RSS, peak during catch-up', value: (rssPeak - rss0) / 2 ** 20, unit: 'MiB', better: 'lower', target: '<= 10 MiB' },
    ];
    printTable('fleet uplink to a 3-node nats-server cluster', figures);
    const load = (l: number[]) => l.map((x) => x.toFixed(2)).join(' ');
    await writeResults(
      'uplink',
      'Fleet uplink to NATS JetStream (`npm run bench:uplink`)',
      'uplink off',
      figures,
      [
        `Load average before the run ${load(loadBefore)}, after ${load(loadAfter)} (1, 5, 15 min; other work shared the machine).`,
        `Hub: three nats-server ${'2.9.10'} processes on 127.0.0.1 (the Debian package), the stream R3 on file storage, as`,
        'docs/uplink.md tells users to create it; the gateway is this process: the real store (`sync = interval`,',
        `${SYNC_INTERVAL_MS} ms), the real client, the sensor record of the other benchmarks (6 attributes). Catch-up: the records are`,
        'durable in the log before the uplink starts; timed until the hub acknowledged the last one. Lag: from save()',
        `to the hub's acknowledgement of the message holding the record, written ${RATE} records/s on a ${TICK_MS} ms timer. Append`,
        'rate: sustained appends as bench:store measures them, first to a model nobody ships, then to a model the uplink',
        'ships at the same time (the shipper shares the event loop: the rate counts the turns it takes; the save() time',
        'is the write path alone). Memory: heap after a full GC and peaks sampled every 5 ms during catch-up, each',
        'against before the uplink started (the client connected); the nats-server processes are not counted.',
      ].join('\n'),
    );
  } finally {
    await uplink?.close(0);
    await store.close();
    await cluster.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
