/**
 * Backup and restore rates (contract section 15): a model of 1M sensor records (bench/records.ts) is
 * backed up to a file and the file restored into an empty data directory, each through
 * src/models/backup.ts as the HTTP routes and the CLI use it. Target: >= 500k records/s each.
 * `npm run bench:backup [-- --records N]`.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { once } from 'node:events';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/index.js';
import { ModelTransfers } from '../src/models/backup.js';
import { openData } from '../src/server.js';
import { FIELDS, sensorRecord } from './records.js';
import { type Figure, printTable, writeResults } from './report.js';

const { values: args } = parseArgs({ options: { records: { type: 'string', default: '1000000' } } });
const records = Number(args.records);

async function open(dir: string) {
  const { config } = await loadConfig({ env: { EDGE_DATACENTER_MAIN_DATA_DIR: dir, EDGE_DATACENTER_MAIN_ADMIN_TOKEN: 'bench-admin-token-0123456789' } });
  return openData(config);
}

async function main(): Promise<void> {
  const loadBefore = loadavg().map((l) => l.toFixed(1)).join(', ');
  const root = await mkdtemp(join(tmpdir(), 'edc-bench-backup-'));
  try {
    const source = await open(join(root, 'source'));
    const model = await source.registry.create({ name: 'bench' });
    for (const name of FIELDS) {
      const type = name === 'device_id' || name === 'status' ? 'STRING' : name === 'battery' ? 'INTEGER' : 'FLOAT';
      await source.registry.createAttribute({ schemaId: model.uuid, name, label: name, type });
    }
    await source.registry.publish(model.uuid);
    const log = source.registry.log(model.uuid);
    for (let i = 0; i < records; i++) {
      log.save(sensorRecord(i));
      if (i % 100_000 === 0) await log.durable();
    }
    await log.durable();

    const file = join(root, 'bench.backup.jsonl');
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const out = createWriteStream(file);
    for await (const chunk of new ModelTransfers(source.store, source.registry).backup(model.uuid).chunks) {
      if (!out.write(chunk)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'close');
    const backupMs = performance.now() - t0;
    const backupCpu = process.cpuUsage(cpu0);
    await source.store.close();
    const bytes = (await stat(file)).size;

    const target = await open(join(root, 'target'));
    const cpu1 = process.cpuUsage();
    const t1 = performance.now();
    const result = await new ModelTransfers(target.store, target.registry).restore(createReadStream(file, { highWaterMark: 1024 * 1024 }), { replace: false });
    const restoreMs = performance.now() - t1;
    const restoreCpu = process.cpuUsage(cpu1);
    if (result.records !== records) throw new Error(`restored ${result.records} of ${records} records`);
    await target.store.close();

    const figures: Figure[] = [
      { name: `backup, ${(records / 1e6).toFixed(1)}M records`, value: records / (backupMs / 1000), unit: 'rec/s', target: '>= 500,000 rec/s' },
      { name: `restore, ${(records / 1e6).toFixed(1)}M records`, value: records / (restoreMs / 1000), unit: 'rec/s', target: '>= 500,000 rec/s' },
      { name: 'backup CPU per record', value: (backupCpu.user + backupCpu.system) / records, unit: 'µs' },
      { name: 'restore CPU per record', value: (restoreCpu.user + restoreCpu.system) / records, unit: 'µs' },
      { name: 'backup file per record', value: bytes / records, unit: 'B' },
    ];
    printTable('backup and restore', figures);
    await writeResults(
      'backup',
      'Backup and restore (`npm run bench:backup`)',
      '–',
      figures,
      [
        `Records: 6 attributes (bench/records.ts), ${records.toLocaleString('en-US')} of them, written with \`sync = interval\` before the timing.`,
        'Backup: `ModelTransfers.backup` (as GET /api/v1/datacenter/backup and the CLI) to a file, timed until the file is closed.',
        'Restore: `ModelTransfers.restore` (as POST /api/v1/datacenter/restore and the CLI) from that file into an empty data',
        'directory, timed until the model is installed: staged, every segment fdatasync\'ed, swapped in, models.json written.',
        '"CPU per record" is the whole process (main thread, libuv threads for file I/O), user + system: it does not',
        'depend on what else runs on the machine; the rates do.',
        `Load average before the run: ${loadBefore}; when it ended: ${loadavg().map((l) => l.toFixed(1)).join(', ')} (the machine's other users count: on a shared`,
        'machine the rates fall with the load; compare runs at a similar load).',
      ].join('\n'),
    );
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

await main();
