/**
 * Draws the soak samples as a PNG: the vendored uPlot in headless Chromium (playwright-core), three
 * stacked charts (server memory, p99 latencies + event-loop delay, throughput). Used by bench/soak.ts;
 * also runnable alone to redraw from a saved run: node dist-bench/bench/soak-chart.js SAMPLES.json [OUT.png]
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export interface SoakSample {
  /** Seconds since the load started. */
  t: number;
  rssMb: number;
  heapUsedMb: number;
  eldP99Ms: number;
  eldMaxMs: number;
  pushP99Ms: number;
  lastP99Ms: number;
  pageP99Ms: number;
  recordsPerS: number;
  lastPerS: number;
  pagePerS: number;
  errors: number;
}

export interface ChartInfo {
  title: string;
  subtitle: string;
}

/** Compiled to dist-bench/bench/: two levels up is the repository. */
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

function page(samples: SoakSample[], info: ChartInfo, uplotJs: string, uplotCss: string): string {
  const data = JSON.stringify(samples);
  return `<!doctype html><html><head><meta charset="utf-8"><style>${uplotCss}
body{margin:0;padding:16px 20px;font:13px system-ui,sans-serif;background:#fff;color:#222;width:1160px}
h1{font-size:17px;margin:0 0 2px} p{margin:0 0 10px;color:#555} .c{margin-bottom:6px}</style></head>
<body><h1>${info.title}</h1><p>${info.subtitle}</p><div id="a" class="c"></div><div id="b" class="c"></div><div id="c" class="c"></div>
<script>${uplotJs}</script>
<script>
const s = ${data};
const t = s.map(x => x.t);
const col = (k) => s.map(x => x[k]);
const axes = (label) => [{ label: 'seconds' }, { label, size: 60 }];
const opts = (title, label, series, log) => ({ title, width: 1120, height: 250, legend: { live: false }, scales: { x: { time: false }, ...(log ? { y: { distr: 3, log: 10 } } : {}) }, axes: axes(label),
  series: [{ label: 's' }, ...series.map(([l, stroke, width]) => ({ label: l, stroke, width: width ?? 1.5 }))] });
new uPlot(opts('Server memory', 'MB', [['RSS (MB)', '#c0392b', 2], ['JS heap used (MB)', '#2980b9']]), [t, col('rssMb'), col('heapUsedMb')], document.getElementById('a'));
const pos = (k) => s.map(x => Math.max(x[k], 0.01));
new uPlot(opts('p99 latency per sample window (log scale)', 'ms', [['push p99 (waits for fdatasync)', '#8e44ad'], ['queryLastData p99', '#27ae60'], ['queryDataList p99', '#d35400'], ['event-loop delay p99 (server)', '#7f8c8d']], true),
  [t, pos('pushP99Ms'), pos('lastP99Ms'), pos('pageP99Ms'), pos('eldP99Ms')], document.getElementById('b'));
new uPlot(opts('Throughput', 'per second', [['records stored/s', '#2c3e50', 2], ['queryLastData/s', '#16a085'], ['queryDataList/s x10', '#e67e22'], ['failed requests', '#e74c3c']]),
  [t, col('recordsPerS'), col('lastPerS'), s.map(x => x.pagePerS * 10), col('errors')], document.getElementById('c'));
</script></body></html>`;
}

export async function renderChart(samples: SoakSample[], info: ChartInfo, out: string): Promise<void> {
  const vendor = join(repoRoot, 'src/ui/public/vendor');
  const [js, css] = await Promise.all([readFile(join(vendor, 'uPlot.iife.min.js'), 'utf8'), readFile(join(vendor, 'uPlot.min.css'), 'utf8')]);
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const p = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    // Everything is inline: the page makes no request at all.
    await p.route('**/*', (route) => route.abort());
    await p.setContent(page(samples, info, js, css), { waitUntil: 'load' });
    await p.waitForFunction('document.querySelectorAll("canvas").length === 3');
    await p.screenshot({ path: out, fullPage: true });
  } finally {
    await browser.close();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [samplesFile, out] = process.argv.slice(2);
  if (samplesFile === undefined) {
    process.stderr.write('usage: node dist-bench/bench/soak-chart.js SAMPLES.json [OUT.png]\n');
    process.exit(2);
  }
  const saved = JSON.parse(await readFile(samplesFile, 'utf8')) as { samples: SoakSample[]; info: ChartInfo };
  const target = out ?? join(repoRoot, 'docs/images/soak.png');
  await renderChart(saved.samples, saved.info, target);
  process.stdout.write(`wrote ${target}\n`);
}
