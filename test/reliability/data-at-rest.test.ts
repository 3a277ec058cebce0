/**
 * Data at rest edited outside the API: a models.json whose attributes no longer match what the store
 * wrote never brings values back under the wrong names. That model stays closed (503 naming it and the
 * stored attribute order), the other models serve.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SECRET, call, configIn, payload, pushNdjson, setupPipeline, startService, writeConfig } from './support/service.mjs';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { StateError } from '../../src/errors.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-at-rest-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('attribute order kept by the store', () => {
  it('a log reopened in another order reads each value under its own name; a field without a stored column is refused', async () => {
    const rootDir = path.join(tmp, 'store');
    let store = await Store.open(storeOptions({ rootDir }));
    (await store.openModel('m', { fields: ['v', 's'] })).save({ v: 1, s: 2 });
    await store.close();
    store = await Store.open(storeOptions({ rootDir }));
    await expect(store.openModel('m', { fields: ['v', 's', 'x'] })).rejects.toThrow(/the attributes x have no stored column \(stored: v, s\)/);
    const log = await store.openModel('m', { fields: ['s', 'v'] });
    expect(log.latest()).toEqual({ id: 1, create_at: expect.any(Number), s: 2, v: 1 });
    expect(Object.keys(log.latest() ?? {})).toEqual(['id', 'create_at', 's', 'v']);
    await store.close();
  });

  it('a log reopened with another type for an attribute is refused, naming it and the stored columns', async () => {
    const rootDir = path.join(tmp, 'typed');
    let store = await Store.open(storeOptions({ rootDir }));
    (await store.openModel('m', { fields: ['v', 's'], types: ['INTEGER', 'STRING'] })).save({ v: 1, s: 'a' });
    await store.close();
    store = await Store.open(storeOptions({ rootDir }));
    await expect(store.openModel('m', { fields: ['v', 's'], types: ['STRING', 'STRING'] })).rejects.toThrow(
      /the attributes v \(STRING\) have no stored column \(stored: v \(INTEGER\), s \(STRING\)\)/,
    );
    expect((await store.openModel('m', { fields: ['v', 's'], types: ['INTEGER', 'STRING'] })).latest()).toMatchObject({ v: 1, s: 'a' });
    await store.close();
  });

  it('a FIELDS file of format 1 (names only) gains the types at the next open, then guards them', async () => {
    const rootDir = path.join(tmp, 'format1');
    let store = await Store.open(storeOptions({ rootDir }));
    (await store.openModel('m', { fields: ['v'] })).save({ v: 1 });
    await store.close();
    const fieldsFile = path.join(rootDir, 'm', 'FIELDS');
    fs.writeFileSync(fieldsFile, `${JSON.stringify({ format: 1, fields: ['v'] })}\n`);
    store = await Store.open(storeOptions({ rootDir }));
    await store.openModel('m', { fields: ['v'], types: ['FLOAT'] });
    await store.close();
    expect(JSON.parse(fs.readFileSync(fieldsFile, 'utf8'))).toEqual({ format: 2, fields: ['v'], types: ['FLOAT'] });
    store = await Store.open(storeOptions({ rootDir }));
    await expect(store.openModel('m', { fields: ['v'], types: ['BOOL'] })).rejects.toThrow(StateError);
    await store.close();
  });

  it('a retyped attribute in models.json closes that model with a 503 naming the attribute', async () => {
    const { file, dataDir } = configIn(tmp, 'retyped');
    let svc = await startService(file);
    const p = await setupPipeline(svc.base, 'typed');
    expect((await pushNdjson(svc.base, p, [payload(7, 1, 0, 3)])).status).toBe(200);
    await svc.kill('SIGTERM');
    const modelsFile = path.join(dataDir, 'models.json');
    const state = JSON.parse(fs.readFileSync(modelsFile, 'utf8'));
    const attr = state.models.find((m: { uuid: string }) => m.uuid === p.model).attributes.find((a: { name: string }) => a.name === 'temp');
    const storedType = attr.type;
    attr.type = storedType === 'STRING' ? 'INTEGER' : 'STRING';
    fs.writeFileSync(modelsFile, JSON.stringify(state));
    svc = await startService(file);
    try {
      const closed = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${p.model}&secrets=${SECRET}`, { token: null });
      expect(closed.status).toBe(503);
      expect(closed.body.msg).toContain(`the attributes temp (${attr.type}) have no stored column`);
      expect(closed.body.msg).toContain(`temp (${storedType})`);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);

  it('a reordered models.json reads every value under its own name; a renamed attribute closes that model with a 503', async () => {
    const { file, dataDir } = writeConfig(tmp);
    let svc = await startService(file);
    const a = await setupPipeline(svc.base, 'a');
    const b = await setupPipeline(svc.base, 'b');
    for (const p of [a, b]) expect((await pushNdjson(svc.base, p, [payload(7, 1, 0, 3)])).status).toBe(200);
    await svc.kill('SIGTERM');
    const modelsFile = path.join(dataDir, 'models.json');
    const state = JSON.parse(fs.readFileSync(modelsFile, 'utf8'));
    state.models.find((m: { uuid: string }) => m.uuid === a.model).attributes.reverse();
    state.models.find((m: { uuid: string }) => m.uuid === b.model).attributes[0].name = 'temperature';
    fs.writeFileSync(modelsFile, JSON.stringify(state));
    svc = await startService(file);
    try {
      const read = (model: string) => call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}`, { token: null });
      const reordered = await read(a.model);
      expect(reordered.status).toBe(200);
      expect(reordered.body.data).toMatchObject({ temp: 7, resistivity: 1, conductivity: 7, dissolved_oxygen: 0, ph_value: 3 });
      expect(Object.keys(reordered.body.data).slice(2)).toEqual(['ph_value', 'dissolved_oxygen', 'conductivity', 'resistivity', 'temp']);
      const closed = await read(b.model);
      expect(closed.status).toBe(503);
      expect(closed.body.msg).toContain(b.model);
      expect(closed.body.msg).toContain('the attributes temperature (FLOAT) have no stored column');
      expect(svc.log.some((l) => l.includes('cannot be opened'))).toBe(true);
      const health = await call(svc.base, '/healthz', { token: null });
      expect(health.status).toBe(200);
      expect(health.body.data.status).toBe('degraded');
      expect(health.body.data.reasons).toEqual([expect.stringContaining(`model b (${b.model}) cannot be opened`)]);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);
});

describe('recovery findings reach the operator and stay until acknowledged', () => {
  it('a cut tail and a corrupt record: warn log, /metrics, schema/detail across restarts, then acknowledged', async () => {
    const { file, dataDir } = configIn(tmp, 'findings');
    let svc = await startService(file);
    const p = await setupPipeline(svc.base, 'plant');
    const lines = Array.from({ length: 20 }, (_, i) => payload(i + 1, 1, i, 1));
    expect((await pushNdjson(svc.base, p, lines)).status).toBe(200);
    await svc.kill('SIGTERM');
    const seg = path.join(dataDir, 'store', p.model, 'seg-0000000001.log');
    const bytes = fs.readFileSync(seg);
    const fifth = frameStarts(bytes)[4];
    bytes[fifth + 30] ^= 0x10; // a payload byte of id 5: found by the first read of it
    fs.writeFileSync(seg, Buffer.concat([bytes, Buffer.alloc(100, 0xab)])); // and a garbage tail: cut at open

    svc = await startService(file);
    const detail = async () => (await call(svc.base, `/api/v1/schema/detail?uuid=${p.model}`)).body.data;
    const metric = async (name: string) => {
      const text = (await call(svc.base, '/metrics')).text;
      return Number(new RegExp(`^${name}\\{model="${p.model}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    expect(svc.log.some((l) => l.includes('"level":40') && l.includes(p.model) && l.includes('plant') && l.includes('cut 100 bytes'))).toBe(true);
    expect((await detail()).recovery).toMatchObject({ truncatedBytes: 100, lostIds: 0 });
    const page = await call(svc.base, `/api/v1/datacenter/queryDataList?uuid=${p.model}&secrets=${SECRET}&size=100&order=asc`, { token: null });
    expect(page.body.data.records.map((r: { id: number }) => r.id)).not.toContain(5);
    expect((await detail()).recovery).toMatchObject({ truncatedBytes: 100, lostIds: 1, lostRanges: [{ fromId: 5, toId: 5 }] });
    expect(await metric('edge_store_recovery_truncated_bytes')).toBe(100);
    expect(await metric('edge_store_recovery_lost_ids')).toBe(1);

    await svc.kill('SIGTERM');
    svc = await startService(file); // a clean open finds nothing new; the findings are still shown
    expect((await detail()).recovery).toMatchObject({ truncatedBytes: 100, lostIds: 1 });
    expect((await call(svc.base, `/api/v1/schema/recovery/ack?uuid=${p.model}`, { method: 'POST' })).status).toBe(200);
    expect((await detail()).recovery).toBeUndefined();
    expect(await metric('edge_store_recovery_lost_ids')).toBe(0);
    await svc.kill('SIGTERM');
    svc = await startService(file);
    expect((await detail()).recovery).toBeUndefined();
    await svc.kill('SIGTERM');
  }, 60_000);
});

/** Offsets of the frames of a segment file, walking the length words. */
function frameStarts(b: Buffer): number[] {
  const out: number[] = [];
  for (let off = 32; off + 8 <= b.length; off += b.readUInt32LE(off) + 8) out.push(off);
  return out;
}

