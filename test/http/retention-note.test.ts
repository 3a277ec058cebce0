/**
 * Contract 14: a limit lower than one segment removes nothing until the segment being written is sealed
 * (at `[store] segment_bytes`, 32 MiB by default, or `segment_age_hours`). `schema/detail` says so in
 * `retention.note`, so "at most this much stays" is not read as true at once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, publishedModel } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
let model: string;

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  model = await publishedModel(svc.port, 'small limit', ['temp']);
  const log = svc.registry.log(model);
  for (let i = 1; i <= 100; i++) log.save({ temp: i });
  await log.durable();
}, 60_000);
afterAll(async () => svc?.close());

describe('a retention limit below one segment', () => {
  it('keeps every record until the segment is sealed, and schema/detail says when limits take effect', async () => {
    const put = await call(svc.base, `/api/v1/schema/retention?uuid=${model}`, { method: 'PUT', body: { maxRecords: 10 } });
    expect(put.status, put.text).toBe(200);
    await svc.registry.log(model).enforceRetention();
    const d = (await call(svc.base, `/api/v1/schema/detail?uuid=${model}`)).body.data;
    expect(d.retention.effective.maxRecords).toBe(10);
    expect(d.usage.records).toBe(100);
    expect(d.retention.note).toBe(
      'Limits remove whole sealed segments, oldest first, never the segment being written. A segment is sealed ' +
        'at [store] segment_bytes (default 32 MiB) or segment_age_hours after its first record (default 24): until ' +
        'then a limit lower than one segment removes nothing, and up to one segment more than a limit stays.',
    );
  });
});
