/**
 * The shipper's main-thread cost, steadier than bench:uplink's single append run on a shared machine:
 * - catch-up: `--records` durable in the log, time and process CPU (user + system) until the hub
 *   acknowledged them all, per record shipped;
 * - `--rounds` rounds of appending `--append` records to a model nobody ships, then to one the uplink
 *   ships (alternating, so load changes hit both), each appended model drained before the next round;
 *   how much of it the hub had acknowledged when the append ended.
 * `--hub fake` acknowledges every message on the next turn instead of a 3-node nats-server cluster: the
 * shipper's own work without the NATS client's.
 * Usage: node dist-bench/bench/uplink-cpu.js [--hub nats|fake] [--records 300000] [--append 1000000] [--rounds 3]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Store } from '../src/store/store.js';
import { storeOptions } from '../src/store/base/constants.js';
import type { ModelLog } from '../src/store/log/model-log.js';
import { ModelRegistry } from '../src/models/registry.js';
import { Uplink } from '../src/uplink/uplink.js';
import { NatsLink } from '../src/uplink/nats-link.js';
import type { Message } from '../src/uplink/message.js';
import { NatsCluster } from '../test/uplink/nats-cluster.js';
import { FIELDS, sensorRecord } from './records.js';

const { values: args } = parseArgs({
  options: {
    hub: { type: 'string', default: 'nats' },
    records: { type: 'string', default: '300000' },
    append: { type: 'string', default: '1000000' },
    rounds: { type: 'string', default: '3' },
  },
});
const RECORDS = Number(args.records);
const APPEND = Number(args.append);
const ROUNDS = Number(args.rounds);
const YIELD_EVERY = 10_000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Sustained appends as bench:uplink measures them. */
async function appendRate(log: ModelLog, count: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < count; i += YIELD_EVERY) {
    for (let j = i; j < Math.min(count, i + YIELD_EVERY); j++) log.save(sensorRecord(j));
    await new Promise((r) => setImmediate(r));
  }
  const rate = count / ((performance.now() - t0) / 1000);
  await log.durable();
  return rate;
}

async function caughtUp(uplink: Uplink, uuid: string): Promise<void> {
  for (;;) {
    const m = uplink.status().models.find((x) => x.uuid === uuid);
    if (m !== undefined && m.newestId > 0 && m.lagRecords === 0 && m.inflightBatches === 0) return;
    await sleep(5);
  }
}

function median(values: number[]): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const cluster = args.hub === 'nats' ? await NatsCluster.start(3) : undefined;
  const dir = await mkdtemp(join(tmpdir(), 'bench-uplink-cpu-'));
  const store = await Store.open(storeOptions({ rootDir: join(dir, 'store'), durability: 'interval', syncIntervalMs: 100 }));
  let uplink: Uplink | undefined;
  let nats: NatsLink | undefined;
  try {
    await cluster?.createStream('edc', 600_000);
    const registry = await ModelRegistry.open({ dataDir: dir, store });
    const unshipped = new Set<string>();
    const model = async (name: string, shipped: boolean): Promise<{ uuid: string; log: ModelLog }> => {
      const m = await registry.create({ name });
      if (!shipped) unshipped.add(m.uuid);
      for (const f of FIELDS) await registry.createAttribute({ schemaId: m.uuid, name: f, type: f === 'device_id' || f === 'status' ? 'STRING' : 'FLOAT' });
      await registry.publish(m.uuid);
      return { uuid: m.uuid, log: registry.log(m.uuid) };
    };
    const backlog = await model('catch-up', true);
    for (let i = 0; i < RECORDS; i++) {
      backlog.log.save(sensorRecord(i));
      if (i % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    }
    await backlog.log.durable();
    await backlog.log.compactionIdle(); // its CPU is not the shipper's

    let link: Parameters<typeof Uplink.start>[0]['link'];
    if (cluster !== undefined) {
      const n = new NatsLink({ servers: cluster.urls, credentials: '', gateway: 'bench', log: { info: () => {}, warn: (m) => process.stderr.write(`${m}\n`) } });
      nats = n;
      n.start();
      while (!n.connected) await sleep(5);
      link = { connected: true, start: () => {}, close: () => n.close(), publish: (m: Message) => n.publish(m) };
    } else {
      link = { connected: true, start: () => {}, close: async () => {}, publish: () => new Promise((r) => setImmediate(() => r({ duplicate: false }))) };
    }
    const c0 = cpuMs();
    const t0 = performance.now();
    uplink = await Uplink.start({
      config: { engine: 'nats', servers: cluster?.urls ?? [], credentials: '', subjectPrefix: 'edc', gatewayId: 'bench', models: [], backlogMaxBytes: 0 },
      dataDir: dir,
      registry: { list: () => registry.list().filter((m) => !unshipped.has(m.uuid)), onChange: (f) => registry.onChange(f), log: (u) => registry.log(u) },
      log: { info: () => {}, warn: (m) => process.stderr.write(`${m}\n`) },
      link,
    });
    await caughtUp(uplink, backlog.uuid);
    const wallS = (performance.now() - t0) / 1000;
    const cpu = cpuMs() - c0;
    console.log(`catch-up: ${Math.round(RECORDS / wallS)} rec/s, CPU ${((cpu * 1000) / RECORDS).toFixed(3)} µs/record`);

    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const off = await model(`off-${round}`, false);
      const on = await model(`on-${round}`, true);
      await sleep(1500); // the uplink's registry scan starts the shipper
      const offRate = await appendRate(off.log, APPEND);
      const c1 = cpuMs();
      const onRate = await appendRate(on.log, APPEND);
      const shippedDuring = (uplink.status().models.find((x) => x.uuid === on.uuid)?.nextId ?? 1) - 1;
      await caughtUp(uplink, on.uuid);
      const cpuPerRecordUs = ((cpuMs() - c1) * 1000) / APPEND;
      ratios.push(onRate / offRate);
      console.log(
        `round ${round + 1}: off ${Math.round(offRate)} rec/s, on ${Math.round(onRate)} rec/s, ratio ${(onRate / offRate).toFixed(2)}, CPU append+ship ${cpuPerRecordUs.toFixed(3)} µs/record, shipped during the append ${Math.round((100 * shippedDuring) / APPEND)}%`,
      );
    }
    console.log(`median ratio ${median(ratios).toFixed(2)}`);
  } finally {
    await uplink?.close(0);
    await nats?.close();
    await store.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