describe('a published model whose data directory is gone', () => {
  it('stays closed with a 503 that says how to recover, instead of opening empty with ids from 1', async () => {
    const { file, dataDir } = configIn(tmp, 'gone');
    let svc = await startService(file);
    const p = await setupPipeline(svc.base, 'lost');
    expect((await pushNdjson(svc.base, p, [payload(1, 1, 0, 1)])).status).toBe(200);
    await svc.kill('SIGTERM');
    fs.rmSync(path.join(dataDir, 'store', p.model), { recursive: true });
    svc = await startService(file);
    try {
      const last = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${p.model}&secrets=${SECRET}`, { token: null });
      expect(last.status).toBe(503);
      expect(last.body.msg).toContain(`its data directory ${path.join(dataDir, 'store', p.model)} is missing`);
      // Refused, not failed: the device keeps the record until the operator has recovered the model.
      const refused = await pushNdjson(svc.base, p, [payload(2, 2, 0, 1)]);
      expect(refused.status).toBe(503);
      expect(refused.body.data).toMatchObject({ accepted: 0, failed: 1, kept: [] });
      expect((await call(svc.base, `/api/v1/schema/fix?uuid=${p.model}&confirm=true`, { method: 'POST' })).status).toBe(200);
      expect((await call(svc.base, `/api/v1/schema/publish?uuid=${p.model}`, { method: 'POST' })).status).toBe(200);
      const fresh = await call(svc.base, `/api/v1/datacenter/queryLastData?uuid=${p.model}&secrets=${SECRET}`, { token: null });
      expect(fresh.status).toBe(200);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);
});
