/**
 * ModelLog.lines prints records as lines of a caller's envelope from the stored bytes (record-lines.ts);
 * each line must be, byte for byte, what the reference path prints from the record `page` decodes
 * (referenceLine, how the uplink printed its lines before), with its length as a string, id and
 * create_at. A read is one plan: ids retention removes are only ever missing at its start, frames it
 * finds corrupt are skipped and reported, and it stops at its limits saying where (throughId).
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { referenceLine, type LineFormat, type RecordLines } from '../../src/store/read/record-lines.js';
import { LINES_RECORDS_MAX, PAGE_BYTES_MAX } from '../../src/store/base/constants.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { RecordView } from '../../src/store/base/types.js';
import { prng } from '../support/prng.js';
import { frameOffsets, openModel, openStore, range, rec, removeTmpDirs, segFiles, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

/** Non-ASCII in the envelope, and fields named like its keys, which are not printed. */
const FORMAT: LineFormat = {
  head: '{"gateway":"gw-\u00fc\ud83d\ude80","model":"m","generation":"g\\"1","id":',
  createAtKey: ',"create_at_ms":',
  omit: new Set(['gateway', 'model', 'generation', 'create_at_ms']),
};

async function records(log: ModelLog, fromId: number, toId: number): Promise<RecordView[]> {
  const out: RecordView[] = [];
  for await (const r of log.iterate({ fromId, toId })) out.push(r);
  return out;
}

