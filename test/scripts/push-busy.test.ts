/**
 * A push that meets a model which refuses writes for a moment (an import holds them, a restore swaps the
 * model in) answers 503 with Retry-After and the lines kept, as a push that meets a read-only store does:
 * a device that checks only the status resends, and resending exactly the failed lines stores each
 * record once. The import over HTTP against the real service (its upload held open); the restore swap
 * in process, held at the store's adoptReady.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { EdgeError } from '../../src/errors.js';
import { ModelTransfers } from '../../src/models/backup.js';
import { call, type Answer } from '../support/client.js';
import { ADMIN, startService, type TestService } from '../support/service.js';
import { sleep } from '../store/helpers.js';
import { SAMPLE_MODEL_ATTRIBUTES, inputWithRule, modbusPayload, openHarness, sampleScript, type Harness } from './helpers.js';

let s: TestService | undefined;
let h: Harness | undefined;
afterEach(async () => {
  await s?.close();
  await h?.close();
  s = undefined;
  h = undefined;
});

async function ok(base: string, path: string, init: Parameters<typeof call>[2] = {}): Promise<any> {
  const r = await call(base, path, init);
  expect(r.status, `${path}: ${r.text}`).toBe(200);
  return r.body.data;
}

/** A published model `temp` and an HTTP input whose rule saves each payload's `temp` into it. */
async function modelWithInput(base: string): Promise<{ model: string; inend: string; token: string }> {
  const model = (await ok(base, '/api/v1/schema/create', { method: 'POST', body: { name: 'tank' } })).uuid;
  await ok(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, name: 'temp', type: 'FLOAT' } });
  await ok(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' });
  const input = await ok(base, '/api/v1/inends/create', { method: 'POST', body: { name: 'plc', type: 'HTTP', description: '' } });
  const actions = `Actions = { function(args)
    local t = json:J2T(args)
    local err = rds:Save("${model}", { temp = t.temp })
    if err ~= nil then Throw(err) end
    return true, args
  end }`;
  await ok(base, '/api/v1/rules/create', { method: 'POST', body: { name: 'store', fromSource: [input.uuid], actions, success: '', failed: '' } });
  return { model, inend: input.uuid, token: input.token };
}

/** An import whose upload stays open until `end` is called: the model's writes are held meanwhile. */
function openImport(s: TestService, model: string, firstRow: string): { end(lastRow: string): void; answer: Promise<{ status: number; text: string }> } {
  let req!: http.ClientRequest;
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req = http.request(
      { host: '127.0.0.1', port: s.port, method: 'POST', path: `/api/v1/datacenter/importData?uuid=${model}&format=jsonl`, headers: { Authorization: `Bearer ${ADMIN}` } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
  });
  req.write(`${firstRow}\n`);
  // A test that fails while the upload is open leaves it to the service's close: no unhandled error then.
  answer.catch(() => undefined);
  return { end: (lastRow) => req.end(`${lastRow}\n`), answer };
}

const line = (temp: number): string => JSON.stringify({ temp });

describe('a push refused for a moment answers 503 with Retry-After and the lines kept', () => {
  it('while an import holds the model\'s writes; the failed lines resent after it are stored once', async () => {
    s = await startService({ logLevel: 'silent' });
    const { model, inend, token } = await modelWithInput(s.base);
    const push = (temps: number[]): Promise<Answer> =>
      call(s!.base, `/api/v1/inends/push?uuid=${inend}`, { method: 'POST', body: temps.map(line).join('\n'), token, headers: { 'Content-Type': 'application/x-ndjson' } });

    const upload = openImport(s, model, JSON.stringify({ create_at: '2030-01-01T00:00:00Z', temp: 1000 }));
    // Pushes go on until the import holds the writes; those stored before are part of what it copies.
    const stored: number[] = [];
    let refused: Answer | undefined;
    for (let temp = 1; temp <= 200 && refused === undefined; temp++) {
      const r = await push([temp]);
      if (r.status === 200 && r.body.data.failed === 0) stored.push(temp);
      else refused = r;
      await sleep(10);
    }
    expect(refused, 'no push was refused while the import ran').toBeDefined();
    expect(refused!.status, refused!.text).toBe(503);
    expect(refused!.headers.get('retry-after')).toBe('5');
    expect(refused!.body.msg).toContain('an import is running');
    expect(refused!.body.data).toEqual({ accepted: 0, failed: 1, kept: [] });
    const failedFirst = stored.length + 1;

    const many = await push([501, 502, 503]);
    expect(many.status, many.text).toBe(503);
    expect(many.headers.get('retry-after')).toBe('5');
    expect(many.body.data).toEqual({ accepted: 0, failed: 3, kept: [] });

    upload.end(JSON.stringify({ create_at: '2030-01-01T00:00:01Z', temp: 1001 }));
    const imported = await upload.answer;
    expect(imported.status, imported.text).toBe(200);
    const resent = await push([failedFirst, 501, 502, 503]);
    expect(resent.status, resent.text).toBe(200);
    expect(resent.body.data).toMatchObject({ accepted: 4, failed: 0 });

    const temps: number[] = [];
    for await (const r of s.registry.log(model).iterate()) temps.push(r.temp as number);
    expect(temps).toEqual([...stored, 1000, 1001, failedFirst, 501, 502, 503]);
  });

  it('while a restore swaps the model in; the failed lines resent after it are stored once', async () => {
    h = await openHarness({ workers: 1 });
    const model = await h.model(SAMPLE_MODEL_ATTRIBUTES);
    const { inend } = await inputWithRule(h, await sampleScript(model));
    const payload = (t: number): string => modbusPayload({ t1: t, t2: t, t3: t });
    expect(await h.engine.push(inend, [payload(1)])).toMatchObject({ accepted: 1, failed: 0 });

    const transfers = new ModelTransfers(h.store, h.registry);
    let backup = '';
    for await (const chunk of transfers.backup(model).chunks) backup += chunk;
    // The swap takes milliseconds; here it waits at adoptReady, after the registry closed the model's log.
    const store = h.store;
    const adoptReady = store.adoptReady.bind(store);
    let swapping!: () => void;
    const swapStarted = new Promise<void>((resolve) => (swapping = resolve));
    let finishSwap!: () => void;
    const swapMayFinish = new Promise<void>((resolve) => (finishSwap = resolve));
    store.adoptReady = async (modelId) => {
      swapping();
      await swapMayFinish;
      return adoptReady(modelId);
    };
    const restored = transfers.restore(
      (async function* () {
        yield Buffer.from(backup);
      })(),
      { replace: true },
    );
    await swapStarted;

    const refused = await h.engine.push(inend, [payload(2), payload(3)]).then(
      () => undefined,
      (e: unknown) => e as EdgeError,
    );
    expect(refused, 'the push was not refused').toBeDefined();
    expect(refused!.status).toBe(503);
    expect(refused!.code).toBe('ERR_PUSH_REFUSED');
    expect(refused!.headers()['Retry-After']).toBeDefined();
    expect(refused!.message).toContain('is being restored');
    expect(refused!.data).toEqual({ accepted: 0, failed: 2, kept: [] });

    finishSwap();
    expect(await restored).toMatchObject({ records: 1 });
    expect(await h.engine.push(inend, [payload(2), payload(3)])).toMatchObject({ accepted: 2, failed: 0 });
    expect((await h.records(model)).map((r) => r.temp)).toEqual([1, 2, 3]);
  });
});
