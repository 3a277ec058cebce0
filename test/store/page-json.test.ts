/**
 * ModelLog.pageJson prints pages from the stored bytes (record-json.ts); its text must be, byte for byte,
 * what the reference path gives: JSON.stringify of `page`'s records with create_at formatted (formatRecord),
 * which is how queryDataList answered before it existed. Every value type and width msgpack gives our
 * values, the strings JSON.stringify escapes and the ones decoders disagree on, update-last, fields added
 * after records were written (defaults), selects, both orders, pages across sealed segments.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isoSeconds } from '../../src/http/core/format.js';
import { formatRecord, type Stamp } from '../../src/store/read/record-json.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { PageQuery } from '../../src/store/base/types.js';
import { prng } from '../support/prng.js';
import { openStore, removeTmpDirs, tmpDir } from './helpers.js';

afterEach(removeTmpDirs);

/** What queryDataList printed before pageJson: the records of `page`, formatted, through JSON.stringify. */
async function referenceJson(log: ModelLog, q: PageQuery, stamp: Stamp): Promise<string> {
  const page = await log.page(q);
  return JSON.stringify(page.records.map((r) => formatRecord(r, stamp)));
}

async function expectSameText(log: ModelLog, q: PageQuery, stamp: Stamp = isoSeconds): Promise<string> {
  const expected = await referenceJson(log, q, stamp);
  const got = await log.pageJson(q, stamp);
  expect(got.json.toString('utf8'), JSON.stringify(q)).toBe(expected);
  expect(Buffer.compare(got.json, Buffer.from(expected, 'utf8')), JSON.stringify(q)).toBe(0);
  expect(got.total).toBe((await log.page(q)).total);
  return expected;
}

const LONG = 'x'.repeat(70);
/** Strings JSON.stringify prints as they are, strings it escapes, and strings whose stored bytes only a decoder can read. */
const STRINGS = [
  '',
  'ok',
  'say "hi"',
  'back\\slash',
  'tab\there',
  'line\nbreak\r\n',
  '\u0000\u0001\u0008\u000b\u000c\u001f\u007f',
  'caf\u00e9 \u6e29\u5ea6 \u2028 \u2029',
  '\ud83d\ude80 rocket',
  'lone \ud800 high',
  'lone \udc00 low',
  `lone long \ud800 ${LONG}`,
  '\ufeffbom first',
  `\ufeffbom first and long ${LONG}`,
  `mid \ufeff bom`,
  `${LONG}${LONG}${LONG}${LONG}`,
  '\u00e9'.repeat(300),
  'q'.repeat(70_000),
  '"'.repeat(40),
  `{"json":"in a string","n":[1,2]}`,
];

/** Numbers at every msgpack width our writer uses, floats, and the values JSON.stringify prints as null. */
const NUMBERS = [
  0, -0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53 - 1, 2 ** 53, 2 ** 60, 1e21, 1e300,
  -1, -32, -33, -128, -129, -32768, -32769, -(2 ** 31), -(2 ** 31) - 1, -(2 ** 53) + 1, -(2 ** 53), -1e21,
  0.1, 0.5, -0.5, 29.990000000000002, 1013.25, 1e-7, 5e-324, Number.MAX_VALUE, -Number.MIN_VALUE, 123456789.125,
  NaN, Infinity, -Infinity,
];

const OTHER = [null, true, false, undefined, { a: 1, b: 'two' }, [1, 'x', null], Buffer.from([1, 2, 3])];

function pick<T>(rand: () => number, values: readonly T[]): T {
  return values[Math.floor(rand() * values.length)];
}

