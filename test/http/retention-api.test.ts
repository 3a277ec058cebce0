/**
 * Contract 14 over HTTP: a model's own retention (`PUT schema/retention`), shown with the effective
 * limits and the usage in `schema/detail`, applied at once, kept in models.json, validated field by
 * field; and the free space of the store's filesystem in /metrics.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, publishedModel } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
let model: string;

beforeAll(async () => {
  svc = await startService({ ini: { store: ['segment_bytes = 65536', 'retention_max_records = 0'] } });
  model = await publishedModel(svc.port, 'boiler', ['temp', 'pressure']);
  const log = svc.registry.log(model);
  for (let i = 1; i <= 6000; i++) log.save({ temp: i, pressure: i / 2 });
  await log.durable();
});

afterAll(async () => svc?.close());

const detail = async () => (await call(svc.base, `/api/v1/schema/detail?uuid=${model}`)).body.data;
const put = (body: unknown) => call(svc.base, `/api/v1/schema/retention?uuid=${model}`, { method: 'PUT', body });

describe('retention per model', () => {
  it('detail shows the defaults, the effective limits and the usage', async () => {
    const d = await detail();
    expect(d.retention).toEqual({
      own: { maxRecords: null, maxBytes: null, maxAgeHours: null },
      effective: { maxRecords: 0, maxBytes: 0, maxAgeHours: 0 },
      note: expect.stringContaining('sealed segments'),
    });
    expect(d.usage).toMatchObject({ records: 6000, oldestCreateAt: expect.stringMatching(/Z$/) });
    expect(d.usage.bytes).toBeGreaterThan(6000 * 20);
  });

  it('a model limit applies at once, whole sealed segments from the oldest, and is kept in models.json', async () => {
    const r = await put({ maxRecords: 1000, maxBytes: null });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({
      own: { maxRecords: 1000, maxBytes: null, maxAgeHours: null },
      effective: { maxRecords: 1000, maxBytes: 0, maxAgeHours: 0 },
    });
    let usage = (await detail()).usage;
    for (let i = 0; i < 50 && usage.records > 1000; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      usage = (await detail()).usage;
    }
    // Whole sealed segments go while the limit is exceeded: at most 1000 are left, the newest among them.
    expect(usage.records).toBeLessThanOrEqual(1000);
    expect(usage.records).toBeGreaterThan(0);
    const page = await call(svc.base, `/api/v1/datacenter/queryDataList?uuid=${model}&secrets=s3cret-one&size=1&order=desc`, { token: null });
    expect(page.body.data.records[0].temp).toBe(6000);
    const stored = JSON.parse(readFileSync(join(svc.config.main.dataDir, 'models.json'), 'utf8'));
    expect(stored.models.find((m: { uuid: string }) => m.uuid === model).retention).toEqual({ maxRecords: 1000, maxBytes: null, maxAgeHours: null });
    expect(svc.logs.some((l) => l.audit === 'model.retention' && l.uuid === model)).toBe(true);
  });

  it('null goes back to the [store] default', async () => {
    const r = await put({ maxRecords: null });
    expect(r.body.data.effective).toEqual({ maxRecords: 0, maxBytes: 0, maxAgeHours: 0 });
  });

  it('each field must be a non-negative integer or null; unknown fields and other bodies are 400 naming them', async () => {
    const bad = async (body: unknown, text: string) => {
      const r = await put(body);
      expect(r.status).toBe(400);
      expect(r.body.msg).toContain(text);
    };
    await bad({ maxRecords: -1 }, "field 'maxRecords' must be an integer in 0..");
    await bad({ maxBytes: 1.5 }, "field 'maxBytes' must be an integer");
    await bad({ maxAgeHours: '24' }, "field 'maxAgeHours' must be an integer in 0..876000");
    await bad({ maxRows: 5 }, "field 'maxRows' is not a retention limit");
    await bad([1], 'request body');
    expect((await call(svc.base, '/api/v1/schema/retention?uuid=SCHEMA22222222', { method: 'PUT', body: {} })).status).toBe(404);
  });

  it('/metrics shows the free space, the size and the reserve of the store filesystem', async () => {
    const text = (await call(svc.base, '/metrics')).text;
    const value = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    expect(value('edge_store_disk_free_bytes')).toBeGreaterThan(0);
    expect(value('edge_store_disk_total_bytes')).toBeGreaterThanOrEqual(value('edge_store_disk_free_bytes'));
    expect(value('edge_store_disk_reserve_bytes')).toBe(268435456);
  });
});
