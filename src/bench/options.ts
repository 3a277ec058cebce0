/**
 * The flags of `edge-datacenter bench`, checked before anything runs (a mistake found after two minutes
 * of measuring costs the two minutes), and how the run's seconds are shared between its parts.
 */
import { statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { resolve } from 'node:path';
import { UsageError } from '../errors.js';

export const DEFAULT_SECONDS = 120;
export const QUICK_SECONDS = 20;
const SECONDS_MIN = 20;
const SECONDS_MAX = 3600;

export interface BenchFlags {
  seconds?: string;
  quick?: boolean;
  out?: string;
  dir?: string;
  compare?: string;
  in?: string;
}

export interface BenchOptions {
  seconds: number;
  /** Where the reports go. */
  outDir: string;
  /** Where the temporary data directory is made: the disk measured. */
  dir: string;
  /** A report to compare with. */
  compare?: string;
  /** With `compare`: compare this report instead of running. */
  report?: string;
}

function directory(flag: string, value: string): string {
  const path = resolve(value);
  let isDir = false;
  try {
    isDir = statSync(path).isDirectory();
  } catch {
    // reported below
  }
  if (!isDir) throw new UsageError(`--${flag} must be an existing directory, got ${JSON.stringify(value)}`);
  return path;
}

export function benchOptions(flags: BenchFlags): BenchOptions {
  if (flags.in !== undefined) {
    if (flags.compare === undefined) throw new UsageError('bench --in FILE names the report to compare: give --compare OTHER too');
    if (flags.seconds !== undefined || flags.quick) throw new UsageError('bench --in compares two reports without running: --seconds and --quick do not apply');
    return { seconds: 0, outDir: '.', dir: '.', compare: flags.compare, report: flags.in };
  }
  if (flags.quick && flags.seconds !== undefined) throw new UsageError(`bench --quick is a run of ${QUICK_SECONDS} s: give --quick or --seconds, not both`);
  let seconds = flags.quick ? QUICK_SECONDS : DEFAULT_SECONDS;
  if (flags.seconds !== undefined) {
    seconds = Number(flags.seconds);
    if (!/^[0-9]+$/.test(flags.seconds) || seconds < SECONDS_MIN || seconds > SECONDS_MAX) {
      throw new UsageError(`--seconds must be a whole number of seconds from ${SECONDS_MIN} to ${SECONDS_MAX}, got ${JSON.stringify(flags.seconds)}`);
    }
  }
  return {
    seconds,
    outDir: directory('out', flags.out ?? '.'),
    dir: directory('dir', flags.dir ?? tmpdir()),
    compare: flags.compare,
  };
}

/** Seconds of each timed part of a run of `total` seconds; starts, set-up and the day's import come on top (about a tenth). */
export interface Plan {
  idle: number;
  fdatasyncBudget: number;
  warmUp: number;
  push: number;
  read: number;
  page: number;
  aggregate: number;
  always: number;
}

export function plan(total: number): Plan {
  const part = (share: number, min: number): number => Math.max(min, Math.round(total * share * 10) / 10);
  return {
    idle: part(0.04, 1),
    fdatasyncBudget: part(0.03, 0.5),
    warmUp: part(0.03, 0.5),
    push: part(0.25, 3),
    read: part(0.2, 3),
    page: part(0.06, 1),
    aggregate: part(0.06, 1),
    always: part(0.2, 3),
  };
}
