/**
 * `edge-datacenter bench`: measures this device (docs/performance.md "On the device"), writes the JSON
 * and Markdown reports, and with `--compare` prints ratios against another device's report. cli.ts
 * loads this module only for this command: `serve` never does.
 */
import { relative } from 'node:path';
import { BenchError } from '../errors.js';
import { comparison, readReport } from './compare.js';
import { benchOptions, type BenchFlags } from './options.js';
import { markdown, reportBase, writeReport } from './report.js';
import { runBench } from './run.js';

/** The exit code: 0, or 1 with the reason on stderr when the run could not finish. */
export async function benchCommand(flags: BenchFlags): Promise<number> {
  const options = benchOptions(flags);
  try {
    // Read before running, so a wrong path fails now rather than after the run.
    const other = options.compare === undefined ? undefined : await readReport(options.compare);
    if (options.report !== undefined && other !== undefined) {
      process.stdout.write(comparison(await readReport(options.report), options.report, other, options.compare as string));
      return 0;
    }
    const report = await runBench(options);
    const files = await writeReport(report, reportBase(options.outDir, new Date(report.date), report.device.hostname));
    process.stdout.write(`${markdown(report)}\nWrote ${relative('.', files.json)} and ${relative('.', files.md)}.\n`);
    if (other !== undefined) process.stdout.write(`\n${comparison(report, files.json, other, options.compare as string)}`);
    return 0;
  } catch (err) {
    if (!(err instanceof BenchError)) throw err;
    process.stderr.write(`edge-datacenter bench: ${err.message}\n`);
    return 1;
  }
}
