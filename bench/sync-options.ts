/**
 * Group-commit options for `sync = always`, measured on raw files through node:fs (libuv's thread pool,
 * as the engine does I/O): per group of records, pwrite + fdatasync at the end of a growing file (what
 * the writer does today), one O_DSYNC pwrite, the same into a preallocated file (zeros written and
 * fdatasync'ed ahead, or fallocate(1)'s unwritten extents, or a sparse ftruncate), and the pipelined
 * variants with two groups in flight. Prints µs per group commit and the records/s it allows.
 * Usage: npm run bench:sync-options [-- --seconds 1 --rounds 5 --groups 16,64,256]
 * Run it with UV_USE_IO_URING=1 to see libuv's io_uring path for the same calls.
 */
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine } from './report.js';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '1' },
    rounds: { type: 'string', default: '5' },
    groups: { type: 'string', default: '16,64,256' },
    only: { type: 'string', default: '' },
  },
});
const RECORD_BYTES = 100;
const HEADER_BYTES = 32;
/** How far ahead the preallocating variants keep zeros (written and fdatasync'ed inside the timing). */
const PREALLOC_STEP_BYTES = 4 * 1024 * 1024;

type Prealloc = 'none' | 'zeros' | 'fallocate' | 'ftruncate';
interface Option {
  name: string;
  dsync: boolean;
  prealloc: Prealloc;
  /** 1: write, then sync, then the next group. 2: the next group's write overlaps the current sync (or a second O_DSYNC write). */
  inFlight: 1 | 2;
}

const OPTIONS: Option[] = [
  { name: 'append, pwrite + fdatasync (today)', dsync: false, prealloc: 'none', inFlight: 1 },
  { name: 'append, pwrite + fdatasync, 2 in flight', dsync: false, prealloc: 'none', inFlight: 2 },
  { name: 'append, O_DSYNC pwrite', dsync: true, prealloc: 'none', inFlight: 1 },
  { name: 'append, O_DSYNC pwrite, 2 in flight', dsync: true, prealloc: 'none', inFlight: 2 },
  { name: 'sparse ftruncate ahead, pwrite + fdatasync', dsync: false, prealloc: 'ftruncate', inFlight: 1 },
  { name: 'fallocate ahead, pwrite + fdatasync', dsync: false, prealloc: 'fallocate', inFlight: 1 },
  { name: 'zeros ahead, pwrite + fdatasync', dsync: false, prealloc: 'zeros', inFlight: 1 },
  { name: 'zeros ahead, pwrite + fdatasync, 2 in flight', dsync: false, prealloc: 'zeros', inFlight: 2 },
  { name: 'zeros ahead, O_DSYNC pwrite', dsync: true, prealloc: 'zeros', inFlight: 1 },
  { name: 'zeros ahead, O_DSYNC pwrite, 2 in flight', dsync: true, prealloc: 'zeros', inFlight: 2 },
];

const call = <T>(fn: (cb: (e: Error | null, v: T) => void) => void): Promise<T> =>
  new Promise((resolve, reject) => fn((e, v) => (e ? reject(e) : resolve(v))));
const pwrite = (fd: number, b: Buffer, pos: number): Promise<number> => call((cb) => fs.write(fd, b, 0, b.length, pos, cb));
const fdatasync = (fd: number): Promise<void> => call<void>((cb) => fs.fdatasync(fd, (e) => cb(e, undefined)));

class TestFile {
  readonly fd: number;
  /** End of the bytes already preallocated (durably, size included). */
  private ready = 0;
  private readonly zeros = Buffer.alloc(PREALLOC_STEP_BYTES);

