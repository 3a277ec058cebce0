// The reading part of the Data tab: a time window, the chart of its buckets (queryAggregate), the paged
// table of its records (queryDataList from/to), the latest record, and live updates from the stream.
//
// Each load takes a snapshot of everything stored before a cut (now, to the second, on the gateway's
// clock) and opens the stream after the newest id before that cut; records the stream brings are merged
// into the snapshot, so nothing is counted twice or missed between the queries and the stream.
import { h, mount, select, uid, fmtValue } from './dom.js';
import { messageOf } from './api.js';
import { notify, statusLine } from './ui.js';
import { NUMERIC } from './state.js';
import { createBucketChart, fitIntervalMs, intervalParam, intervalText } from './chart.js';
import { createWindowPicker } from './data-window.js';
import { followModel } from './data-live.js';
import { FATAL, RETRY_FIRST_MS, RETRY_MAX_MS } from './live.js';
import { createAtMs, fmtTime, onZoneChanged, serverNow, setTimesInUtc, timesInUtc, zoneLabel } from './time.js';
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
    current: 1, size: 25, order: 'desc', fields: new Set(allFields), chartAttr: numeric.length ? numeric[0].name : '',
    total: 0, records: [], latest: null, live: true,
    /** Records stored before the cut: the table and chart show them; `storedBefore` counts all of them. */
    snap: null,
    newSince: 0,
  };

  // --- query controls
  const picker = createWindowPicker({ onChange: () => { st.current = 1; load(); } });
  const sizeIn = h('input', { id: 'page-size', type: 'number', min: '1', max: '1000', step: '1', value: String(st.size), inputmode: 'numeric' });
  const orderSel = select([['desc', 'Newest first'], ['asc', 'Oldest first']], st.order, { id: 'order' });
  const refreshBtn = h('button', { type: 'button', class: 'primary', id: 'refresh', text: 'Refresh' });
  const liveBox = h('input', { type: 'checkbox', id: 'live', checked: true });
  const liveStatus = h('span', { id: 'live-status', class: 'live-status', role: 'status' });
  const utcBox = h('input', { type: 'checkbox', id: 'tz-utc', checked: timesInUtc() });
  const zoneText = h('span', { id: 'tz-name', class: 'muted' });
  const fieldsSummary = h('summary', { text: `Fields (${allFields.length} of ${allFields.length})` });
  const fieldBoxes = allFields.map((name) => {
    const id = uid('sel');
    const cb = h('input', { type: 'checkbox', id, value: name, checked: true });
    cb.addEventListener('change', () => {
      if (cb.checked) st.fields.add(name); else st.fields.delete(name);
      if (!st.fields.size) { cb.checked = true; st.fields.add(name); notify('Keep at least one field.', 'info'); return; }
      fieldsSummary.textContent = `Fields (${st.fields.size} of ${allFields.length})`;
      load();
    });
    return h('span', { class: 'check' }, cb, h('label', { for: id, text: name }));
  });
  const controls = h('form', { class: 'controls', 'aria-label': 'Query options' },
    picker.el,
    h('div', { class: 'field inline' }, h('label', { for: 'page-size', text: 'Page size' }), sizeIn),
    h('div', { class: 'field inline' }, h('label', { for: 'order', text: 'Order' }), orderSel),
    refreshBtn,
    h('span', { class: 'check' }, liveBox, h('label', { for: 'live', text: 'Live updates' })), liveStatus,
    h('span', { class: 'check' }, utcBox, h('label', { for: 'tz-utc', text: 'Times in UTC' })), zoneText,
    h('details', { class: 'fields-pick' }, fieldsSummary, h('fieldset', {}, h('legend', { class: 'sr-only', text: 'Fields to return (select)' }), fieldBoxes)));
  const sizeErr = h('p', { class: 'field-error', id: 'page-size-err', hidden: true });
  sizeIn.setAttribute('aria-describedby', sizeErr.id);
  controls.addEventListener('submit', (e) => { e.preventDefault(); st.current = 1; load(); });
  sizeIn.addEventListener('change', () => { st.current = 1; load(); });
  orderSel.addEventListener('change', () => { st.order = orderSel.value; st.current = 1; load(); });
  refreshBtn.addEventListener('click', () => load());
  liveBox.addEventListener('change', () => { st.live = liveBox.checked; if (st.live) load(); else { stopStream(); showLive('off'); } });
  utcBox.addEventListener('change', () => setTimesInUtc(utcBox.checked));

  // --- latest, chart, table
  const latestBox = h('dl', { class: 'kv', id: 'latest' });
  const latestStatus = statusLine();
  const chartSel = select(numeric.map((a) => [a.name, `${a.name}${a.unit ? ` (${a.unit})` : ''}`]), st.chartAttr, { id: 'chart-attr', disabled: !numeric.length });
  const chartBox = h('div', { class: 'chart', id: 'chart', role: 'img', 'aria-label': 'Chart' });
  const chartEmpty = h('div', { class: 'chart-empty', id: 'chart-empty', hidden: true });
  const chartNote = h('p', { class: 'muted small-text', id: 'chart-note' });
  const chartStatus = statusLine();
  const chart = createBucketChart(chartBox);
  chartSel.addEventListener('change', () => { st.chartAttr = chartSel.value; load(); });
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
  showNewest.addEventListener('click', () => { st.current = 1; st.order = 'desc'; orderSel.value = 'desc'; load(); });

  const panels = [
    h('section', { class: 'panel', 'aria-labelledby': 'q-title' }, h('h2', { id: 'q-title', class: 'sr-only', text: 'Query' }), controls, sizeErr),
    h('div', { class: 'cols' },
      h('section', { class: 'panel', 'aria-labelledby': 'latest-title' }, h('h2', { id: 'latest-title', text: 'Latest record' }), latestStatus.el, latestBox),
      h('section', { class: 'panel grow', 'aria-labelledby': 'chart-title' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'chart-title', text: 'Chart' }),
          numeric.length ? h('div', { class: 'field inline' }, h('label', { for: 'chart-attr', text: 'Attribute' }), chartSel) : null),
        chartStatus.el,
        numeric.length ? [chartBox, chartEmpty] : h('p', { class: 'muted', text: 'No INTEGER or FLOAT attribute to chart.' }), chartNote)),
    h('section', { class: 'panel', 'aria-labelledby': 'records-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'records-title', text: 'Records' }),
        h('div', { class: 'pager' }, prev, h('label', { for: 'page-no', text: 'Page' }), pageIn, pageInfo, next)),
      tableStatus.el, newNote, tableWrap),
  ];

  // --- loading a snapshot
  let seq = 0;
  let lastLoadAt = 0;
  async function load() {
    const size = Math.floor(Number(sizeIn.value));
    if (!Number.isFinite(size) || size < 1 || size > 1000) {
      sizeErr.textContent = 'Page size is 1 to 1000.'; sizeErr.hidden = false; sizeIn.setAttribute('aria-invalid', 'true');
      return;
    }
    sizeErr.hidden = true; sizeIn.removeAttribute('aria-invalid');
    st.size = size;
    const mySeq = ++seq;
    lastLoadAt = Date.now();
    stopStream();
    refreshBtn.setAttribute('aria-busy', 'true');
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
    const intervalMs = fitIntervalMs(viewEndMs - fromMs, chartBox.clientWidth || 600);
    const selectList = st.fields.size === allFields.length ? undefined : allFields.filter((f) => st.fields.has(f)).join(',');
    const range = { from: iso(fromMs), to: iso(toMs) };
    const none = Promise.resolve(null);
    const [list, last, before, agg] = await Promise.allSettled([
      hasWindow ? queryData('datacenter/queryDataList', { uuid: m.uuid, current: st.current, size: st.size, order: st.order, select: selectList, ...range }) : none,
      queryData('datacenter/queryLastData', { uuid: m.uuid }),
      // The newest record before the cut: the stream starts after it.
      queryData('datacenter/queryDataList', { uuid: m.uuid, size: 1, order: 'desc', select: 'id', to: iso(cutMs) }),
      hasWindow && st.chartAttr
        ? queryData('datacenter/queryAggregate', { uuid: m.uuid, ...range, interval: intervalParam(intervalMs), fn: 'min,max,avg,count', select: st.chartAttr })
        : none,
    ]);
    if (mySeq !== seq) return;
    refreshBtn.removeAttribute('aria-busy');
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
    if (agg.status === 'fulfilled') { chartStatus.clear(); await drawChart(agg.value ? agg.value.buckets : []); }
    else { chart.clear(); chartStatus.error(`Loading the chart failed: ${messageOf(agg.reason)}`); }
    if (!st.live || document.hidden) return;
    if (before.status === 'rejected') { retryLoad(before.reason); return; }
    loadRetryMs = RETRY_FIRST_MS;
    startStream();
  }

  /** The gateway could not be read: try again with back-off, as the stream does, unless it cannot help. */
  let loadRetryMs = RETRY_FIRST_MS;
  function retryLoad(error) {
    if (FATAL.has(error && error.status)) { showLive('failed', error); return; }
    showLive('retrying', error, loadRetryMs);
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(() => { reloadTimer = 0; load(); }, loadRetryMs);
    loadRetryMs = Math.min(RETRY_MAX_MS, loadRetryMs * 2);
  }

  function pick(rec) {
    return Object.fromEntries(Object.entries(rec).filter(([k]) => st.fields.has(k)));
  }

  function renderTable() {
    const keys = allFields.filter((f) => st.fields.has(f));
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

  async function drawChart(buckets) {
    if (!numeric.length) return;
    const s = st.snap;
    const attr = st.chartAttr;
    const list = buckets.map((b) => {
      const v = b[attr] || {};
      return { startMs: Date.parse(b.start), n: v.count || 0, min: v.min, max: v.max, avg: v.avg };
    }).filter((b) => b.n > 0);
    if (!list.length) {
      chart.clear();
      chartBox.hidden = true;
      chartEmpty.hidden = false;
      chartNote.textContent = '';
      const stored = s.storedBefore + s.arrived > 0;
      if (!stored) mount(chartEmpty, h('p', { text: 'No records yet.' }), h('p', { class: 'muted', text: 'Records appear here as soon as a rule stores them.' }));
      else {
        const all = h('button', { type: 'button', id: 'show-all', text: 'Show all records' });
        all.addEventListener('click', () => picker.showAll());
        const newest = st.latest ? createAtMs(st.latest.create_at) : NaN;
        mount(chartEmpty, h('p', { text: `No ${attr} values in ${s.label}.` }),
          Number.isFinite(newest) ? h('p', { class: 'muted', text: `The newest record is from ${fmtTime(newest)} (${zoneLabel()}).` }) : null,
          s.kind === 'all' ? null : all);
      }
      return;
    }
    chartEmpty.hidden = true;
    chartBox.hidden = false;
    const unit = units[attr] || '';
    try {
      await chart.show({ attr, unit, intervalMs: s.intervalMs, fromMs: s.fromMs, toMs: s.viewEndMs, buckets: list });
    } catch (e) { chartStatus.error(`The chart library did not load: ${messageOf(e)}`); return; }
    describeChart();
  }

  function describeChart() {
    const s = st.snap;
    const plural = (n, word) => `${n} ${word}${n === 1 ? '' : 's'}`;
    const what = `${plural(chart.records, 'record')}, average per ${intervalText(s.intervalMs)} with its min–max band in ${plural(chart.buckets, 'bucket')}`;
    chartBox.setAttribute('aria-label', `Chart of ${st.chartAttr} over ${s.label}: ${what}, times in ${zoneLabel()}`);
    chartNote.textContent = `${st.chartAttr}: ${what}, from ${fmtTime(s.fromMs)} to ${fmtTime(s.viewEndMs)} (${zoneLabel()}).`;
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
    const fields = allFields.filter((f) => st.fields.has(f) || f === 'id' || f === 'create_at' || f === st.chartAttr);
    follow = followModel({
      uuid: m.uuid,
      afterId: snap.lastId,
      select: fields.length === allFields.length ? undefined : fields.join(','),
      onBatch: (recs) => { if (st.snap === snap) applyBatch(recs); },
      onUpdated: (rec) => { st.latest = rec; renderLatest(); },
      onReload: reloadSoon,
      onStatus: (s) => showLive(s.state, s.error, s.retryInMs),
    });
  }

  function showLive(state, error, retryInMs) {
    liveStatus.className = `live-status ${state}`;
    if (state === 'open') liveStatus.textContent = 'Live';
    else if (state === 'connecting') liveStatus.textContent = 'Connecting…';
    else if (state === 'retrying') liveStatus.textContent = `Reconnecting in ${Math.round(retryInMs / 1000)} s (${messageOf(error)})`;
    else if (state === 'failed') liveStatus.textContent = `Live updates stopped: ${messageOf(error)}`;
    else if (state === 'paused') liveStatus.textContent = 'Paused while the page is hidden';
    else liveStatus.textContent = 'Off: Refresh to update';
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
    if (st.current === 1 && st.order === 'desc') {
      st.records = [...inWindow.reverse().map(pick), ...st.records].slice(0, st.size);
      renderTable();
    } else {
      st.newSince += inWindow.length;
      newNote.firstChild.textContent = `${st.newSince} new record${st.newSince === 1 ? '' : 's'} since this page was loaded.`;
      newNote.hidden = false;
    }
    renderPager();
    if (!st.chartAttr) return;
    if (!chart.buckets) { reloadSoon(); return; }
    for (const r of inWindow) chart.add(createAtMs(r.create_at), r[st.chartAttr]);
    if (s.kind === 'recent') {
      const now = serverNow();
      s.fromMs = now - s.spanMs;
      s.viewEndMs = now;
      chart.slide(s.fromMs, now);
    }
    chart.redraw();
    describeChart();
  }

  // --- zone and visibility
  function showZone() {
    zoneText.textContent = `Times: ${zoneLabel()}`;
    utcBox.checked = timesInUtc();
  }
  const offZone = onZoneChanged(() => {
    showZone();
    picker.rezone();
    renderTable();
    renderLatest();
    renderPager();
    if (chart.buckets) chart.rezone().then(describeChart, (e) => chartStatus.error(messageOf(e)));
    else if (st.snap && !chartEmpty.hidden) drawChart([]);
  });
  showZone();
  showLive(st.live ? 'connecting' : 'off');

  // The stream stops while the page is hidden and the window is read again when it comes back.
  const onVisibility = () => {
    if (document.hidden) { if (follow) { stopStream(); showLive('paused'); } } else if (st.live && !follow) load();
  };
  document.addEventListener('visibilitychange', onVisibility);
  // A wider or narrower chart fits another bucket width.
  let resizeTimer = 0;
  const onResize = () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      const s = st.snap;
      if (s && fitIntervalMs(s.viewEndMs - s.fromMs, chartBox.clientWidth || 600) !== s.intervalMs) load();
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
      chart.destroy();
    },
  };
}