describe('ModelLog.pageJson', () => {
  it('prints every value type as JSON.stringify of the formatted records does', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 4096 });
    const log = await store.openModel('m', { fields: ['s', 'n', 'f', 'b'] });
    for (const s of STRINGS) log.save({ s, n: 1, f: 0.5, b: true });
    for (const n of NUMBERS) log.save({ s: 'n', n, f: n, b: false });
    for (const o of OTHER) log.save({ s: o, n: o, f: o, b: o });
    const rand = prng(11);
    const all = [...STRINGS, ...NUMBERS, ...OTHER];
    for (let i = 0; i < 300; i++) log.save({ s: pick(rand, all), n: pick(rand, NUMBERS), f: pick(rand, all), b: pick(rand, [true, false, null]) });
    await log.durable();
    expect(log.stats().segments).toBeGreaterThan(3);
    const total = log.stats().total;
    for (const order of ['asc', 'desc'] as const) {
      await expectSameText(log, { current: 1, size: 1000, order });
      for (const size of [1, 7, 64]) {
        for (let current = 1; current <= Math.ceil(total / size) + 1; current++) await expectSameText(log, { current, size, order });
      }
    }
    await store.close();
  });

  it('prints doubles right when their texts are kept (more doubles than the table holds, each page printed twice)', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('m', { fields: ['a', 'b'] });
    const rand = prng(7);
    const double = (): number => (rand() - 0.5) * 10 ** Math.floor(rand() * 40 - 20);
    // Besides random doubles: doubles whose low 32 bits are all equal (k + 0.5) and whose high 32 bits are (1 + k ulp).
    for (let i = 0; i < 6000; i++) log.save({ a: i % 2 ? double() : i + 0.5, b: i % 3 === 0 ? -1.2345678901234567e-6 : 1 + i * 2 ** -52 });
    for (let round = 0; round < 2; round++) {
      for (let current = 1; current <= 6; current++) await expectSameText(log, { current, size: 1000, order: 'desc' });
    }
    await store.close();
  });

  it('prints update-last records, selects, and what records written before a field existed read', async () => {
    const store = await openStore(tmpDir(), { segmentBytesMax: 2048 });
    const log = await store.openModel('m', { fields: ['temp', 'label'], types: ['FLOAT', 'STRING'], defaults: [0, ''] });
    for (let i = 0; i < 40; i++) log.save({ temp: 20 + i / 3, label: `l${i}` });
    log.updateLast({ label: 'updated "last"' });
    // A field added later: older records read its default; then one removed (its column stays, hidden).
    log.setFields({ fields: ['temp', 'label', 'level', 'note'], types: ['FLOAT', 'STRING', 'INTEGER', 'STRING'], defaults: [0, '', 7, 'n/a "quoted"'] });
    for (let i = 0; i < 40; i++) log.save({ temp: i, label: `m${i}`, level: i, note: i % 2 ? 'odd' : '' });
    log.updateLast({ level: -5 });
    log.updateLast({ note: '\u00e9t\u00e9' });
    await log.durable();
    const withLevel = await expectSameText(log, { current: 1, size: 100, order: 'asc' });
    expect(withLevel).toContain('"level":7,"note":"n/a \\"quoted\\""');
    expect(withLevel).toContain('"label":"updated \\"last\\""');
    expect(withLevel).toContain('"level":-5,"note":"\u00e9t\u00e9"');
    log.setFields({ fields: ['note', 'temp'], types: ['STRING', 'FLOAT'], defaults: ['n/a', 0] });
    for (const order of ['asc', 'desc'] as const) {
      for (const select of [undefined, ['id'], ['create_at'], ['temp'], ['note', 'id'], ['temp', 'create_at', 'note', 'id']]) {
        for (const current of [1, 2, 3]) await expectSameText(log, { current, size: 33, order, select });
      }
    }
    await store.close();
  });

  it('prints pages of a time range, an empty page, and create_at in any format the caller gives', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('m', { fields: ['v'] });
    for (let i = 0; i < 50; i++) log.save({ v: i });
    const { records } = await log.page({ current: 1, size: 50, order: 'asc', select: ['create_at'] });
    const fromMs = records[10].create_at as number;
    await expectSameText(log, { current: 1, size: 20, order: 'desc', fromMs, toMs: fromMs + 1 });
    await expectSameText(log, { current: 9, size: 20, order: 'asc' });
    expect((await log.pageJson({ current: 9, size: 20, order: 'asc' }, isoSeconds)).json.toString()).toBe('[]');
    await expectSameText(log, { current: 1, size: 5, order: 'asc' }, (ms) => `"${ms}" \u00e9\n`);
    await store.close();
  });

  it('prints fields whose names JSON.stringify would not list in insertion order as the reference does', async () => {
    const store = await openStore(tmpDir());
    const indexed = await store.openModel('indexed', { fields: ['b', '10', 'a "q"'] });
    for (let i = 0; i < 5; i++) indexed.save({ b: i, '10': `ten${i}`, 'a "q"': i / 2 });
    expect(await expectSameText(indexed, { current: 1, size: 10, order: 'asc' })).toMatch(/^\[\{"10":"ten0","id":1,/);
    const proto = await store.openModel('proto', { fields: ['b', '__proto__'] });
    // JSON.parse makes `__proto__` an own property, so the stored value is the string.
    for (let i = 0; i < 5; i++) proto.save(JSON.parse(`{"b":${i},"__proto__":"p${i}"}`) as Record<string, unknown>);
    expect(await expectSameText(proto, { current: 1, size: 10, order: 'asc' })).not.toContain('__proto__');
    await store.close();
  });

  it('fails the same way as the reference on a value JSON cannot hold (a 64-bit integer decodes to a BigInt)', async () => {
    const store = await openStore(tmpDir());
    const log = await store.openModel('m', { fields: ['big'] });
    log.save({ big: 2n ** 60n });
    await expect(referenceJson(log, { current: 1, size: 1, order: 'asc' }, isoSeconds)).rejects.toThrow(/BigInt/);
    await expect(log.pageJson({ current: 1, size: 1, order: 'asc' }, isoSeconds)).rejects.toThrow(/BigInt/);
    await store.close();
  });
});
