// The Data tab's chart panel: the attribute to chart, the bucket chart of a snapshot (chart.js), its
// empty state, the note and accessible name that say what it shows, and live records added to it.
import { h, mount, select } from '../core/dom.js';
import { messageOf } from '../core/api.js';
import { statusLine } from '../core/ui.js';
import { createBucketChart, intervalText } from './chart.js';
import { createAtMs, fmtTime, serverNow, zoneLabel } from '../core/time.js';

/**
 * `numeric`: the INTEGER and FLOAT attributes; `onAttrChange()`: another attribute was chosen;
 * `onShowAll()`: the empty state's "Show all records". A `snap` is the records view's snapshot
 * ({kind, label, spanMs, fromMs, viewEndMs, intervalMs, storedBefore, arrived}).
 */
export function createChartPanel({ numeric, units, onAttrChange, onShowAll }) {
  let attr = numeric.length ? numeric[0].name : '';
  const attrSel = select(numeric.map((a) => [a.name, `${a.name}${a.unit ? ` (${a.unit})` : ''}`]), attr, { id: 'chart-attr', disabled: !numeric.length });
  const chartBox = h('div', { class: 'chart', id: 'chart', role: 'img', 'aria-label': 'Chart' });
  const chartEmpty = h('div', { class: 'chart-empty', id: 'chart-empty', hidden: true });
  const chartNote = h('p', { class: 'muted small-text', id: 'chart-note' });
  const chartStatus = statusLine();
  const chart = createBucketChart(chartBox);
  attrSel.addEventListener('change', () => { attr = attrSel.value; onAttrChange(); });

  const panel = h('section', { class: 'panel grow', 'aria-labelledby': 'chart-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'chart-title', text: 'Chart' }),
      numeric.length ? h('div', { class: 'field inline' }, h('label', { for: 'chart-attr', text: 'Attribute' }), attrSel) : null),
    chartStatus.el,
    numeric.length ? [chartBox, chartEmpty] : h('p', { class: 'muted', text: 'No INTEGER or FLOAT attribute to chart.' }), chartNote);

  /** Draws the buckets of the snapshot; `latest` (the newest record) is named when none holds a value. */
  async function draw(buckets, snap, latest) {
    if (!numeric.length) return;
    const list = buckets.map((b) => {
      const v = b[attr] || {};
      return { startMs: Date.parse(b.start), n: v.count || 0, min: v.min, max: v.max, avg: v.avg };
    }).filter((b) => b.n > 0);
    if (!list.length) {
      chart.clear();
      chartBox.hidden = true;
      chartEmpty.hidden = false;
      chartNote.textContent = '';
      const stored = snap.storedBefore + snap.arrived > 0;
      if (!stored) mount(chartEmpty, h('p', { text: 'No records yet.' }), h('p', { class: 'muted', text: 'Records appear here as soon as a rule stores them.' }));
      else {
        const all = h('button', { type: 'button', id: 'show-all', text: 'Show all records' });
        all.addEventListener('click', onShowAll);
        const newest = latest ? createAtMs(latest.create_at) : NaN;
        mount(chartEmpty, h('p', { text: `No ${attr} values in ${snap.label}.` }),
          Number.isFinite(newest) ? h('p', { class: 'muted', text: `The newest record is from ${fmtTime(newest)} (${zoneLabel()}).` }) : null,
          snap.kind === 'all' ? null : all);
      }
      return;
    }
    chartEmpty.hidden = true;
    chartBox.hidden = false;
    const unit = units[attr] || '';
    try {
      await chart.show({ attr, unit, intervalMs: snap.intervalMs, fromMs: snap.fromMs, toMs: snap.viewEndMs, buckets: list });
    } catch (e) { chartStatus.error(`The chart library did not load: ${messageOf(e)}`); return; }
    describe(snap);
  }

  function describe(snap) {
    const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
    const what = `${plural(chart.records, 'record')}, average per ${intervalText(snap.intervalMs)} with its min–max band in ${plural(chart.buckets, 'bucket')}`;
    chartBox.setAttribute('aria-label', `Chart of ${attr} over ${snap.label}: ${what}, times in ${zoneLabel()}`);
    chartNote.textContent = `${attr}: ${what}, from ${fmtTime(snap.fromMs)} to ${fmtTime(snap.viewEndMs)} (${zoneLabel()}).`;
  }

  return {
    panel,
    /** The attribute charted; '' when the model has no numeric one. */
    attr: () => attr,
    widthPx: () => chartBox.clientWidth || 600,
    async show(buckets, snap, latest) { chartStatus.clear(); await draw(buckets, snap, latest); },
    failed(error) { chart.clear(); chartStatus.error(`Loading the chart failed: ${messageOf(error)}`); },
    /**
     * Adds live records (in the window) to the buckets drawn; a recent window slides to now, which moves
     * the snapshot's `fromMs` and `viewEndMs` with it. False when no buckets are drawn to add them to.
     */
    append(records, snap) {
      if (!chart.buckets) return false;
      for (const r of records) chart.add(createAtMs(r.create_at), r[attr]);
      if (snap.kind === 'recent') {
        const now = serverNow();
        snap.fromMs = now - snap.spanMs;
        snap.viewEndMs = now;
        chart.slide(snap.fromMs, now);
      }
      chart.redraw();
      describe(snap);
      return true;
    },
    /** The zone in use changed: the axis and the texts follow it. */
    rezone(snap, latest) {
      if (chart.buckets) chart.rezone().then(() => describe(snap), (e) => chartStatus.error(messageOf(e)));
      else if (snap && !chartEmpty.hidden) draw([], snap, latest);
    },
    destroy: () => chart.destroy(),
  };
}
