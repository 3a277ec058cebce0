/**
 * The lines the store prints for the uplink (ModelLog.lines in lineFormat, kept by line-buffer.ts) are
 * exactly what JSON.stringify of the envelope and the attributes would print, in UTF-8, with each line's
 * length as that string's; the batch boundaries (batching.ts) depend on the batch's first id and the
 * records only, never on how much was read at once.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { LineBuffer } from '../../src/uplink/line-buffer.js';
import { BATCH_BYTES_MAX, BATCH_RECORDS_MAX, SLOT_MS, cutBatch, type AheadLines } from '../../src/uplink/batching.js';
import type { RecordView } from '../../src/store/base/types.js';

let dir: string;
let store: Store;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'uplink-message-'));
  store = await Store.open(storeOptions({ rootDir: dir, durability: 'none', syncIntervalMs: 100 }));
});

afterAll(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const m = { gateway: 'gw-1', model: 'SCHEMA1', generation: 'ab"cd' };

function reference(r: RecordView): string {
  const line: Record<string, unknown> = { gateway: m.gateway, model: m.model, generation: m.generation, id: r.id, create_at_ms: r.create_at };
  for (const key of Object.keys(r)) if (key !== 'id' && key !== 'create_at' && !(key in line)) line[key] = r[key];
  return JSON.stringify(line);
}

describe('record lines', () => {
  it('equal JSON.stringify of the envelope and the attributes, for every kind of value; a batch body is the first lines joined', async () => {
    const log = await store.openModel('kinds', { fields: ['temp', 'n', 'text', 'ok', 'none', 'geo', 'we"ird key', 'gateway', 'create_at_ms'] });
    const rows: Array<Record<string, unknown>> = [
      { temp: 21.5, n: -0, text: 'plain', ok: true, none: null, geo: 1e21 },
      { temp: 5e-7, n: Number.NaN, text: 'quote " backslash \\ newline \n tab \t é 😀 \u2028', ok: false, geo: Number.POSITIVE_INFINITY },
      { temp: 1, n: 2, text: 'x', geo: { lat: 1.5, lng: -2 }, 'we"ird key': [1, 'a', null] },
      { temp: 7, gateway: 'spoofed', create_at_ms: 5 },
      { text: `${'ü'.repeat(100)} lone \ud800 surrogate`, geo: 'y'.repeat(600_000) },
    ];
    for (const r of rows) log.save(r);
    const lines = new LineBuffer(m);
    const expected = (await log.page({ current: 1, size: 10, order: 'asc' })).records.map(reference);
    lines.append(await log.lines(1, 3, lines.format));
    expect(lines.ids).toEqual([1, 2, 3]);
    expect(lines.take(2).toString('utf8')).toBe(expected.slice(0, 2).join('\n'));
    // A read continues the lines held.
    lines.append(await log.lines(4, rows.length, lines.format));
    expect(lines.ids).toEqual([3, 4, 5]);
    expect(lines.chars).toEqual(expected.slice(2).map((l) => l.length));
    expect(lines.take(3).toString('utf8')).toBe(expected.slice(2).join('\n'));
    for (const line of expected) expect(() => JSON.parse(line) as unknown).not.toThrow();
  });

  it('print every number as JSON.stringify does', async () => {
    const keys = Array.from({ length: 50 }, (_, k) => `v${k}`);
    const log = await store.openModel('numbers', { fields: keys });
    let seed = 14;
    const random = (): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const values: number[] = [0, -0, 1, -1, 0.1, 0.7, -0.7, 1.1, 4.35, 1013.25, 99.99, 9.9999, 0.0001, 0.00001, 1e-7, 2 ** 31, 2 ** 33 - 0.5, 2 ** 33 + 0.5];
    values.push(2 ** 53 - 1, 2 ** 53, 2 ** 53 + 2, 1e21, 1e22, 123456789012.3456, 1764227000000, Number.MAX_VALUE, Number.MIN_VALUE, 0.1 + 0.2);
    for (let i = 0; i < 20_000; i++) {
      const digits = Math.floor(random() * 7);
      const magnitude = 10 ** Math.floor(random() * 14);
      const sign = random() < 0.3 ? -1 : 1;
      values.push(sign * (Math.floor(random() * magnitude * 10 ** digits) / 10 ** digits));
      values.push(sign * random() * magnitude);
    }
    for (let i = 0; i < values.length; i += 50) log.save(Object.fromEntries(values.slice(i, i + 50).map((v, k) => [keys[k], v])));
    const lines = new LineBuffer(m);
    for (let from = 1; from <= log.idRange().lastId; from += 500) {
      const expected = (await log.page({ current: (from - 1) / 500 + 1, size: 500, order: 'asc' })).records.map(reference);
      lines.append(await log.lines(from, from + 499, lines.format));
      expect(lines.chars).toEqual(expected.map((l) => l.length));
      expect(lines.take(expected.length).toString('utf8')).toBe(expected.join('\n'));
    }
  });
});

function records(from: number, to: number, createAt: (id: number) => number): RecordView[] {
  const out: RecordView[] = [];
  for (let id = from; id <= to; id++) out.push({ id, create_at: createAt(id), v: id });
  return out;
}

function aheadOf(records: RecordView[]): AheadLines {
  return { ids: records.map((r) => r.id as number), createAtMs: records.map((r) => r.create_at as number), chars: records.map((r) => JSON.stringify(r).length) };
}

/** Every batch from `lo` on, reading `readSize` ids at a time as the shipper does. */
function batches(all: RecordView[], lo: number, readSize: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  const last = all[all.length - 1].id as number;
  let ahead: RecordView[] = [];
  let aheadEnd = lo - 1;
  while (lo <= last) {
    const want = Math.min(last, lo + BATCH_RECORDS_MAX - 1, aheadEnd + readSize);
    ahead = ahead.concat(all.filter((r) => (r.id as number) > aheadEnd && (r.id as number) <= want));
    aheadEnd = want;
    const cut = cutBatch(lo, aheadOf(ahead), aheadEnd);
    if (cut.open && aheadEnd < last) continue; // more to read before the batch can close
    out.push([lo, cut.lastId]);
    ahead = ahead.slice(cut.count);
    lo = cut.lastId + 1;
  }
  return out;
}

