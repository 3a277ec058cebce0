/**
 * The wire format's hot path (line-buffer.ts) prints exactly what JSON.stringify of the envelope and the
 * attributes would, in UTF-8, and counts each line's length as that string's, and the batch boundaries (batching.ts) depend on the batch's first
 * id and the records only, never on how much was read at once.
 */
import { describe, expect, it } from 'vitest';
import { LineBuffer } from '../../src/uplink/line-buffer.js';
import { BATCH_BYTES_MAX, BATCH_RECORDS_MAX, SLOT_MS, cutBatch } from '../../src/uplink/batching.js';
import type { RecordView } from '../../src/store/types.js';

const m = { gateway: 'gw-1', model: 'SCHEMA1', generation: 'ab"cd' };

function reference(r: RecordView): string {
  const line: Record<string, unknown> = { gateway: m.gateway, model: m.model, generation: m.generation, id: r.id, create_at_ms: r.create_at };
  for (const key of Object.keys(r)) if (key !== 'id' && key !== 'create_at' && !(key in line)) line[key] = r[key];
  return JSON.stringify(line);
}

describe('record lines', () => {
  it('equal JSON.stringify of the envelope and the attributes, for every kind of value', () => {
    const lines = new LineBuffer(m);
    const records: RecordView[] = [
      { id: 1, create_at: 1700000000000, temp: 21.5, n: -0, big: 1e21, small: 5e-7, ok: true, off: false, none: null },
      { id: 2, create_at: 1700000000001, text: 'quote " backslash \\ newline \n tab \t é 😀 \u2028', nan: Number.NaN, inf: Number.POSITIVE_INFINITY },
      { id: 3, create_at: 1700000000002, geo: { lat: 1.5, lng: -2 }, list: [1, 'a', null], gone: undefined, 'we"ird key': 1 },
      { id: 4, create_at: 1700000000003, gateway: 'spoofed', model: 'x', generation: 'y', create_at_ms: 5, value: 7 },
      { id: 5, create_at: 1700000000004, text: `${'ü'.repeat(100)} lone \ud800 surrogate`, long: 'y'.repeat(600_000) },
      { id: 6, create_at: 1700000000005, temp: 21.5, 'we"ird key': 2, ok: false },
    ];
    // One line at a time, then all at once: the body is the lines joined by '\n'.
    for (const r of records) {
      expect(lines.lengthOf(r, 0)).toBe(reference(r).length);
      const line = lines.take(1).toString('utf8');
      expect(line).toBe(reference(r));
      expect(() => JSON.parse(line) as unknown).not.toThrow();
    }
    records.forEach((r, i) => lines.lengthOf(r, i));
    expect(lines.take(2).toString('utf8')).toBe(records.slice(0, 2).map(reference).join('\n'));
    expect(lines.take(records.length - 2).toString('utf8')).toBe(records.slice(2).map(reference).join('\n'));
    expect(lines.count).toBe(0);
  });

  it('print every number as JSON.stringify does (integers and short decimals are printed without String)', () => {
    const lines = new LineBuffer(m);
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
    for (let i = 0; i < values.length; i += 50) {
      const r: RecordView = { id: i + 1, create_at: 1764227000000 + i };
      values.slice(i, i + 50).forEach((v, k) => (r[`v${k}`] = v));
      expect(lines.lengthOf(r, 0)).toBe(reference(r).length);
      expect(lines.take(1).toString('utf8')).toBe(reference(r));
    }
  });
});

function records(from: number, to: number, createAt: (id: number) => number): RecordView[] {
  const out: RecordView[] = [];
  for (let id = from; id <= to; id++) out.push({ id, create_at: createAt(id), v: id });
  return out;
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
    const cut = cutBatch(lo, ahead, aheadEnd, (r) => JSON.stringify(r).length);
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
