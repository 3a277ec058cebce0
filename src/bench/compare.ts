/**
 * `--compare other.json`: this device's figures against another's, as ratios this / other, so two
 * gateways (or a gateway and the machine of docs/performance.md) are told apart at a glance.
 */
import { readFile } from 'node:fs/promises';
import { BenchError } from '../errors.js';
import { deviceLine, FIGURES, formatValue, REPORT_FORMAT, type FigureKey, type Report } from './report.js';

/** A report file written by `edge-datacenter bench`, or an error naming the file and what is wrong. */
export async function readReport(file: string): Promise<Report> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new BenchError(`cannot read the report ${file}: ${(err as Error).message}`);
  }
  let report: Report;
  try {
    report = JSON.parse(text) as Report;
  } catch (err) {
    throw new BenchError(`${file} is not JSON: ${(err as Error).message}`);
  }
  if (report?.format !== REPORT_FORMAT || typeof report.figures !== 'object' || report.figures === null) {
    throw new BenchError(`${file} is not a report of edge-datacenter bench (format ${REPORT_FORMAT})`);
  }
  return report;
}

/** The ratio of a figure, "–" when either report lacks it or the other's is 0. */
function ratio(mine: unknown, other: unknown): string {
  if (typeof mine !== 'number' || typeof other !== 'number' || other === 0) return '–';
  return (mine / other).toFixed(2);
}

/** The comparison as a Markdown table with both devices named above it. */
export function comparison(mine: Report, mineFile: string, other: Report, otherFile: string): string {
  const cell = (v: unknown, unit: string): string => (typeof v === 'number' ? `${formatValue(v)} ${unit}` : '–');
  const rows = (Object.keys(FIGURES) as FigureKey[]).map((k) => {
    const f = FIGURES[k];
    return `| ${f.label} | ${cell(mine.figures[k], f.unit)} | ${cell(other.figures[k], f.unit)} | ${ratio(mine.figures[k], other.figures[k])} | ${f.better} |`;
  });
  return [
    `this:  ${mineFile}, ${mine.date}: ${deviceLine(mine)}`,
    `other: ${otherFile}, ${other.date}: ${deviceLine(other)}`,
    '',
    '| figure | this | other | ratio this / other | better |',
    '|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
