// The reading part of the Data tab: a time window, the chart of its buckets (queryAggregate), the paged
// table of its records (queryDataList from/to), the latest record, and live updates from the stream. The
// toolbar is data-controls.js, the chart panel data-chart-panel.js.
//
// Each load takes a snapshot of everything stored before a cut (now, to the second, on the gateway's
// clock) and opens the stream after the newest id before that cut; records the stream brings are merged
// into the snapshot, so nothing is counted twice or missed between the queries and the stream.
import { h, mount, fmtValue } from '../core/dom.js';
import { messageOf } from '../core/api.js';
import { statusLine } from '../core/ui.js';
import { NUMERIC } from '../core/state.js';
import { fitIntervalMs, intervalParam } from './chart.js';
import { createQueryControls } from './data-controls.js';
import { createChartPanel } from './data-chart-panel.js';
import { followModel } from './data-live.js';
import { FATAL, RETRY_FIRST_MS, RETRY_MAX_MS } from './live.js';
import { createAtMs, fmtTime, onZoneChanged, serverNow, zoneLabel } from '../core/time.js';
import { queryData } from './data-query.js';

/** Reloads the stream asks for (a gap, an update of the last record, a clear) come at most this often. */
const RELOAD_SPACING_MS = 2000;

const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** @returns {{ panels: HTMLElement[], reload(): void, storedTotal(): number, close(): void }} */
export function createRecordsView(m) {
  const allFields = ['id', 'create_at', ...m.attributes.map((a) => a.name)];
  const numeric = m.attributes.filter((a) => NUMERIC.has(a.type));
  const units = Object.fromEntries(m.attributes.map((a) => [a.name, a.unit]));
  const st = {
    current: 1, size: 25,
    total: 0, records: [], latest: null, live: true,
    /** Records stored before the cut: the table and chart show them; `storedBefore` counts all of them. */
    snap: null,
    newSince: 0,
  };

  const controls = createQueryControls({
    allFields, size: st.size, order: 'desc',
    onQuery: (firstPage) => { if (firstPage) st.current = 1; load(); },
    onLive: (on) => { st.live = on; if (on) load(); else { stopStream(); controls.showLive('off'); } },
  });
  const { picker, fields } = controls;
  const chartPanel = createChartPanel({ numeric, units, onAttrChange: () => load(), onShowAll: () => picker.showAll() });

  // --- latest and table
  const latestBox = h('dl', { class: 'kv', id: 'latest' });
  const latestStatus = statusLine();
  const tableWrap = h('div', { class: 'table-wrap', id: 'data-table-wrap' });
  const tableStatus = statusLine();
  const pageInfo = h('span', { id: 'page-info', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', text: '‹ Previous', id: 'prev-page' });
  const next = h('button', { type: 'button', text: 'Next ›', id: 'next-page' });
  const pageIn = h('input', { type: 'number', id: 'page-no', min: '1', value: '1', class: 'narrow' });
  const showNewest = h('button', { type: 'button', class: 'small', id: 'show-newest', text: 'Show newest' });
  const newNote = h('p', { class: 'hint', id: 'new-records', hidden: true }, h('span'), ' ', showNewest);
  prev.addEventListener('click', () => { if (st.current > 1) { st.current -= 1; load(); } });
  next.addEventListener('click', () => { st.current += 1; load(); });
  pageIn.addEventListener('change', () => { st.current = Math.max(1, Math.floor(Number(pageIn.value) || 1)); load(); });
  showNewest.addEventListener('click', () => { st.current = 1; controls.setOrder('desc'); load(); });

  const panels = [
    controls.panel,
    h('div', { class: 'cols' },
      h('section', { class: 'panel', 'aria-labelledby': 'latest-title' }, h('h2', { id: 'latest-title', text: 'Latest record' }), latestStatus.el, latestBox),
      chartPanel.panel),
    h('section', { class: 'panel', 'aria-labelledby': 'records-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'records-title', text: 'Records' }),
        h('div', { class: 'pager' }, prev, h('label', { for: 'page-no', text: 'Page' }), pageIn, pageInfo, next)),
      tableStatus.el, newNote, tableWrap),
  ];

  // --- loading a snapshot
  let seq = 0;
  let lastLoadAt = 0;
  async function load() {
    const size = controls.pageSize();
    if (size === null) return;
    st.size = size;
    const mySeq = ++seq;
    lastLoadAt = Date.now();
    stopStream();
    controls.setBusy(true);
    const choice = picker.choice();
    const cutMs = Math.floor(serverNow() / 1000) * 1000;
    let fromMs;
    let endMs = Infinity;
    if (choice.kind === 'recent') fromMs = cutMs - choice.spanMs;
    else if (choice.kind === 'custom') { fromMs = choice.fromMs; endMs = choice.toMs; }
    else {
      // All records: from the oldest one (at least a minute, so a new model's chart has room).
      const oldest = await queryData('datacenter/queryDataList', { uuid: m.uuid, size: 1, order: 'asc', select: 'create_at' }).catch(() => null);
      if (mySeq !== seq) return;
      const first = oldest && oldest.records && oldest.records[0] ? createAtMs(oldest.records[0].create_at) : NaN;
      fromMs = Math.min(Number.isFinite(first) ? first : cutMs, cutMs - 60_000);
    }
    const toMs = Math.min(endMs, cutMs);
    const hasWindow = fromMs < toMs;
    const viewEndMs = endMs === Infinity ? cutMs : endMs;
    const intervalMs = fitIntervalMs(viewEndMs - fromMs, chartPanel.widthPx());
    const selectList = fields.size === allFields.length ? undefined : allFields.filter((f) => fields.has(f)).join(',');
    const range = { from: iso(fromMs), to: iso(toMs) };
    const none = Promise.resolve(null);
    const [list, last, before, agg] = await Promise.allSettled([
      hasWindow ? queryData('datacenter/queryDataList', { uuid: m.uuid, current: st.current, size: st.size, order: controls.order(), select: selectList, ...range }) : none,
      queryData('datacenter/queryLastData', { uuid: m.uuid }),
      // The newest record before the cut: the stream starts after it.
      queryData('datacenter/queryDataList', { uuid: m.uuid, size: 1, order: 'desc', select: 'id', to: iso(cutMs) }),
      hasWindow && chartPanel.attr()
        ? queryData('datacenter/queryAggregate', { uuid: m.uuid, ...range, interval: intervalParam(intervalMs), fn: 'min,max,avg,count', select: chartPanel.attr() })
        : none,
    ]);
    if (mySeq !== seq) return;
    controls.setBusy(false);
    const beforeCut = before.status === 'fulfilled' && before.value ? before.value : { total: 0, records: [] };
    st.snap = {
      kind: choice.kind, label: choice.label, spanMs: choice.spanMs, fromMs, endMs, toMs, viewEndMs, intervalMs,
      lastId: beforeCut.records[0] ? beforeCut.records[0].id : 0,
      storedBefore: Number(beforeCut.total) || 0,
      arrived: 0,
    };
    st.newSince = 0;
    newNote.hidden = true;
    picker.setShown(fromMs, viewEndMs);

    if (list.status === 'fulfilled') {
      const d = list.value || { total: 0, records: [] };
      st.total = Number(d.total) || 0;
      st.records = Array.isArray(d.records) ? d.records : [];
      tableStatus.clear();
      renderTable();
    } else tableStatus.error(`Loading records failed: ${messageOf(list.reason)}`);
    if (last.status === 'fulfilled') {
      latestStatus.clear();
      st.latest = last.value && Object.keys(last.value).length ? last.value : null;
      renderLatest();
    } else latestStatus.error(`Loading the latest record failed: ${messageOf(last.reason)}`);
    renderPager();
    if (agg.status === 'fulfilled') await chartPanel.show(agg.value ? agg.value.buckets : [], st.snap, st.latest);
    else chartPanel.failed(agg.reason);
    if (!st.live || document.hidden) return;
    if (before.status === 'rejected') { retryLoad(before.reason); return; }
    loadRetryMs = RETRY_FIRST_MS;
    startStream();
  }

  /** The gateway could not be read: try again with back-off, as the stream does, unless it cannot help. */
  let loadRetryMs = RETRY_FIRST_MS;
  function retryLoad(error) {
    if (FATAL.has(error && error.status)) { controls.showLive('failed', error); return; }
    controls.showLive('retrying', error, loadRetryMs);
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => { reloadTimer = 0; load(); }, loadRetryMs);
    loadRetryMs = Math.min(RETRY_MAX_MS, loadRetryMs * 2);
  }

  function pick(rec) {
    return Object.fromEntries(Object.entries(rec).filter(([k]) => fields.has(k)));
  }

  function renderTable() {
    const keys = allFields.filter((f) => fields.has(f));
    const extra = new Set();
    for (const r of st.records) for (const k of Object.keys(r)) if (!keys.includes(k)) extra.add(k);
    const cols = [...keys, ...extra];
    const emptyText = st.snap && st.snap.storedBefore + st.snap.arrived > 0
      ? (st.total ? 'No records on this page.' : `No records in ${st.snap.label}.`)
      : 'No records stored yet.';
    mount(tableWrap, h('table', { class: 'grid data', id: 'data-table' },
      h('caption', { class: 'sr-only', text: `Records of ${m.name}, page ${st.current}` }),
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c,
        c === 'create_at' ? h('span', { class: 'muted', text: ` (${zoneLabel()})` }) : (units[c] ? h('span', { class: 'muted', text: ` (${units[c]})` }) : null))))),
      h('tbody', {}, st.records.length
        ? st.records.map((r) => h('tr', {}, cols.map((c) => h('td', { class: typeof r[c] === 'number' ? 'num' : '', text: cell(c, r[c]) }))))
        : h('tr', {}, h('td', { colspan: String(cols.length), class: 'muted', text: emptyText })))));
  }

  function cell(field, v) {
    if (field !== 'create_at') return fmtValue(v);
    const ms = createAtMs(v);
    return Number.isFinite(ms) ? fmtTime(ms) : fmtValue(v);
  }

  function renderLatest() {
    const entries = st.latest ? Object.entries(pick(st.latest)) : [];
    if (!entries.length) { mount(latestBox, h('p', { class: 'muted', text: 'No record yet.' })); return; }
    mount(latestBox, entries.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: cell(k, v) })]));
  }

  function renderPager() {
    const pages = Math.max(1, Math.ceil(st.total / st.size));
    const s = st.snap;
    const where = s ? (s.kind === 'all' ? '' : ` from ${fmtTime(s.fromMs)} to ${s.endMs === Infinity ? 'now' : fmtTime(s.endMs)}`) : '';
    pageInfo.textContent = `of ${pages} · ${st.total} record${st.total === 1 ? '' : 's'}${where}`;
    pageIn.value = String(st.current);
    pageIn.max = String(pages);
    prev.disabled = st.current <= 1;
    next.disabled = st.current >= pages;
  }

  // --- live updates
  let follow = null;
  let reloadTimer = 0;

  function stopStream() {
    if (follow) { follow.close(); follow = null; }
    clearTimeout(reloadTimer); reloadTimer = 0;
  }

  function startStream() {
    const snap = st.snap;
    const streamed = allFields.filter((f) => fields.has(f) || f === 'id' || f === 'create_at' || f === chartPanel.attr());
    follow = followModel({
      uuid: m.uuid,
      afterId: snap.lastId,
      select: streamed.length === allFields.length ? undefined : streamed.join(','),
      onBatch: (recs) => { if (st.snap === snap) applyBatch(recs); },
      onUpdated: (rec) => { st.latest = rec; renderLatest(); },
      onReload: reloadSoon,
      onStatus: (s) => controls.showLive(s.state, s.error, s.retryInMs),
    });
  }

  function reloadSoon() {
    if (reloadTimer) return;
    reloadTimer = setTimeout(() => { reloadTimer = 0; load(); }, Math.max(0, lastLoadAt + RELOAD_SPACING_MS - Date.now()));
  }

  /** Merge new records into the snapshot: latest, total, the first page of newest-first, the chart. */
  function applyBatch(recs) {
    const s = st.snap;
    st.latest = recs[recs.length - 1];
    renderLatest();
    s.arrived += recs.length;
    const inWindow = recs.filter((r) => { const t = createAtMs(r.create_at); return t >= s.fromMs && t < s.endMs; });
    if (!inWindow.length) return;
    st.total += inWindow.length;
    if (st.current === 1 && controls.order() === 'desc') {
      st.records = [...inWindow.reverse().map(pick), ...st.records].slice(0, st.size);
      renderTable();
    } else {
      st.newSince += inWindow.length;
      newNote.firstChild.textContent = `${st.newSince} new record${st.newSince === 1 ? '' : 's'} since this page was loaded.`;
      newNote.hidden = false;
    }
    renderPager();
    if (!chartPanel.attr()) return;
    if (!chartPanel.append(inWindow, s)) reloadSoon();
  }

  // --- zone and visibility
  const offZone = onZoneChanged(() => {
    controls.rezone();
    renderTable();
    renderLatest();
    renderPager();
    chartPanel.rezone(st.snap, st.latest);
  });
  controls.showLive(st.live ? 'connecting' : 'off');

  // The stream stops while the page is hidden and the window is read again when it comes back.
  const onVisibility = () => {
    if (document.hidden) { if (follow) { stopStream(); controls.showLive('paused'); } } else if (st.live && !follow) load();
  };
  document.addEventListener('visibilitychange', onVisibility);
  // A wider or narrower chart fits another bucket width.
  let resizeTimer = 0;
  const onResize = () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const s = st.snap;
      if (s && fitIntervalMs(s.viewEndMs - s.fromMs, chartPanel.widthPx()) !== s.intervalMs) load();
    }, 400);
  };
  window.addEventListener('resize', onResize);

  load();
  return {
    panels,
    reload: () => { st.current = 1; load(); },
    /** Records stored now (for the export's progress and the clear confirmation). */
    storedTotal: () => (st.snap ? st.snap.storedBefore + st.snap.arrived : 0),
    close() {
      seq++;
      stopStream();
      offZone();
      document.removeEventListener('visibilitychange', onVisibility);
      window.removeEventListener('resize', onResize);
      clearTimeout(resizeTimer);
      chartPanel.destroy();
    },
  };
}
