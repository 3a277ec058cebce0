/**
 * Fault injection in process, through the store's own file layer (support/fault-io.ts): EIO and ENOSPC
 * on segment writes and fdatasyncs, torn and short writes, fsyncgate page drops, failures while sealing a
 * segment (its fdatasync, its index, the new segment file) and on manifest slots, a one-shot failure of
 * the k-th write, and a kill -9 while the disk fails. Each scenario runs with `sync = always` and
 * `interval`, 8 concurrent writers (support/fault-run.ts): no acknowledged or kept record lost, none
 * stored twice or corrupted, no refused record stored, writable again without a restart. Each run prints a
 * summary line (docs/reliability.md, section Faults, copies them).
 *
 * FAULTS_LONG=1: 16 writers, faults held 2 s, the service's retry period (1 s).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { READ_ONLY_RETRY_MS_DEFAULT } from '../../src/store/base/constants.js';
import { SEGMENT_HEADER_BYTES } from '../../src/store/segment/segment.js';
import type { Durability } from '../../src/store/base/types.js';
import type { ModelLog } from '../../src/store/log/model-log.js';
import type { Fault } from './support/fault-io.js';
import { type ScenarioSpec, runScenario, summaryLine } from './support/fault-run.js';

const LONG = process.env.FAULTS_LONG === '1';
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-faults-'));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const SMALL_SEGMENT = 4096;

/**
 * The fdatasync of a segment being sealed: the log has rolled (a segment whose file does not exist yet)
 * and the file holds records (a new segment file, synced by its creation, holds only its header).
 */
const sealing =
  (log: () => ModelLog, dir: string) =>
  (file: string): boolean =>
    fs.statSync(file).size > SEGMENT_HEADER_BYTES && log().stats().segments > fs.readdirSync(dir).filter((n) => n.endsWith('.log')).length;

type Scenario = Omit<ScenarioSpec, 'durability' | 'readOnlyRetryMs'>;

const scenarios: Scenario[] = [
  { name: 'segment write EIO', fault: { op: 'pwrite', code: 'EIO', file: /\.log$/ } },
  { name: 'segment write ENOSPC', fault: { op: 'pwrite', code: 'ENOSPC', file: /\.log$/ } },
  { name: 'torn segment write EIO', fault: { op: 'pwrite', code: 'EIO', mode: 'torn', file: /\.log$/ } },
  { name: 'short segment writes', fault: { op: 'pwrite', code: 'EIO', mode: 'short', file: /\.log$/ } },
  { name: 'fdatasync EIO, pages dropped', fault: { op: 'fdatasync', code: 'EIO', file: /\.log$/, dropPages: true } },
  { name: 'fdatasync ENOSPC', fault: { op: 'fdatasync', code: 'ENOSPC', file: /\.log$/ } },
  { name: 'one-shot: 20th segment write EIO', fault: { op: 'pwrite', code: 'EIO', file: /\.log$/, after: 19, times: 1 } },
  {
    name: 'seal: fdatasync EIO, pages dropped',
    segmentBytesMax: SMALL_SEGMENT,
    fault: (log, dir): Fault => ({ op: 'fdatasync', code: 'EIO', file: /\.log$/, dropPages: true, times: 1, when: sealing(log, dir) }),
  },
  { name: 'seal: index rename EIO', segmentBytesMax: SMALL_SEGMENT, fault: { op: 'rename', code: 'EIO', file: /\.idx\.tmp$/ } },
  { name: 'create: segment open ENOSPC', segmentBytesMax: SMALL_SEGMENT, fault: { op: 'open', code: 'ENOSPC', file: /\.log$/ } },
  { name: 'create: directory fsync EIO', segmentBytesMax: SMALL_SEGMENT, fault: { op: 'fsyncdir', code: 'EIO' } },
  { name: 'manifest slot write EIO', segmentBytesMax: SMALL_SEGMENT, fault: { op: 'pwrite', code: 'EIO', file: /MANIFEST$/ } },
  { name: 'kill -9 during write EIO', abandonDuringFault: true, fault: { op: 'pwrite', code: 'EIO', file: /\.log$/ } },
  {
    name: 'kill -9 during fdatasync EIO, pages dropped',
    abandonDuringFault: true,
    fault: { op: 'fdatasync', code: 'EIO', file: /\.log$/, dropPages: true },
  },
];

const durabilities: Durability[] = ['always', 'interval'];

describe('faults injected through the store file layer', () => {
  for (const s of scenarios) {
    for (const durability of durabilities) {
      it(`${s.name} [${durability}]`, async () => {
        const r = await runScenario(root, {
          ...s,
          durability,
          writers: LONG ? 16 : 8,
          faultMs: LONG ? 2000 : 300,
          afterMs: LONG ? 1000 : 100,
          readOnlyRetryMs: LONG ? READ_ONLY_RETRY_MS_DEFAULT : 200,
        });
        console.log(summaryLine(r));
        expect(r.problems).toEqual([]);
        expect({ lost: r.lost, duplicated: r.duplicated, corrupted: r.corrupted }).toEqual({ lost: 0, duplicated: 0, corrupted: 0 });
        expect(r.acked).toBeGreaterThan(0);
        if (!s.abandonDuringFault) expect(r.timeToWritableMs).toBeDefined();
      }, 300_000);
    }
  }
});
