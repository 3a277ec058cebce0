// The data view's chart: queryAggregate buckets (avg line inside a min–max band) drawn with the vendored
// uPlot, loaded lazily and only from vendor/ (never from elsewhere).
import { fmtTime, timesInUtc, zoneLabel } from '../core/time.js';

let loading = null;

/** @returns {Promise<any>} the uPlot constructor */
export function loadUPlot() {
  if (window.uPlot) return Promise.resolve(window.uPlot);
  if (loading) return loading;
  loading = new Promise((resolve, reject) => {
    const css = document.createElement('link');
    css.rel = 'stylesheet';
    css.href = 'vendor/uPlot.min.css';
    document.head.appendChild(css);
    const s = document.createElement('script');
    s.src = 'vendor/uPlot.iife.min.js';
    s.onload = () => (window.uPlot ? resolve(window.uPlot) : reject(new Error('uPlot missing after load')));
    s.onerror = () => { loading = null; reject(new Error('vendor/uPlot.iife.min.js could not be loaded')); };
    document.head.appendChild(s);
  });
  return loading;
}

/** Horizontal pixels per bucket: a band of min–max still reads at this density. */
export const PX_PER_BUCKET = 3;
/** The y axis takes this much of the chart's width. */
const Y_AXIS_PX = 60;
const HEIGHT_PX = 240;
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** Bucket widths a reader can name, so bucket edges fall on round times. */
const NICE_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR,
  DAY, 2 * DAY, 7 * DAY];

/** The narrowest round bucket width that puts at most one bucket per PX_PER_BUCKET pixels of the plot. */
export function fitIntervalMs(spanMs, chartWidthPx) {
  const buckets = Math.max(10, Math.floor((chartWidthPx - Y_AXIS_PX) / PX_PER_BUCKET));
  const raw = spanMs / buckets;
  const nice = NICE_MS.find((n) => n >= raw);
  return nice ?? Math.ceil(raw / DAY) * DAY;
}

const UNITS = [[DAY, 'd', 'd'], [HOUR, 'h', 'h'], [MINUTE, 'm', 'min'], [SECOND, 's', 's'], [1, 'ms', 'ms']];

/** The `interval` parameter of queryAggregate: '5m', '2h', '100ms'. */
export function intervalParam(ms) {
  const [size, unit] = UNITS.find(([u]) => ms % u === 0);
  return `${ms / size}${unit}`;
}

/** For people: '5 min', '1 h', '100 ms'. */
export function intervalText(ms) {
  const [size, , unit] = UNITS.find(([u]) => ms % u === 0);
  return `${ms / size} ${unit}`;
}

/**
 * Tick labels of the time axis in the zone in use, 24-hour like every other time on the page: the
 * date under the first tick and wherever it changes.
 */
function timeTicks(u, splits, axisIdx, space, incrS) {
  let prevDay = '';
  return splits.map((s) => {
    const t = fmtTime(s * 1000);
    const day = t.slice(0, 10);
    let text;
    if (incrS >= 86400) text = t.slice(5, 10);
    else if (incrS >= 60) text = t.slice(11, 16);
    else if (incrS >= 1) text = t.slice(11, 19);
    else text = `${t.slice(11, 19)}.${String(Math.round(s * 1000) % 1000).padStart(3, '0')}`;
    const under = incrS >= 86400 ? day.slice(0, 4) : day;
    if (under !== (incrS >= 86400 ? prevDay.slice(0, 4) : prevDay)) text += `\n${under}`;
    prevDay = day;
    return text;
  });
}

/**
 * One attribute's buckets over a time range, kept so live records can be merged in without a request.
 * A bucket: {startMs, n (records holding the attribute), min, max, avg}.
 */
