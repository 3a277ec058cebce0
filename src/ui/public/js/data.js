// The Data tab of a published model: paged table, latest record, chart, export and clear.
import { h, mount, select, fmtBytes, fmtValue, uid } from './dom.js';
import { ApiError, get, getSecret, rawFetch, del, messageOf } from './api.js';
import { notify, confirmDialog, statusLine } from './ui.js';
import { NUMERIC } from './state.js';
import { loadUPlot } from './chart.js';
import { importSection } from './transfers.js';

/**
 * The data secret as a request header. Never in the URL: proxies, browser history and server logs keep
 * URLs. A header carries printable ASCII only, so another secret cannot be sent from here.
 */
function secretHeader(secret, path) {
  if (!/^[\x20-\x7e]*$/.test(secret)) {
    throw new ApiError(0, 'The data secret has characters an HTTP header cannot carry: make an ASCII secret the first [main] dataschema_secrets value', path);
  }
  return { 'X-Api-Secret': secret };
}

/** Query a data endpoint with the secret; on 401 refresh the secret once (it may have been rotated). */
export async function queryData(path, params) {
  const ask = async (force) => get(path, params, { auth: false, headers: secretHeader(await getSecret(force), path) });
  try {
    return await ask(false);
  } catch (e) {
    if (e.status !== 401) throw e;
    return ask(true);
  }
}

const REFRESH = [['0', 'Off'], ['2', 'every 2 s'], ['5', 'every 5 s'], ['10', 'every 10 s'], ['30', 'every 30 s'], ['60', 'every minute']];

