/**
 * A day of records at 10 a second (864,000), as a gateway holds after a day of one sensor: pushes take
 * the clock's time, so the day goes in with past timestamps as a restore (the store's path for them: a
 * staging log swapped in whole; a quarter of an import's CPU a record, which checks each value as a
 * rule's write), then queryAggregate reads it into 1000 buckets.
 */
import { BenchError } from '../errors.js';
import type { Client } from './client.js';
import { readLatencies } from './load.js';
import { createSampleModel } from './sample-rule.js';

const DAY_MS = 86_400_000;
const RECORDS_PER_S = 10;
export const DAY_RECORDS = (DAY_MS / 1000) * RECORDS_PER_S;
/** 86.4 s buckets: 1000 over the day. */
const BUCKET_MS = DAY_MS / 1000;
const LINES_PER_CHUNK = 500;

/**
 * A backup of the day: `header` (line 1 of the empty model's own backup, so the attributes are exactly
 * the service's) announcing the day's records, then the records in the sample's attribute order, in
 * chunks (never the whole file in memory).
 */
async function* dayBackup(header: Record<string, unknown>, startMs: number): AsyncGenerator<string, void, undefined> {
  yield `${JSON.stringify({ ...header, records: DAY_RECORDS })}\n`;
  const step = 1000 / RECORDS_PER_S;
  for (let first = 0; first < DAY_RECORDS; first += LINES_PER_CHUNK) {
    let chunk = '';
    for (let i = first; i < Math.min(first + LINES_PER_CHUNK, DAY_RECORDS); i++) {
      const wave = Math.sin(i / 3000);
      chunk +=
        `{"id":${i + 1},"create_at_ms":${startMs + i * step},"temp":${(21 + 3 * wave).toFixed(2)},"resistivity":${(1.5 + wave / 10).toFixed(3)},` +
        `"conductivity":${(2 + (i % 50) / 100).toFixed(2)},"dissolved_oxygen":${(8 - wave).toFixed(2)},"ph_value":${(7 + wave / 5).toFixed(2)}}\n`;
    }
    yield chunk;
  }
}

export interface DayResult {
  /** Milliseconds of each aggregation of the day. */
  latenciesMs: number[];
  buckets: number;
}

/** Restores yesterday (UTC) into a new model and times queryAggregate over it for `seconds`. */
export async function aggregateDay(client: Client, seconds: number): Promise<DayResult> {
  const model = await createSampleModel(client, 'bench day');
  const header = JSON.parse((await client.adminText(`/api/v1/datacenter/backup?uuid=${model}`)).split('\n')[0]) as Record<string, unknown>;
  const startMs = Math.floor(Date.now() / DAY_MS) * DAY_MS - DAY_MS;
  const restored = await client.upload('/api/v1/datacenter/restore?replace=true', dayBackup(header, startMs));
  if (restored.records !== DAY_RECORDS) throw new BenchError(`restore stored ${String(restored.records)} of the day's ${DAY_RECORDS} records`);
  const path = `/api/v1/datacenter/queryAggregate?uuid=${model}&from=${startMs}&to=${startMs + DAY_MS}&interval=${BUCKET_MS}&fn=min,max,avg`;
  const first = await client.read(path);
  const buckets = (JSON.parse(first.text) as { data?: { buckets?: unknown[] } }).data?.buckets?.length ?? 0;
  if (first.status !== 200 || buckets !== 1000) throw new BenchError(`queryAggregate over the day answered ${first.status} with ${buckets} buckets, not 1000: ${first.text.slice(0, 300)}`);
  return { latenciesMs: await readLatencies(client, path, seconds), buckets };
}
