// The Data tab's query toolbar: the time window, page size, order, Refresh, live updates on or off with
// their state, times in UTC or the browser's zone, and the fields to return (select).
import { h, select, uid } from '../core/dom.js';
import { messageOf } from '../core/api.js';
import { notify } from '../core/ui.js';
import { createWindowPicker } from './data-window.js';
import { setTimesInUtc, timesInUtc, zoneLabel } from '../core/time.js';

/**
 * `onQuery(firstPage)`: the query changed (read again, from the first page when `firstPage`);
 * `onLive(on)`: live updates were switched on or off.
 */
export function createQueryControls({ allFields, size, order, onQuery, onLive }) {
  /** The fields to return; never empty. */
  const fields = new Set(allFields);
  const picker = createWindowPicker({ onChange: () => onQuery(true) });
  const sizeIn = h('input', { id: 'page-size', type: 'number', min: '1', max: '1000', step: '1', value: String(size), inputmode: 'numeric' });
  const orderSel = select([['desc', 'Newest first'], ['asc', 'Oldest first']], order, { id: 'order' });
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
      if (cb.checked) fields.add(name); else fields.delete(name);
      if (!fields.size) { cb.checked = true; fields.add(name); notify('Keep at least one field.', 'info'); return; }
      fieldsSummary.textContent = `Fields (${fields.size} of ${allFields.length})`;
      onQuery(false);
    });
    return h('span', { class: 'check' }, cb, h('label', { for: id, text: name }));
  });
  const form = h('form', { class: 'controls', 'aria-label': 'Query options' },
    picker.el,
    h('div', { class: 'field inline' }, h('label', { for: 'page-size', text: 'Page size' }), sizeIn),
    h('div', { class: 'field inline' }, h('label', { for: 'order', text: 'Order' }), orderSel),
    refreshBtn,
    h('span', { class: 'check' }, liveBox, h('label', { for: 'live', text: 'Live updates' })), liveStatus,
    h('span', { class: 'check' }, utcBox, h('label', { for: 'tz-utc', text: 'Times in UTC' })), zoneText,
    h('details', { class: 'fields-pick' }, fieldsSummary, h('fieldset', {}, h('legend', { class: 'sr-only', text: 'Fields to return (select)' }), fieldBoxes)));
  const sizeErr = h('p', { class: 'field-error', id: 'page-size-err', hidden: true });
  sizeIn.setAttribute('aria-describedby', sizeErr.id);
  form.addEventListener('submit', (e) => { e.preventDefault(); onQuery(true); });
  sizeIn.addEventListener('change', () => onQuery(true));
  orderSel.addEventListener('change', () => onQuery(true));
  refreshBtn.addEventListener('click', () => onQuery(false));
  liveBox.addEventListener('change', () => onLive(liveBox.checked));
  utcBox.addEventListener('change', () => setTimesInUtc(utcBox.checked));

  function showZone() {
    zoneText.textContent = `Times: ${zoneLabel()}`;
    utcBox.checked = timesInUtc();
  }
  showZone();

  return {
    panel: h('section', { class: 'panel', 'aria-labelledby': 'q-title' }, h('h2', { id: 'q-title', class: 'sr-only', text: 'Query' }), form, sizeErr),
    picker,
    fields,
    /** The page size asked for, or null (and the error at the field) when it is not 1 to 1000. */
    pageSize() {
      const n = Math.floor(Number(sizeIn.value));
      if (!Number.isFinite(n) || n < 1 || n > 1000) {
        sizeErr.textContent = 'Page size is 1 to 1000.'; sizeErr.hidden = false; sizeIn.setAttribute('aria-invalid', 'true');
        return null;
      }
      sizeErr.hidden = true; sizeIn.removeAttribute('aria-invalid');
      return n;
    },
    order: () => orderSel.value,
    setOrder(value) { orderSel.value = value; },
    setBusy(on) { if (on) refreshBtn.setAttribute('aria-busy', 'true'); else refreshBtn.removeAttribute('aria-busy'); },
    showLive(state, error, retryInMs) {
      liveStatus.className = `live-status ${state}`;
      if (state === 'open') liveStatus.textContent = 'Live';
      else if (state === 'connecting') liveStatus.textContent = 'Connecting…';
      else if (state === 'retrying') liveStatus.textContent = `Reconnecting in ${Math.round(retryInMs / 1000)} s (${messageOf(error)})`;
      else if (state === 'failed') liveStatus.textContent = `Live updates stopped: ${messageOf(error)}`;
      else if (state === 'paused') liveStatus.textContent = 'Paused while the page is hidden';
      else liveStatus.textContent = 'Off: Refresh to update';
    },
    /** The zone in use changed: say which, and show the window's times in it. */
    rezone() {
      showZone();
      picker.rezone();
    },
  };
}
