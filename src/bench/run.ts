/**
 * One bench run, in a temporary directory it removes: the disk's fdatasync, then the service with the
 * default `sync = interval` (idle memory, pushes through the sample rule, reads while writing, pages, a
 * day's aggregation), then a second service with `sync = always` for its group commit.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { BenchError } from '../errors.js';
import { Client } from './client.js';
import { aggregateDay, DAY_RECORDS } from './day.js';
import { checkRoom, fdatasyncLatencies, filesystemOf } from './disk.js';
import { percentile, pushLoad, readLatencies } from './load.js';
import { plan, type BenchOptions } from './options.js';
import { Progress } from './progress.js';
import { REPORT_FORMAT, thisDevice, type Figures, type Report } from './report.js';
import { setUpSampleRule } from './sample-rule.js';
import { RETENTION_BYTES, SEGMENT_BYTES, ServiceProcess, type Sync } from './service.js';

/** Pushes of 500 payloads on 8 connections: 4,000 in flight, within the default queue_max of 10,000 an input. */
const PUSH_CONNECTIONS = 8;
const LINES_PER_PUSH = 500;
/** Devices pushing one reading each, answered once it is on disk: the group commit gathers them. */
const ALWAYS_CONNECTIONS = 32;
const FDATASYNCS = 300;
const RSS_SAMPLE_MS = 250;
const MIB = 1_048_576;
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

const sleep = (s: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, s * 1000));

interface Started {
  service: ServiceProcess;
  client: Client;
}

/** The service of the part running, stopped when the run ends however it ends. */
class Session {
  private current: Started | undefined;
  /** Set by Ctrl-C: what then fails in the part running is the stop, not a finding. */
  interrupted = false;

  constructor(private readonly root: string) {}

  /** A service on `<root>/data-<sync>`, and its client with `connections` push connections. */
  async start(sync: Sync, connections: number): Promise<Started> {
    const service = await ServiceProcess.start(this.root, join(this.root, `data-${sync}`), sync);
    this.current = { service, client: new Client(service.port, connections) };
    return this.current;
  }

  async stop(): Promise<void> {
    const started = this.current;
    this.current = undefined;
    started?.client.close();
    await started?.service.stop();
  }

  /** The error to report: the service's exit when it is gone, else what failed, named by the part running. */
  explain(err: unknown, part: string): BenchError {
    if (this.interrupted) return new BenchError('interrupted; the temporary data directory is removed');
    if (err instanceof BenchError) return err;
    return new BenchError(this.current?.service.failure() ?? `${part}: ${(err as Error).message}`);
  }
}

/** Highest RSS of the service over samples every 250 ms until `stop()`. */
function rssSampler(service: ServiceProcess): { stop(): Promise<number> } {
  let highest = 0;
  let last = Promise.resolve();
  const timer = setInterval(() => {
    last = service.rssBytes().then((b) => void (highest = Math.max(highest, b)), () => undefined);
  }, RSS_SAMPLE_MS);
  return {
    async stop() {
      clearInterval(timer);
      await last;
      highest = Math.max(highest, await service.rssBytes());
      return highest;
    },
  };
}

/** fdatasyncs counted by the service's /metrics for `model`. */
async function fsyncCount(client: Client, model: string): Promise<number> {
  const m = new RegExp(`^edge_store_fsync_seconds_count\\{model="${model}"\\} (\\d+)$`, 'm').exec(await client.adminText('/metrics'));
  if (m === null) throw new BenchError(`/metrics has no edge_store_fsync_seconds_count for model ${model}`);
  return Number(m[1]);
}

