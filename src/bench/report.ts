/**
 * The bench's report: every figure with its unit and which way is better, the device it ran on, and the
 * two files written from it (JSON to compare devices with `--compare`, Markdown to read or paste).
 */
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { cpus, hostname, release, totalmem } from 'node:os';
import { join } from 'node:path';

export const REPORT_FORMAT = 'edge-datacenter-bench/1';

export interface FigureSpec {
  label: string;
  unit: string;
  better: 'higher' | 'lower';
}

/** Every figure a report holds, in the order shown. */
export const FIGURES = {
  recordsPerS: { label: 'records/s through the sample rule (HTTP push, sync = interval)', unit: 'records/s', better: 'higher' },
  cpuUsPerRecord: { label: 'service CPU per record', unit: 'µs', better: 'lower' },
  lastDataP50Ms: { label: 'queryLastData while writing, p50', unit: 'ms', better: 'lower' },
  lastDataP99Ms: { label: 'queryLastData while writing, p99', unit: 'ms', better: 'lower' },
  pageP50Ms: { label: 'queryDataList size=1000, p50', unit: 'ms', better: 'lower' },
  pageP99Ms: { label: 'queryDataList size=1000, p99', unit: 'ms', better: 'lower' },
  aggregateDayP50Ms: { label: 'queryAggregate, a day at 10/s into 1000 buckets, p50', unit: 'ms', better: 'lower' },
  aggregateDayP99Ms: { label: 'queryAggregate, a day at 10/s into 1000 buckets, p99', unit: 'ms', better: 'lower' },
  idleRssMiB: { label: 'RSS idle (after start)', unit: 'MiB', better: 'lower' },
  loadedRssMiB: { label: 'RSS under load (highest)', unit: 'MiB', better: 'lower' },
  fdatasyncP50Ms: { label: 'fdatasync of the data disk, p50', unit: 'ms', better: 'lower' },
  fdatasyncP99Ms: { label: 'fdatasync of the data disk, p99', unit: 'ms', better: 'lower' },
  alwaysRecordsPerS: { label: 'records/s with sync = always (group commit)', unit: 'records/s', better: 'higher' },
  alwaysRecordsPerSync: { label: 'records per fdatasync with sync = always', unit: 'records', better: 'higher' },
} as const satisfies Record<string, FigureSpec>;

export type FigureKey = keyof typeof FIGURES;
export type Figures = Record<FigureKey, number>;

export interface Device {
  cpuModel: string;
  cores: number;
  memoryBytes: number;
  kernel: string;
  node: string;
  arch: string;
  hostname: string;
  /** The filesystem the data directory was on. */
  dataFilesystem: string;
}

export interface Report {
  format: typeof REPORT_FORMAT;
  date: string;
  device: Device;
  service: { version: string; transport: string };
  run: {
    plannedSeconds: number;
    seconds: number;
    /** Load average over 1 minute before and after the run: other work on the device changes rates, not CPU per record. */
    loadAverage: [number, number];
    /** What the figures ran on, to read them by. */
    workload: Record<string, number | string>;
  };
  figures: Figures;
}

export function thisDevice(dataFilesystem: string): Device {
  const cpu = cpus();
  return {
    cpuModel: cpu[0]?.model.trim() || 'unknown',
    cores: cpu.length,
    memoryBytes: totalmem(),
    kernel: release(),
    node: process.version,
    arch: process.arch,
    hostname: hostname(),
    dataFilesystem,
  };
}

/** One line naming the device, as the Markdown and `--compare` print it. */
export function deviceLine(r: Report): string {
  const d = r.device;
  return (
    `${d.cpuModel}, ${d.cores} cores, ${(d.memoryBytes / 2 ** 30).toFixed(1)} GiB, linux ${d.kernel} ${d.arch}, Node ${d.node}, ` +
    `HTTP transport ${r.service.transport}, data on ${d.dataFilesystem} (${d.hostname}, edge-datacenter ${r.service.version})`
  );
}

/** A figure as the tables show it: thousands separated, three significant digits below 100. */
export function formatValue(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return value.toPrecision(3);
}

export function markdown(r: Report): string {
  const rows = (Object.keys(FIGURES) as FigureKey[]).map((k) => `| ${FIGURES[k].label} | ${formatValue(r.figures[k])} ${FIGURES[k].unit} |`);
  const w = r.run.workload;
  return [
    `# edge-datacenter bench, ${r.date.slice(0, 10)}`,
    '',
    `${deviceLine(r)}.`,
    '',
    '| figure | value |',
    '|---|---|',
    ...rows,
    '',
    `The service ran as \`node --max-semi-space-size=1 dist/cli.js serve\` with the default settings but a temporary data directory, ` +
      `loopback on a free port, ${Number(w.segmentBytes) / 2 ** 20} MiB segments and ${Number(w.retentionBytes) / 2 ** 20} MiB retention a model. ` +
      `Pushes: ${w.pushConnections} keep-alive connections, each sending ${w.linesPerPush} NDJSON payloads of RHILEX's sample rule per push ` +
      `as soon as the last one was answered, ${w.pushSeconds} s without reads (records/s, CPU per record: the service's user + system time ` +
      `of all threads from /proc over the records stored), then ${w.readSeconds} s with queryLastData one call after another. ` +
      `RSS is VmRSS of the service: idle ${w.idleSeconds} s after start, under load the highest of samples every 250 ms while pushing. ` +
      `Pages of 1000 (newest first) and the day's aggregation (yesterday at 10 records/s, 864,000 records restored with their timestamps, fn=min,max,avg of 5 attributes, after one call that summarises them) ` +
      `are read one after another without writes. fdatasync: ${w.fdatasyncs} writes of 100 B into a 4 KiB file in the data directory, each ` +
      `followed by a timed fdatasync. sync = always: a new service, ${w.alwaysConnections} connections pushing one payload at a time for ` +
      `${w.alwaysSeconds} s; records per fdatasync from its /metrics. Latencies are of the whole HTTP exchange on loopback, measured by the ` +
      `bench's client on the same device. Run of ${r.run.seconds.toFixed(0)} s (planned ${r.run.plannedSeconds} s), load average ` +
      `${r.run.loadAverage[0].toFixed(2)} before and ${r.run.loadAverage[1].toFixed(2)} after.`,
    '',
  ].join('\n');
}

/** `edge-datacenter-bench-<host>-<date>` in `dir`, with -2, -3, ... when a run of that day is already there. */
export function reportBase(dir: string, date: Date, host: string): string {
  const stem = `edge-datacenter-bench-${host.replace(/[^A-Za-z0-9_.-]/g, '_')}-${date.toISOString().slice(0, 10)}`;
  for (let n = 1; ; n++) {
    const base = join(dir, n === 1 ? stem : `${stem}-${n}`);
    if (!existsSync(`${base}.json`) && !existsSync(`${base}.md`)) return base;
  }
}

/** Writes `<base>.json` and `<base>.md`; their paths. */
export async function writeReport(r: Report, base: string): Promise<{ json: string; md: string }> {
  const files = { json: `${base}.json`, md: `${base}.md` };
  await writeFile(files.json, `${JSON.stringify(r, null, 2)}\n`);
  await writeFile(files.md, markdown(r));
  return files;
}
