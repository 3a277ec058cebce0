/**
 * Contract 18, "messages meant for people name models ... by name and uuid": a record that rds:Save
 * refuses for one of its values names the model it was written to, in the push answer, `rules/stats` and
 * a dry run: `model NAME (UUID): attribute 't' expects FLOAT, got string`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';

let svc: TestService;
let model: string;
let inend: string;
let token: string;
let rule: string;
let actions: string;

async function must(path: string, body?: unknown): Promise<any> {
  const r = await call(svc.base, path, body === undefined ? {} : { method: 'POST', body });
  expect(r.status, r.text).toBe(200);
  return r.body.data;
}

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent' });
  ({ uuid: model } = await must('/api/v1/schema/create', { name: 'boiler' }));
  await must('/api/v1/schema/properties/create', { schemaId: model, name: 't', type: 'FLOAT' });
  await must(`/api/v1/schema/publish?uuid=${model}`, {});
  ({ uuid: inend, token } = await must('/api/v1/inends/create', { name: 'plc', type: 'HTTP', description: '' }));
  actions = `Actions = {
  function(args)
    local err = rds:Save("${model}", { t = args })
    if err ~= nil then Throw(err) return 0 end
    return true, args
  end
}`;
  ({ uuid: rule } = await must('/api/v1/rules/create', { name: 'store t', description: '', fromSource: [inend], actions, success: '', failed: '' }));
}, 60_000);
afterAll(async () => svc?.close());

describe('a refused value names the model it was written to (contract 18)', () => {
  it('in the push answer and rules/stats', async () => {
    const r = await call(svc.base, `/api/v1/inends/push?uuid=${inend}`, { method: 'POST', token, body: 'hot' });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data.errors).toEqual([
      { index: 0, message: `rule store t (${rule}): line 4: model boiler (${model}): attribute 't' expects FLOAT, got string` },
    ]);
    const stats = await must(`/api/v1/rules/stats?uuid=${rule}`);
    expect(stats.lastErrors.map((e: { message: string }) => e.message)).toEqual([`model boiler (${model}): attribute 't' expects FLOAT, got string`]);
  });

  it('in a dry run', async () => {
    const r = await must('/api/v1/rules/dryRun', { actions, payload: 'hot' });
    expect(r.errors).toEqual([{ index: 0, line: 4, message: `model boiler (${model}): attribute 't' expects FLOAT, got string` }]);
  });
});