export function createBucketChart(box) {
  let plot = null;
  let ro = null;
  let view = null;
  let destroyed = false;

  function series(attr) {
    return [
      { label: `Time (${zoneLabel()})`, value: (u, v) => (v == null ? '—' : fmtTime(v * 1000)) },
      { label: 'min', stroke: 'rgba(31,111,178,0.45)', width: 1, points: { show: false } },
      { label: 'max', stroke: 'rgba(31,111,178,0.45)', width: 1, points: { show: false } },
      { label: `${attr} avg`, stroke: '#1f6fb2', width: 2 },
    ];
  }

  /** uPlot columns: a null between buckets that are not neighbours, so a gap in the data shows as one. */
  function columns() {
    const xs = []; const mins = []; const maxs = []; const avgs = [];
    let prev = null;
    for (const b of view.buckets) {
      if (b.n === 0) continue;
      if (prev !== null && b.startMs - prev > view.intervalMs) {
        xs.push((prev + view.intervalMs) / 1000); mins.push(null); maxs.push(null); avgs.push(null);
      }
      xs.push(b.startMs / 1000); mins.push(b.min); maxs.push(b.max); avgs.push(b.avg);
      prev = b.startMs;
    }
    return [xs, mins, maxs, avgs];
  }

  async function create() {
    const U = await loadUPlot();
    if (destroyed || !view) return;
    if (plot) plot.destroy();
    const opts = {
      width: Math.max(240, box.clientWidth || 480),
      height: HEIGHT_PX,
      series: series(view.attr),
      bands: [{ series: [2, 1], fill: 'rgba(31,111,178,0.14)' }],
      scales: { x: { time: true, range: () => [view.fromMs / 1000, view.toMs / 1000] } },
      axes: [{ label: `Time (${zoneLabel()})`, labelSize: 22, values: timeTicks }, { label: view.unit || undefined, size: Y_AXIS_PX }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    };
    if (timesInUtc()) opts.tzDate = (ts) => U.tzDate(new Date(ts * 1000), 'Etc/UTC');
    plot = new U(opts, columns(), box);
    if (!ro && typeof ResizeObserver !== 'undefined') {
      ro = new ResizeObserver(() => { if (plot) plot.setSize({ width: Math.max(240, box.clientWidth), height: HEIGHT_PX }); });
      ro.observe(box);
    }
  }

  return {
    /** Draw `buckets` (sorted by start) of `attr` over [fromMs, toMs). */
    async show({ attr, unit, intervalMs, fromMs, toMs, buckets }) {
      view = { attr, unit, intervalMs, fromMs, toMs, buckets };
      box.dataset.buckets = String(buckets.length);
      await create();
    },
    /** Merge one record's value at `timeMs`; call redraw() after a batch. */
    add(timeMs, value) {
      if (!view || typeof value !== 'number' || !Number.isFinite(timeMs)) return;
      const startMs = Math.floor(timeMs / view.intervalMs) * view.intervalMs;
      const list = view.buckets;
      let i = list.length - 1;
      while (i >= 0 && list[i].startMs > startMs) i--;
      if (i < 0 || list[i].startMs !== startMs) {
        list.splice(i + 1, 0, { startMs, n: 1, min: value, max: value, avg: value });
        return;
      }
      const b = list[i];
      b.avg = b.n === 0 ? value : (b.avg * b.n + value) / (b.n + 1);
      b.n += 1;
      b.min = b.min === null ? value : Math.min(b.min, value);
      b.max = b.max === null ? value : Math.max(b.max, value);
    },
    /** Move the visible range (a window over the last N minutes follows the clock). */
    slide(fromMs, toMs) {
      if (!view) return;
      view.fromMs = fromMs;
      view.toMs = Math.max(toMs, view.toMs);
      const keepFrom = Math.floor(fromMs / view.intervalMs) * view.intervalMs;
      view.buckets = view.buckets.filter((b) => b.startMs >= keepFrom);
    },
    redraw() {
      if (!view || !plot) return;
      box.dataset.buckets = String(view.buckets.length);
      plot.setData(columns());
    },
    /** Draw again in the zone now chosen (uPlot takes the zone at creation). */
    async rezone() { if (view) await create(); },
    get buckets() { return view ? view.buckets.length : 0; },
    /** Records behind the drawn values. */
    get records() { return view ? view.buckets.reduce((n, b) => n + b.n, 0) : 0; },
    clear() {
      view = null;
      delete box.dataset.buckets;
      if (plot) { plot.destroy(); plot = null; }
    },
    destroy() {
      destroyed = true;
      this.clear();
      if (ro) { ro.disconnect(); ro = null; }
    },
  };
}