/** The lines as the reference prints them from the decoded records, and the read's other columns. */
function expectReference(got: RecordLines, expected: RecordView[], format = FORMAT): void {
  const lines = expected.map((r) => referenceLine(format, r));
  expect(got.text.toString('utf8')).toBe(lines.map((l) => `${l}\n`).join(''));
  expect(Buffer.compare(got.text, Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8'))).toBe(0);
  expect(got.chars).toEqual(lines.map((l) => l.length));
  expect(got.ids).toEqual(expected.map((r) => r.id));
  expect(got.createAtMs).toEqual(expected.map((r) => r.create_at));
  let end = -1;
  expect(got.ends).toEqual(lines.map((l) => (end += Buffer.byteLength(l) + 1)));
}

const LONG = 'x'.repeat(70);
/** Strings JSON.stringify prints as they are, strings it escapes, and strings whose stored bytes only a decoder can read. */
const STRINGS = [
  '', 'ok', 'say "hi"', 'back\\slash', 'line\nbreak\r\n', '\u0000\u001f\u007f', 'caf\u00e9 \u6e29\u5ea6 \u2028', '\ud83d\ude80 rocket',
  'lone \ud800 high', `lone long \ud800 ${LONG}`, '\ufeffbom first', `mid \ufeff bom`, '\u00e9'.repeat(300), 'q'.repeat(70_000),
];
const NUMBERS = [
  0, -0, 1, 127, 128, 65536, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 1e21, -1, -33, -129, -(2 ** 31) - 1, -(2 ** 53), 0.1, -0.5,
  29.990000000000002, 1013.25, 1e-7, 5e-324, Number.MAX_VALUE, NaN, Infinity, -Infinity,
];
const OTHER = [null, true, false, undefined, { a: 1, b: 'two' }, [1, 'x', null], Buffer.from([1, 2, 3])];

function pick<T>(rand: () => number, values: readonly T[]): T {
  return values[Math.floor(rand() * values.length)];
}

describe('ModelLog.lines', () => {
  it('prints every value type as the reference does, with each line length as a string', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 4096 });
    const log = await store.openModel('m', { fields: ['s', 'gateway', 'n', 'f', 'create_at_ms', 'b'] });
    const all = [...STRINGS, ...NUMBERS, ...OTHER];
    for (const s of STRINGS) log.save({ s, gateway: 'spoofed', n: 1, f: 0.5, create_at_ms: 5, b: true });
    for (const n of NUMBERS) log.save({ s: 'n', n, f: n, b: false });
    for (const o of OTHER) log.save({ s: o, n: o, f: o, b: o });
    const rand = prng(14);
    for (let i = 0; i < 300; i++) log.save({ s: pick(rand, all), n: pick(rand, NUMBERS), f: pick(rand, all), b: pick(rand, [true, false, null]) });
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(3);
    const { lastId } = log.idRange();
    expectReference(await log.lines(1, lastId, FORMAT), await records(log, 1, lastId));
    for (const size of [1, 7, 64]) {
      for (let from = 1; from <= lastId; from += size) {
        const got = await log.lines(from, from + size - 1, FORMAT);
        expect(got.throughId).toBe(from + size - 1);
        expectReference(got, await records(log, from, from + size - 1));
      }
    }
    expect(await log.lines(lastId + 1, lastId + 10, FORMAT)).toMatchObject({ ids: [], throughId: lastId + 10 });
    await expect(log.lines(0, 5, FORMAT)).rejects.toThrow(/ids must be integers >= 1/);
    await store.close();
  });

  it('prints update-last records, what records written before a field existed read, and the lines after a change of fields', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048 });
    const log = await store.openModel('m', { fields: ['temp', 'label'], types: ['FLOAT', 'STRING'], defaults: [0, ''] });
    for (let i = 0; i < 40; i++) log.save({ temp: 20 + i / 3, label: `l${i}` });
    log.updateLast({ label: 'updated "last"' });
    const before = await log.lines(1, 40, FORMAT);
    expectReference(before, await records(log, 1, 40));
    log.setFields({ fields: ['temp', 'label', 'level', 'note'], types: ['FLOAT', 'STRING', 'INTEGER', 'STRING'], defaults: [0, '', 7, '\u00e9t\u00e9 "q"'] });
    for (let i = 0; i < 40; i++) log.save({ temp: i, label: `m${i}`, level: i, note: i % 2 ? 'odd' : '' });
    log.updateLast({ level: -5 });
    await log.durable();
    const after = await log.lines(1, 80, FORMAT);
    expectReference(after, await records(log, 1, 80));
    expect(after.text.toString()).toContain('"label":"updated \\"last\\"","level":7,"note":"\u00e9t\u00e9 \\"q\\""}');
    expect(after.text.toString()).toContain('"level":-5,');
    await store.close();
  });

  it('prints fields a for-in lists out of model order as the reference does', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('indexed', { fields: ['b', '10', 'a "q"'] });
    for (let i = 0; i < 5; i++) log.save({ b: i, '10': `ten${i}`, 'a "q"': i / 2 });
    const got = await log.lines(1, 5, FORMAT);
    expectReference(got, await records(log, 1, 5));
    expect(got.text.toString()).toMatch(/"create_at_ms":\d+,"10":"ten0","b":0,/);
    await store.close();
  });

  it('stops after LINES_RECORDS_MAX records or a page of stored bytes, and says where', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('m', { fields: ['blob'] });
    const blob = 'b'.repeat(9 * 1024);
    const big = Math.ceil(PAGE_BYTES_MAX / blob.length) + 10;
    for (let i = 0; i < big; i++) log.save({ blob: i < big - 5 ? blob : 'small' });
    await log.durable();
    const first = await log.lines(1, big, FORMAT);
    expect(first.throughId).toBeLessThan(Math.min(big, LINES_RECORDS_MAX));
    expect(first.ids).toEqual(range(1, first.throughId));
    const rest = await log.lines(first.throughId + 1, big, FORMAT);
    expect(rest.throughId).toBe(big);
    expectReference(rest, await records(log, first.throughId + 1, big));

    const many = await store.openModel('many', { fields: ['v'] });
    for (let i = 0; i < LINES_RECORDS_MAX + 10; i++) many.save({ v: i });
    const head = await many.lines(1, LINES_RECORDS_MAX + 10, FORMAT);
    expect(head.throughId).toBe(LINES_RECORDS_MAX);
    expect(head.ids).toEqual(range(1, LINES_RECORDS_MAX));
    expect((await many.lines(LINES_RECORDS_MAX + 1, LINES_RECORDS_MAX + 20, FORMAT)).ids).toEqual(range(LINES_RECORDS_MAX + 1, LINES_RECORDS_MAX + 10));
    await store.close();
  });

  it('a read across a retention removal: ids are missing only before the first stored id, a read under way keeps its whole plan', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 1000 });
    const log = await openModel(store);
    for (let i = 1; i <= 1000; i++) log.save(rec(i));
    await log.durable();
    // Planned before retention removes the head segments: it still reads them (its files are held).
    const underWay = log.lines(1, 600, FORMAT);
    log.setRetention({ maxRecords: 300, maxBytes: 0, maxAgeMs: 0 });
    await log.enforceRetention();
    const { firstId } = log.idRange();
    expect(firstId).toBeGreaterThan(600);
    expect((await underWay).ids).toEqual(range(1, 600));
    // Planned after: the removed ids are missing at the start only.
    const after = await log.lines(1, 1000, FORMAT);
    expect(after.ids).toEqual(range(firstId, 1000));
    expect(after.throughId).toBe(1000);
    expectReference(after, await records(log, firstId, 1000));
    expect((await log.lines(1, firstId - 1, FORMAT)).ids).toEqual([]);
    await store.close();
  });

  it('skips a corrupt frame of a sealed segment and reports its id lost', async () => {
    const dir = tmpDir();
    const store = await openStore(dir, { segmentBytesMax: 500, durability: 'none' });
    const log = await openModel(store);
    for (let i = 1; i <= 40; i++) log.save(rec(i));
    await store.close();
    const files = segFiles(`${dir}/m`);
    expect(files.length).toBeGreaterThan(3);
    const file = `${dir}/m/${files[1]}`;
    const victim = frameOffsets(`${dir}/m/${files[0]}`).length + 2;
    const b = fs.readFileSync(file);
    b[frameOffsets(file)[1] + 30] ^= 0x10; // in the payload: only the CRC tells
    fs.writeFileSync(file, b);
    const reopened = await openStore(dir, { segmentBytesMax: 500 });
    const damaged = await openModel(reopened);
    const got = await damaged.lines(1, 40, FORMAT);
    expect(got.ids).toEqual(range(1, 40).filter((i) => i !== victim));
    expect(got.throughId).toBe(40);
    expect(damaged.recovery.lostRanges).toEqual([{ fromId: victim, toId: victim }]);
    expectReference(got, await records(damaged, 1, 40));
    await reopened.close();
  });
});
