/**
 * Contract 13 and 4 over HTTP: a record written while an attribute was deleted never received it, so once
 * an attribute of the same name and type is added again it reads that attribute's default, not null;
 * records written before the deletion read their old values. Both places a deleted column can take: among
 * the columns others read after it, and the last. Records are saved as a rule saves them (checked against
 * the model of the moment, registry.check, then appended). Every read path: a page, the latest record,
 * an export.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { admin, call, query } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
}, 60_000);
afterAll(async () => svc?.close());

async function must(r: Promise<{ status: number; text: string; body: any }>): Promise<any> {
  const a = await r;
  expect(a.status, a.text).toBe(200);
  return a.body.data;
}

const addAttribute = (schemaId: string, name: string, type: string, rule?: Record<string, unknown>) =>
  must(admin(svc.port, 'POST', '/api/v1/schema/properties/create', { schemaId, name, type, ...(rule ? { rule } : {}) }));

/** As rds:Save: checked against the model now, then appended. */
function save(model: string, input: Record<string, unknown>): void {
  const check = svc.registry.check(model, input, 'save');
  if (!check.ok) throw new Error(check.error);
  svc.registry.log(model).save(check.record);
}

async function readsOf(model: string, name: string): Promise<{ page: unknown[]; latest: unknown; exported: unknown[] }> {
  const page = (await must(query(svc.base, `/api/v1/datacenter/queryDataList?uuid=${model}&size=100&order=asc`))).records;
  const latest = (await must(query(svc.base, `/api/v1/datacenter/queryLastData?uuid=${model}`)))[name];
  const r = await call(svc.base, `/api/v1/datacenter/exportData?uuid=${model}&format=jsonl`);
  expect(r.status, r.text).toBe(200);
  const exported = r.text.trimEnd().split('\n').map((l) => JSON.parse(l)[name]);
  return { page: page.map((x: Record<string, unknown>) => x[name]), latest, exported };
}

describe('an attribute deleted and added again (contract 13)', () => {
  for (const place of ['among others', 'last'] as const) {
    it(`(${place}): records written while it was absent read its default, older ones their values`, async () => {
      const model = (await must(admin(svc.port, 'POST', '/api/v1/schema/create', { name: `readd ${place}`, description: '' }))).uuid;
      await addAttribute(model, 'temp', 'FLOAT');
      const note = (await addAttribute(model, 'note', 'STRING', { defaultValue: '' })).uuid;
      if (place === 'among others') await addAttribute(model, 'level', 'INTEGER');
      await must(admin(svc.port, 'POST', `/api/v1/schema/publish?uuid=${model}`));
      save(model, { temp: 1, note: 'before' });

      await must(admin(svc.port, 'DELETE', `/api/v1/schema/properties/del?uuid=${note}`));
      save(model, { temp: 2 });
      await addAttribute(model, 'note', 'STRING', { defaultValue: '' });

      const expected = ['before', ''];
      expect(await readsOf(model, 'note')).toEqual({ page: expected, latest: '', exported: expected });
    });
  }
});