describe('batch boundaries', () => {
  it('end at a change of slot, at the id limit or at the byte limit, whatever was read at once', () => {
    // 10 records per millisecond: a slot holds 10 * SLOT_MS records, more than a batch may.
    const all = records(1, 5000, (id) => 1_000_000 + Math.floor(id / 10));
    const bySlots = batches(all, 1, 5000);
    for (const size of [1, 7, 100, 999]) expect(batches(all, 1, size)).toEqual(bySlots);
    for (const [lo, hi] of bySlots) expect(hi - lo + 1).toBeLessThanOrEqual(BATCH_RECORDS_MAX);
    // A restart from a batch start (the cursor) cuts the same batches from there on.
    const [restartAt] = bySlots[3];
    expect(batches(all, restartAt, 50)).toEqual(bySlots.slice(3));
    // Slow records: one batch per slot.
    const slow = records(1, 100, (id) => id * (SLOT_MS / 4));
    expect(batches(slow, 1, 3).every(([lo, hi]) => hi - lo + 1 <= 4)).toBe(true);
    // Large records: cut at the byte limit.
    const large = records(1, 300, () => 5).map((r) => ({ ...r, blob: 'x'.repeat(4096) }));
    const cuts = batches(large, 1, 300);
    expect(cuts.length).toBeGreaterThan(1);
    expect((cuts[0][1] - cuts[0][0] + 1) * 4100).toBeGreaterThanOrEqual(BATCH_BYTES_MAX);
  });
});
