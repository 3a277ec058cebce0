/**
 * An import's memory is bounded whatever the upload holds: a CSV record whose quoted field is never
 * closed, a JSON Lines line without an end, a row of endless commas. Each is refused with a 400 naming the
 * line where it started, long before the upload ends, while the heap stays small. Real store and registry
 * in a temp dir, ModelTransfers as the HTTP route and the CLI call it.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { ModelTransfers } from '../../src/models/backup.js';
import { ModelRegistry } from '../../src/models/index.js';
import type { ImportFormat } from '../../src/models/import-rows.js';
import type { Store } from '../../src/store/index.js';
import { openStore } from './helpers.js';

const MIB = 1024 * 1024;
const UPLOAD_BYTES = 40 * MIB;
/** Far below what the unbounded parser held for 40 MiB (about 37 bytes per byte), far above one bounded record. */
const GROWTH_MAX = 96 * MIB;

let dir: string;
let store: Store;
let registry: ModelRegistry;
let model: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edc-import-bounds-'));
  store = await openStore(join(dir, 'store'));
  registry = await ModelRegistry.open({ dataDir: dir, store });
  model = (await registry.create({ name: 'sensor' })).uuid;
  await registry.createAttribute({ schemaId: model, name: 'temp', type: 'FLOAT' });
  await registry.createAttribute({ schemaId: model, name: 'label', type: 'STRING' });
  await registry.publish(model);
});
afterEach(async () => {
  await store.close();
  await rm(dir, { recursive: true, force: true });
});

const used = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/**
 * `head`, then `filler` over and over up to UPLOAD_BYTES. The heap is measured after every chunk; past
 * GROWTH_MAX the upload stops with an error of its own, so an unbounded parser fails the test at once
 * instead of taking the test process down.
 */
async function* upload(head: string, filler: Buffer, peak: { bytes: number }): AsyncGenerator<Uint8Array> {
  const base = used();
  yield Buffer.from(head);
  for (let sent = 0; sent < UPLOAD_BYTES; sent += filler.length) {
    yield filler;
    const grown = used() - base;
    peak.bytes = Math.max(peak.bytes, grown);
    if (grown > GROWTH_MAX) throw new Error(`memory grew by ${Math.round(grown / MIB)} MiB after ${Math.round(sent / MIB)} MiB of upload`);
  }
}

async function refusal(format: ImportFormat, head: string, filler: string): Promise<{ error: unknown; peak: number }> {
  const peak = { bytes: 0 };
  const transfers = new ModelTransfers(store, registry);
  const error = await transfers.importData(model, format, upload(head, Buffer.from(filler.repeat(Math.ceil(MIB / filler.length))), peak)).then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, peak: peak.bytes };
}

async function expectNothingImported(): Promise<void> {
  expect(registry.log(model).stats().total).toBe(0);
  expect((await readdir(join(dir, 'store'))).filter((n) => /^\.(staging|ready|trash)-/.test(n))).toEqual([]);
}

describe('import memory bounds', () => {
  it('a CSV quoted field never closed: 400 naming the line where its record started, the heap stays small', async () => {
    const head = 'create_at,temp,label\n2030-01-01T00:00:00Z,1,ok\n2030-01-01T00:00:01Z,2,"never closed\n';
    const { error, peak } = await refusal('csv', head, `${'x'.repeat(1023)}\n`);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as InvalidArgumentError).status).toBe(400);
    expect((error as Error).message).toBe('line 3: a quoted field is not closed within 8 MiB, the most one CSV record may hold');
    expect(peak).toBeLessThan(GROWTH_MAX);
    await expectNothingImported();
  });

  it('a CSV quoted field that goes on in one endless line: 400 naming the line', async () => {
    const { error } = await refusal('csv', 'create_at,temp,label\n2030-01-01T00:00:01Z,2,"', 'x'.repeat(4096));
    expect((error as Error).message).toBe('csv file: line 2 is longer than 8388608 bytes');
    await expectNothingImported();
  });

  it('a CSV row or header of many fields is refused at the first field too many', async () => {
    const row = await refusal('csv', 'create_at,temp,label\n2030-01-01T00:00:01Z,2,', `${'ab,'.repeat(100_000)}\n`);
    expect((row.error as Error).message).toBe('line 2: more than 3 fields, but the header names 3 columns');
    const header = await refusal('csv', 'create_at,', `${'ab,'.repeat(100_000)}\n`);
    expect((header.error as Error).message).toBe(`line 1: more than 4 fields, but model sensor (${model}) has 2 attributes besides id and create_at`);
    await expectNothingImported();
  });

  it('a JSON Lines line without an end: 400 naming the line', async () => {
    const { error, peak } = await refusal('jsonl', '{"create_at":"2030-01-01T00:00:00Z","temp":1}\n{"label":"', 'x'.repeat(4096));
    expect((error as Error).message).toBe('jsonl file: line 2 is longer than 8388608 bytes');
    expect(peak).toBeLessThan(GROWTH_MAX);
    await expectNothingImported();
  });
});
