// The Data tab of a published model: time window, chart, paged table and latest record with live
// updates (data-records.js), export and clear.
import { h, mount, select, fmtBytes } from '../core/dom.js';
import { rawFetch, del, messageOf } from '../core/api.js';
import { notify, confirmDialog } from '../core/ui.js';
import { createRecordsView } from './data-records.js';
import { importSection } from '../core/transfers.js';
import { receive, saveAs } from '../core/download.js';

export { queryData } from './data-query.js';

export function renderDataTab(ctx, body, m) {
  if (!m.published) {
    mount(body, h('section', { class: 'panel' }, h('h2', { text: 'Data' }),
      h('p', {}, 'This model is a draft. ', h('a', { href: `#/models/${m.uuid}/attributes`, text: 'Publish it' }), ' first: scripts can store data only in a published model.')));
    return;
  }
  const records = createRecordsView(m);

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
    ...records.panels,
    h('section', { class: 'panel', 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title', text: 'Export and clear' }),
      h('div', { class: 'controls' },
        h('div', { class: 'field inline' }, h('label', { for: 'export-format', text: 'Format' }), fmtSel), exportBtn, cancelExport, progress),
      progressText,
      h('p', { class: 'hint' }, 'Clear ', h('strong', { text: 'physically deletes every stored record' }), ' of this model; it cannot be undone, so export first.'),
      h('div', { class: 'actions left' }, clearBtn)),
    importSection(m, () => records.reload()));

  async function runExport() {
    const format = fmtSel.value;
    exportAbort = new AbortController();
    exportBtn.disabled = true;
    cancelExport.hidden = false;
    progress.hidden = false;
    progress.removeAttribute('value');
    progressText.className = 'muted';
    progressText.textContent = 'Starting the export…';
    const expected = records.storedTotal();
    try {
      const res = await rawFetch('datacenter/exportData', { uuid: m.uuid, format }, exportAbort.signal);
      const { chunks, bytes, lines } = await receive(res, (p) => {
        if (format === 'xlsx') {
          // A compressed workbook has no line per record: bytes are all there is to show.
          progressText.textContent = `Receiving: ${fmtBytes(p.bytes)}${expected ? ` for about ${expected} records` : ''}…`;
          return;
        }
        const recs = format === 'csv' ? Math.max(0, p.lines - 1) : p.lines;
        if (expected > 0) { progress.max = expected; progress.value = Math.min(recs, expected); }
        progressText.textContent = `Receiving: ${fmtBytes(p.bytes)}, ${recs} record${recs === 1 ? '' : 's'}${expected ? ` of about ${expected}` : ''}…`;
      });
      const recs = format === 'xlsx' ? expected : format === 'csv' ? Math.max(0, lines - 1) : lines;
      progress.max = 1; progress.value = 1;
      const type = res.headers.get('Content-Type') || (format === 'csv' ? 'text/csv' : 'application/x-ndjson');
      const cd = res.headers.get('Content-Disposition') || '';
      const mm = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(cd);
      const stampName = new Date().toISOString().replace(/[:.]/g, '-').slice(0, 19);
      const filename = saveAs(chunks, type, mm ? decodeURIComponent(mm[1]) : `${m.name}-${stampName}.${format}`);
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
    const total = records.storedTotal();
    const ok = await confirmDialog({
      title: `Clear all data of "${m.name}"?`,
      body: [
        h('p', {}, total === 1 ? 'The ' : 'All ', h('strong', { text: `${total} stored record${total === 1 ? '' : 's'}` }), ` of this model ${total === 1 ? 'is' : 'are'} `,
          h('strong', { text: 'physically deleted' }), '. This cannot be undone; record ids restart at 1.'),
        h('p', { text: 'Export the data first if you may need it. The model and its attributes stay.' }),
      ],
      confirmLabel: 'Clear all data', danger: true, typeToConfirm: m.name,
      other: { label: 'Export now', run: () => { exportBtn.focus(); runExport(); } },
      action: () => del('datacenter/clearSchemaData', { uuid: m.uuid }),
    });
    if (ok) {
      notify(`All data of "${m.name}" cleared.`, 'ok');
      records.reload();
    }
  }

  ctx.setCleanup(() => {
    records.close();
    if (exportAbort) exportAbort.abort();
  });
}
