/**
 * The service with a model of thousands of segments, under an open-file limit far below that count
 * (`prlimit --nofile`): it starts, serves every record by pages, accepts pushes, stops cleanly and
 * starts again. The segments are written through the store itself with 256-byte segments (the service's
 * own `segment_bytes` is at least 64 KiB), in the model directory the service created.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { payload, pushNdjson, readAll, setupPipeline, startService, writeConfig } from './support/service.mjs';

const FD_LIMIT = 256;
const SEGMENTS = 3000;
const LINES_PER_PUSH = 50;
const root = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(), 'edc-fd-limit-'));

afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** Stored `temp` and `conductivity` both carry seq (see payload()). */
const stored = (seq: number) => ({ temp: seq, resistivity: 0, conductivity: seq, dissolved_oxygen: 0, ph_value: 0 });

async function pushLines(base: string, pipeline: Parameters<typeof pushNdjson>[1], firstSeq: number): Promise<void> {
  const lines = Array.from({ length: LINES_PER_PUSH }, (_, i) => payload(firstSeq + i, 1, i, 0));
  const answer = await pushNdjson(base, pipeline, lines);
  expect(answer.status, String(answer.text)).toBe(200);
  expect(answer.body.data).toMatchObject({ accepted: LINES_PER_PUSH, failed: 0 });
}

describe(`the service with a model of ${SEGMENTS} segments under an open-file limit of ${FD_LIMIT}`, () => {
  it('starts, serves every record, accepts pushes, stops cleanly and starts again', async () => {
    const { file, dataDir } = writeConfig(root, { store: { sync: 'interval', sync_interval_ms: 20 } });
    let svc = await startService(file);
    const pipeline = await setupPipeline(svc.base, 'many');
    await pushLines(svc.base, pipeline, 1);
    expect((await svc.kill('SIGTERM')).code).toBe(0);

    const modelDir = path.join(dataDir, 'store', pipeline.model);
    const fields = JSON.parse(fs.readFileSync(path.join(modelDir, 'FIELDS'), 'utf8')) as { fields: string[]; types: string[] };
    const store = await Store.open(storeOptions({ rootDir: path.join(dataDir, 'store'), segmentBytesMax: 256, durability: 'none' }));
    const log = await store.openModel(pipeline.model, { fields: fields.fields, types: fields.types });
    let seq = LINES_PER_PUSH + 1;
    while (log.stats().segments < SEGMENTS) {
      for (let i = 0; i < 200; i++) log.save(stored(seq++));
      await log.durable();
    }
    await store.close();

    for (const round of ['start', 'restart']) {
      svc = await startService(file, { fdLimit: FD_LIMIT });
      const { records, total } = await readAll(svc.base, pipeline.model);
      expect(total, round).toBe(seq - 1);
      expect(records.length, round).toBe(seq - 1);
      records.forEach((r, i) => {
        if (r.temp !== i + 1 || r.conductivity !== i + 1) expect.fail(`${round}: record ${i + 1} reads ${JSON.stringify(r)}`);
      });
      await pushLines(svc.base, pipeline, seq);
      seq += LINES_PER_PUSH;
      const exit = await svc.kill('SIGTERM');
      expect(exit.code, `${round}: ${svc.log.slice(-5).join('\n')}`).toBe(0);
    }
  }, 180_000);
});