  constructor(
    readonly file: string,
    private readonly o: Option,
  ) {
    this.fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC | (o.dsync ? fs.constants.O_DSYNC : 0));
    fs.writeSync(this.fd, Buffer.alloc(HEADER_BYTES, 1), 0, HEADER_BYTES, 0);
    fs.fdatasyncSync(this.fd);
    const dirFd = fs.openSync(join(file, '..'), 'r');
    fs.fsyncSync(dirFd);
    fs.closeSync(dirFd);
  }

  /** Makes [pos, end) preallocated before a group is written there; counted in the timing. */
  async ensure(end: number): Promise<void> {
    if (this.o.prealloc === 'none' || end <= this.ready) return;
    const from = Math.max(this.ready, HEADER_BYTES);
    const to = from + PREALLOC_STEP_BYTES;
    if (this.o.prealloc === 'zeros') {
      await pwrite(this.fd, this.zeros.subarray(0, to - from), from);
    } else if (this.o.prealloc === 'fallocate') {
      execFileSync('fallocate', ['-n', '-o', String(from), '-l', String(to - from), this.file]);
      fs.ftruncateSync(this.fd, to);
    } else {
      await call<void>((cb) => fs.ftruncate(this.fd, to, (e) => cb(e, undefined)));
    }
    if (!this.o.dsync || this.o.prealloc !== 'zeros') await fdatasync(this.fd);
    this.ready = to;
  }

  /** One group made durable the option's way. */
  async commit(group: Buffer, pos: number): Promise<void> {
    await this.ensure(pos + group.length);
    await pwrite(this.fd, group, pos);
    if (!this.o.dsync) await fdatasync(this.fd);
  }

  close(): void {
    fs.closeSync(this.fd);
  }
}

/** Group commits per second of `o` with groups of `records`. */
async function measure(dir: string, o: Option, records: number, seconds: number): Promise<{ usPerCommit: number; commits: number }> {
  const file = new TestFile(join(dir, `seg-${Math.random().toString(36).slice(2)}.log`), o);
  const group = Buffer.alloc(records * RECORD_BYTES, 7);
  let pos = HEADER_BYTES;
  let commits = 0;
  const deadline = performance.now() + seconds * 1000;
  const started = performance.now();
  if (o.inFlight === 1 || o.dsync) {
    // O_DSYNC with 2 in flight: two independent committers, each its own pwrite at its own offset.
    await Promise.all(
      Array.from({ length: o.inFlight }, async () => {
        while (performance.now() < deadline) {
          const at = pos;
          pos += group.length;
          await file.commit(group, at);
          commits++;
        }
      }),
    );
  } else {
    // As the writer pipelines: the next group's pwrite is issued while the current fdatasync runs.
    let written = file.ensure(pos + group.length).then(() => pwrite(file.fd, group, pos));
    while (performance.now() < deadline) {
      await written;
      pos += group.length;
      const sync = fdatasync(file.fd);
      const at = pos;
      written = file.ensure(at + group.length).then(() => pwrite(file.fd, group, at));
      await sync;
      commits++;
    }
    await written;
  }
  const elapsedMs = performance.now() - started;
  file.close();
  return { usPerCommit: (elapsedMs * 1000) / commits, commits };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * Other processes share the disk: the options take turns, round after round, so a burst of foreign
 * I/O hits all of them alike; the table shows the median round and the best one.
 */
async function main(): Promise<void> {
  const seconds = Number(args.seconds);
  const rounds = Number(args.rounds);
  const groups = args.groups.split(',').map(Number);
  const dir = mkdtempSync(join(tmpdir(), 'sync-options-'));
  const options = OPTIONS.filter((o) => args.only === '' || o.name.includes(args.only));
  console.log(`${machineLine()}; UV_USE_IO_URING=${process.env.UV_USE_IO_URING ?? 'unset'}; load average ${loadavg().map((l) => l.toFixed(2)).join(', ')}`);
  console.log(`${rounds} rounds of ${seconds} s per cell; median µs per group commit (best round), and the records/s of the median`);
  const us = options.map(() => groups.map((): number[] => []));
  try {
    for (let r = 0; r < rounds; r++) {
      for (const [gi, g] of groups.entries()) {
        for (const [oi, o] of options.entries()) us[oi][gi].push((await measure(dir, o, g, seconds)).usPerCommit);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`| option | ${groups.map((g) => `${g} records (${((g * RECORD_BYTES) / 1024).toFixed(1)} KiB)`).join(' | ')} |`);
  console.log(`|---|${groups.map(() => '---').join('|')}|`);
  for (const [oi, o] of options.entries()) {
    const cells = groups.map((g, gi) => {
      const m = median(us[oi][gi]);
      return `${m.toFixed(0)} µs (${Math.min(...us[oi][gi]).toFixed(0)}), ${Math.round((g * 1e6) / m).toLocaleString('en-US')} rec/s`;
    });
    console.log(`| ${o.name} | ${cells.join(' | ')} |`);
  }
  console.log(`load average after: ${loadavg().map((l) => l.toFixed(2)).join(', ')}`);
}

await main();