export async function runBench(options: BenchOptions): Promise<Report> {
  await checkRoom(options.dir);
  const dataFilesystem = await filesystemOf(options.dir);
  const p = plan(options.seconds);
  const root = await mkdtemp(join(options.dir, 'edge-datacenter-bench-'));
  const session = new Session(root);
  // Ctrl-C, a stop or a closed terminal: the service stops, and the temporary data goes with it.
  const interrupted = (): void => {
    session.interrupted = true;
    void session.stop().finally(() => rm(root, { recursive: true, force: true }).finally(() => process.exit(130)));
  };
  for (const signal of SIGNALS) process.once(signal, interrupted);
  const progress = new Progress(options.seconds);
  const started = performance.now();
  const loadBefore = loadavg()[0];
  let part = 'fdatasync of the data disk';
  try {
    progress.phase(part);
    await mkdir(join(root, 'data-interval'));
    const fdatasyncs = fdatasyncLatencies(join(root, 'data-interval'), FDATASYNCS, p.fdatasyncBudget * 1000);

    progress.phase((part = 'start (sync = interval)'));
    const { service, client } = await session.start('interval', PUSH_CONNECTIONS);
    const version = String((await client.admin('GET', '/healthz')).version);
    progress.phase((part = 'idle'));
    // Before any rule: a rule starts a Lua worker, which stops again only after worker_idle_s.
    await sleep(p.idle);
    const idleRss = await service.rssBytes();

    progress.phase((part = 'pushes'));
    const input = await setUpSampleRule(client);
    await pushLoad(client, input, PUSH_CONNECTIONS, LINES_PER_PUSH, p.warmUp);
    const rss = rssSampler(service);
    const cpuBefore = await service.cpuMs();
    const pushed = await pushLoad(client, input, PUSH_CONNECTIONS, LINES_PER_PUSH, p.push);
    const cpuMs = (await service.cpuMs()) - cpuBefore;
    progress.phase((part = 'queryLastData while writing'));
    const [, lastData] = await Promise.all([
      pushLoad(client, input, PUSH_CONNECTIONS, LINES_PER_PUSH, p.read),
      readLatencies(client, `/api/v1/datacenter/queryLastData?uuid=${input.model}`, p.read),
    ]);
    const loadedRss = await rss.stop();

    progress.phase((part = 'pages of 1000'));
    const pages = await readLatencies(client, `/api/v1/datacenter/queryDataList?uuid=${input.model}&size=1000`, p.page);
    progress.phase((part = 'a day of aggregation'));
    const day = await aggregateDay(client, p.aggregate);
    await session.stop();
    // The first service's data goes before the second starts: the disk holds one at a time.
    await rm(join(root, 'data-interval'), { recursive: true, force: true });

    progress.phase((part = 'sync = always'));
    const always = await session.start('always', ALWAYS_CONNECTIONS);
    const alwaysInput = await setUpSampleRule(always.client);
    await pushLoad(always.client, alwaysInput, ALWAYS_CONNECTIONS, 1, p.warmUp);
    const syncsBefore = await fsyncCount(always.client, alwaysInput.model);
    const grouped = await pushLoad(always.client, alwaysInput, ALWAYS_CONNECTIONS, 1, p.always);
    const syncs = (await fsyncCount(always.client, alwaysInput.model)) - syncsBefore;
    await session.stop();

    const figures: Figures = {
      recordsPerS: pushed.accepted / pushed.seconds,
      cpuUsPerRecord: (cpuMs * 1000) / pushed.accepted,
      lastDataP50Ms: percentile(lastData, 0.5),
      lastDataP99Ms: percentile(lastData, 0.99),
      pageP50Ms: percentile(pages, 0.5),
      pageP99Ms: percentile(pages, 0.99),
      aggregateDayP50Ms: percentile(day.latenciesMs, 0.5),
      aggregateDayP99Ms: percentile(day.latenciesMs, 0.99),
      idleRssMiB: idleRss / MIB,
      loadedRssMiB: loadedRss / MIB,
      fdatasyncP50Ms: percentile(fdatasyncs, 0.5),
      fdatasyncP99Ms: percentile(fdatasyncs, 0.99),
      alwaysRecordsPerS: grouped.accepted / grouped.seconds,
      alwaysRecordsPerSync: grouped.accepted / Math.max(1, syncs),
    };
    return {
      format: REPORT_FORMAT,
      date: new Date().toISOString(),
      device: thisDevice(dataFilesystem),
      service: { version, transport: service.transport },
      run: {
        plannedSeconds: options.seconds,
        seconds: (performance.now() - started) / 1000,
        loadAverage: [loadBefore, loadavg()[0]],
        workload: {
          pushConnections: PUSH_CONNECTIONS,
          linesPerPush: LINES_PER_PUSH,
          pushSeconds: p.push,
          readSeconds: p.read,
          idleSeconds: p.idle,
          fdatasyncs: fdatasyncs.length,
          alwaysConnections: ALWAYS_CONNECTIONS,
          alwaysSeconds: p.always,
          dayRecords: DAY_RECORDS,
          segmentBytes: SEGMENT_BYTES,
          retentionBytes: RETENTION_BYTES,
          dataDir: options.dir,
        },
      },
      figures,
    };
  } catch (err) {
    throw session.explain(err, part);
  } finally {
    progress.stop();
    for (const signal of SIGNALS) process.off(signal, interrupted);
    await session.stop().catch(() => undefined);
    await rm(root, { recursive: true, force: true });
  }
}