export function renderDataTab(ctx, body, m) {
  if (!m.published) {
    mount(body, h('section', { class: 'panel' }, h('h2', { text: 'Data' }),
      h('p', {}, 'This model is a draft. ', h('a', { href: `#/models/${m.uuid}/attributes`, text: 'Publish it' }), ' first: scripts can store data only in a published model.')));
    return;
  }
  const allFields = ['id', 'create_at', ...m.attributes.map((a) => a.name)];
  const st = { current: 1, size: 25, order: 'desc', fields: new Set(allFields), total: 0, records: [], loading: false, timer: 0, chartAttr: '' };
  const numeric = m.attributes.filter((a) => NUMERIC.has(a.type));
  st.chartAttr = numeric.length ? numeric[0].name : '';

  // --- controls
  const sizeIn = h('input', { id: 'page-size', type: 'number', min: '1', max: '1000', step: '1', value: String(st.size), inputmode: 'numeric' });
  const orderSel = select([['desc', 'Newest first'], ['asc', 'Oldest first']], st.order, { id: 'order' });
  const refreshBtn = h('button', { type: 'button', class: 'primary', id: 'refresh', text: 'Refresh' });
  const autoSel = select(REFRESH, '0', { id: 'auto-refresh' });
  const stamp = h('span', { class: 'muted', id: 'refreshed', 'aria-live': 'off' });
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
  const fieldsSummary = h('summary', { text: `Fields (${allFields.length} of ${allFields.length})` });
  const controls = h('form', { class: 'controls', 'aria-label': 'Query options' },
    h('div', { class: 'field inline' }, h('label', { for: 'page-size', text: 'Page size' }), sizeIn),
    h('div', { class: 'field inline' }, h('label', { for: 'order', text: 'Order' }), orderSel),
    h('div', { class: 'field inline' }, h('label', { for: 'auto-refresh', text: 'Auto-refresh' }), autoSel),
    refreshBtn, stamp,
    h('details', { class: 'fields-pick' }, fieldsSummary, h('fieldset', {}, h('legend', { class: 'sr-only', text: 'Fields to return (select)' }), fieldBoxes)));
  const sizeErr = h('p', { class: 'field-error', id: 'page-size-err', hidden: true });
  sizeIn.setAttribute('aria-describedby', sizeErr.id);
  controls.addEventListener('submit', (e) => { e.preventDefault(); st.current = 1; load(); });
  sizeIn.addEventListener('change', () => { st.current = 1; load(); });
  orderSel.addEventListener('change', () => { st.order = orderSel.value; st.current = 1; load(); });
  refreshBtn.addEventListener('click', () => load());
  autoSel.addEventListener('change', () => setAuto(Number(autoSel.value)));

  // --- latest, chart, table
  const latestBox = h('dl', { class: 'kv', id: 'latest' });
  const latestStatus = statusLine();
  const chartSel = select(numeric.map((a) => [a.name, `${a.name}${a.unit ? ` (${a.unit})` : ''}`]), st.chartAttr, { id: 'chart-attr', disabled: !numeric.length });
  const chartBox = h('div', { class: 'chart', id: 'chart', role: 'img', 'aria-label': 'Chart' });
  const chartNote = h('p', { class: 'muted small-text' });
  chartSel.addEventListener('change', () => { st.chartAttr = chartSel.value; drawChart(); });
  const tableWrap = h('div', { class: 'table-wrap', id: 'data-table-wrap' });
  const tableStatus = statusLine();
  const pageInfo = h('span', { id: 'page-info', 'aria-live': 'polite' });
  const prev = h('button', { type: 'button', text: '‹ Previous', id: 'prev-page' });
  const next = h('button', { type: 'button', text: 'Next ›', id: 'next-page' });
  const pageIn = h('input', { type: 'number', id: 'page-no', min: '1', value: '1', class: 'narrow' });
  prev.addEventListener('click', () => { if (st.current > 1) { st.current -= 1; load(); } });
  next.addEventListener('click', () => { st.current += 1; load(); });
  pageIn.addEventListener('change', () => { const n = Math.max(1, Math.floor(Number(pageIn.value) || 1)); st.current = n; load(); });

  // --- export / clear
  const fmtSel = select([['csv', 'CSV'], ['xlsx', 'Excel (XLSX)'], ['jsonl', 'JSON Lines']], 'csv', { id: 'export-format' });
  const exportBtn = h('button', { type: 'button', class: 'primary', id: 'export', text: 'Export' });
  const cancelExport = h('button', { type: 'button', id: 'export-cancel', text: 'Cancel export', hidden: true });
  const progress = h('progress', { id: 'export-progress', max: '1', value: '0', hidden: true, 'aria-label': 'Export progress' });
  const progressText = h('p', { id: 'export-status', role: 'status', 'aria-live': 'polite', class: 'muted' });
  const clearBtn = h('button', { type: 'button', class: 'danger', id: 'clear', text: 'Clear all data…' });
  let exportAbort = null;
  exportBtn.addEventListener('click', () => runExport());
  cancelExport.addEventListener('click', () => { if (exportAbort) exportAbort.abort(); });
  clearBtn.addEventListener('click', () => runClear());

  mount(body,
    h('section', { class: 'panel', 'aria-labelledby': 'q-title' }, h('h2', { id: 'q-title', class: 'sr-only', text: 'Query' }), controls, sizeErr),
    h('div', { class: 'cols' },
      h('section', { class: 'panel', 'aria-labelledby': 'latest-title' }, h('h2', { id: 'latest-title', text: 'Latest record' }), latestStatus.el, latestBox),
      h('section', { class: 'panel grow', 'aria-labelledby': 'chart-title' },
        h('div', { class: 'panel-head' }, h('h2', { id: 'chart-title', text: 'Chart' }),
          numeric.length ? h('div', { class: 'field inline' }, h('label', { for: 'chart-attr', text: 'Attribute' }), chartSel) : null),
        numeric.length ? chartBox : h('p', { class: 'muted', text: 'No INTEGER or FLOAT attribute to chart.' }), chartNote)),
    h('section', { class: 'panel', 'aria-labelledby': 'records-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'records-title', text: 'Records' }),
        h('div', { class: 'pager' }, prev, h('label', { for: 'page-no', text: 'Page' }), pageIn, pageInfo, next)),
      tableStatus.el, tableWrap),
    h('section', { class: 'panel', 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title', text: 'Export and clear' }),
      h('div', { class: 'controls' },
        h('div', { class: 'field inline' }, h('label', { for: 'export-format', text: 'Format' }), fmtSel), exportBtn, cancelExport, progress),
      progressText,
      h('p', { class: 'hint' }, 'Clear ', h('strong', { text: 'physically deletes every stored record' }), ' of this model; it cannot be undone, so export first.'),
      h('div', { class: 'actions left' }, clearBtn)),
    importSection(m, () => { st.current = 1; load(); }));

  // --- behaviour
  let seq = 0;
  async function load() {
    const size = Math.floor(Number(sizeIn.value));
    if (!Number.isFinite(size) || size < 1 || size > 1000) {
      sizeErr.textContent = 'Page size is 1 to 1000.'; sizeErr.hidden = false; sizeIn.setAttribute('aria-invalid', 'true');
      return;
    }
    sizeErr.hidden = true; sizeIn.removeAttribute('aria-invalid');
    st.size = size;
    const mySeq = ++seq;
    st.loading = true;
    refreshBtn.setAttribute('aria-busy', 'true');
    const selectList = st.fields.size === allFields.length ? undefined : allFields.filter((f) => st.fields.has(f)).join(',');
    const [list, last] = await Promise.allSettled([
      queryData('datacenter/queryDataList', { uuid: m.uuid, current: st.current, size: st.size, order: st.order, select: selectList }),
      queryData('datacenter/queryLastData', { uuid: m.uuid, select: selectList }),
    ]);
    if (mySeq !== seq) return;
    st.loading = false;
    refreshBtn.removeAttribute('aria-busy');
    if (list.status === 'fulfilled') {
      const d = list.value || {};
      st.total = Number(d.total) || 0;
      st.records = Array.isArray(d.records) ? d.records : [];
      tableStatus.clear();
      renderTable();
    } else {
      tableStatus.error(`Loading records failed: ${messageOf(list.reason)}`);
    }
    if (last.status === 'fulfilled') { latestStatus.clear(); renderLatest(last.value); } else latestStatus.error(`Loading the latest record failed: ${messageOf(last.reason)}`);
    const pages = Math.max(1, Math.ceil(st.total / st.size));
    pageInfo.textContent = `of ${pages} · ${st.total} record${st.total === 1 ? '' : 's'}`;
    pageIn.value = String(st.current);
    pageIn.max = String(pages);
    prev.disabled = st.current <= 1;
    next.disabled = st.current >= pages;
    stamp.textContent = `Updated ${new Date().toLocaleTimeString()}`;
    drawChart();
  }

  function columns() {
    const keys = allFields.filter((f) => st.fields.has(f));
    const extra = new Set();
    for (const r of st.records) for (const k of Object.keys(r)) if (!keys.includes(k)) extra.add(k);
    return [...keys, ...extra];
  }

  function renderTable() {
    const cols = columns();
    const units = Object.fromEntries(m.attributes.map((a) => [a.name, a.unit]));
    mount(tableWrap, h('table', { class: 'grid data', id: 'data-table' },
      h('caption', { class: 'sr-only', text: `Records of ${m.name}, page ${st.current}` }),
      h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c, c === 'create_at' ? h('span', { class: 'muted', text: ' (UTC)' }) : (units[c] ? h('span', { class: 'muted', text: ` (${units[c]})` }) : null))))),
      h('tbody', {}, st.records.length
        ? st.records.map((r) => h('tr', {}, cols.map((c) => h('td', { class: typeof r[c] === 'number' ? 'num' : '', text: fmtValue(r[c]) }))))
        : h('tr', {}, h('td', { colspan: String(cols.length), class: 'muted', text: st.total ? 'No records on this page.' : 'No records stored yet.' })))));
  }

  function renderLatest(rec) {
    const entries = rec && typeof rec === 'object' ? Object.entries(rec) : [];
    if (!entries.length) { mount(latestBox, h('p', { class: 'muted', text: 'No record yet.' })); return; }
    mount(latestBox, entries.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: fmtValue(v) })]));
  }

  let plot = null;
  let ro = null;
  async function drawChart() {
    if (!numeric.length) return;
    const attr = st.chartAttr;
    const pts = st.records
      .map((r) => ({ id: r.id, t: Date.parse(r.create_at), v: r[attr] }))
      .filter((p) => Number.isFinite(p.t) && typeof p.v === 'number')
      .sort((a, b) => (a.t - b.t) || ((a.id || 0) - (b.id || 0)));
    if (!st.fields.has(attr) || !st.fields.has('create_at')) {
      chartNote.textContent = `Select the fields create_at and ${attr} to chart them.`;
    } else chartNote.textContent = `${pts.length} point${pts.length === 1 ? '' : 's'}: ${attr} over the records on screen.`;
    chartBox.setAttribute('aria-label', `Line chart of ${attr} over ${pts.length} records`);
    let U;
    try { U = await loadUPlot(); } catch (e) { chartNote.textContent = `The chart library did not load: ${messageOf(e)}`; return; }
    // create_at has second resolution: spread the records of one second over it, in id order.
    const xs = [];
    for (let i = 0; i < pts.length;) {
      let j = i;
      while (j < pts.length && pts[j].t === pts[i].t) j++;
      for (let k = i; k < j; k++) xs.push(pts[k].t / 1000 + (k - i) / (j - i));
      i = j;
    }
    const data = [xs, pts.map((p) => p.v)];
    const width = Math.max(240, chartBox.clientWidth || 480);
    if (plot && plot.series[1].label === attr) { plot.setData(data); return; }
    if (plot) { plot.destroy(); plot = null; }
    const unit = (m.attributes.find((a) => a.name === attr) || {}).unit || '';
    plot = new U({
      width, height: 220,
      series: [{}, { label: attr, stroke: '#1f6fb2', width: 2, fill: 'rgba(31,111,178,0.08)', points: { show: pts.length <= 200 } }],
      scales: { x: { time: true, range: (u, min, max) => (max - min < 10 ? [min - 5, max + 5] : [min, max]) } },
      axes: [{}, { label: unit || undefined, size: 60 }],
      legend: { show: true },
      cursor: { drag: { x: false, y: false } },
    }, data, chartBox);
    if (!ro && typeof ResizeObserver !== 'undefined') {
      ro = new ResizeObserver(() => { if (plot) plot.setSize({ width: Math.max(240, chartBox.clientWidth), height: 220 }); });
      ro.observe(chartBox);
    }
  }

  function setAuto(sec) {
    if (st.timer) { clearInterval(st.timer); st.timer = 0; }
    if (sec > 0) st.timer = setInterval(() => { if (!st.loading && !document.hidden) load(); }, sec * 1000);
  }

  async function runExport() {
    const format = fmtSel.value;
    exportAbort = new AbortController();
    exportBtn.disabled = true;
    cancelExport.hidden = false;
    progress.hidden = false;
    progress.removeAttribute('value');
    progressText.className = 'muted';
    progressText.textContent = 'Starting the export…';
    const expected = st.total;
    try {
      const res = await rawFetch('datacenter/exportData', { uuid: m.uuid, format }, exportAbort.signal);
      const reader = res.body.getReader();
      const chunks = [];
      let bytes = 0;
      let lines = 0;
      let lastPaint = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
        bytes += value.length;
        for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
        const now = performance.now();
        if (now - lastPaint > 100) {
          lastPaint = now;
          if (format === 'xlsx') {
            // A compressed workbook has no line per record: bytes are all there is to show.
            progressText.textContent = `Receiving: ${fmtBytes(bytes)}${expected ? ` for about ${expected} records` : ''}…`;
          } else {
            const recs = format === 'csv' ? Math.max(0, lines - 1) : lines;
            if (expected > 0) { progress.max = expected; progress.value = Math.min(recs, expected); }
            progressText.textContent = `Receiving: ${fmtBytes(bytes)}, ${recs} record${recs === 1 ? '' : 's'}${expected ? ` of about ${expected}` : ''}…`;
          }
        }
      }
      const recs = format === 'xlsx' ? expected : format === 'csv' ? Math.max(0, lines - 1) : lines;
      progress.max = 1; progress.value = 1;
      const type = res.headers.get('Content-Type') || (format === 'csv' ? 'text/csv' : 'application/x-ndjson');
      const blob = new Blob(chunks, { type });
      const cd = res.headers.get('Content-Disposition') || '';
      const mm = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
      const stampName = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
      let filename = mm ? decodeURIComponent(mm[1]) : `${m.name}-${stampName}.${format}`;
      filename = filename.replace(/[/\\]/g, '_');
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: filename, class: 'offscreen' });
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      progressText.className = 'status-line ok';
      progressText.textContent = `Exported ${recs} record${recs === 1 ? '' : 's'} (${fmtBytes(bytes)}) to ${filename}.`;
    } catch (e) {
      progress.hidden = true;
      progressText.className = 'status-line error';
      progressText.textContent = e && e.name === 'AbortError' ? 'Export cancelled.' : `Export failed: ${messageOf(e)}`;
      if (!(e && e.name === 'AbortError')) progressText.setAttribute('role', 'alert');
    } finally {
      exportBtn.disabled = false;
      cancelExport.hidden = true;
      exportAbort = null;
    }
  }

  async function runClear() {
    const ok = await confirmDialog({
      title: `Clear all data of "${m.name}"?`,
      body: [
        h('p', {}, st.total === 1 ? 'The ' : 'All ', h('strong', { text: `${st.total} stored record${st.total === 1 ? '' : 's'}` }), ` of this model ${st.total === 1 ? 'is' : 'are'} `,
          h('strong', { text: 'physically deleted' }), '. This cannot be undone; record ids restart at 1.'),
        h('p', { text: 'Export the data first if you may need it. The model and its attributes stay.' }),
      ],
      confirmLabel: 'Clear all data', danger: true, typeToConfirm: m.name,
      action: () => del('datacenter/clearSchemaData', { uuid: m.uuid }),
    });
    if (ok) {
      notify(`All data of "${m.name}" cleared.`, 'ok');
      st.current = 1;
      load();
    }
  }

  ctx.setCleanup(() => {
    setAuto(0);
    if (exportAbort) exportAbort.abort();
    if (ro) ro.disconnect();
    if (plot) plot.destroy();
  });
  load();
}
