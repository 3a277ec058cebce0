// The data view's time window: the last 15 min / hour / 24 h / 7 days, all records, or a custom
// from–to read in the zone in use (time.js).
import { h, select } from '../core/dom.js';
import { fromInputValue, toInputValue, zoneLabel } from '../core/time.js';

const MINUTE = 60_000;
const PRESETS = [
  ['15m', 'Last 15 min', 15 * MINUTE],
  ['1h', 'Last hour', 60 * MINUTE],
  ['24h', 'Last 24 h', 24 * 60 * MINUTE],
  ['7d', 'Last 7 days', 7 * 24 * 60 * MINUTE],
  ['all', 'All records'],
  ['custom', 'Custom…'],
];
export const DEFAULT_WINDOW = '24h';

/**
 * @typedef {{kind: 'recent', spanMs: number, label: string}
 *   | {kind: 'all', label: string}
 *   | {kind: 'custom', fromMs: number, toMs: number, label: string}} WindowChoice
 * @param {{ onChange: () => void }} opts
 */
export function createWindowPicker({ onChange }) {
  let preset = DEFAULT_WINDOW;
  let custom = null;
  /** The range last drawn, to start a custom window from. */
  let shown = null;

  const presetSel = select(PRESETS.map(([v, label]) => [v, label]), preset, { id: 'window' });
  const fromIn = h('input', { id: 'window-from', type: 'datetime-local', step: '1' });
  const toIn = h('input', { id: 'window-to', type: 'datetime-local', step: '1' });
  const fromLabel = h('label', { for: 'window-from' });
  const toLabel = h('label', { for: 'window-to' });
  const apply = h('button', { type: 'button', id: 'window-apply', text: 'Apply' });
  const err = h('p', { class: 'field-error', id: 'window-err', role: 'alert', hidden: true });
  const customBox = h('div', { class: 'window-custom', hidden: true },
    h('div', { class: 'field inline' }, fromLabel, fromIn),
    h('div', { class: 'field inline' }, toLabel, toIn),
    apply);
  const el = h('div', { class: 'window-pick' },
    h('div', { class: 'field inline' }, h('label', { for: 'window', text: 'Window' }), presetSel), customBox, err);

  function labelInputs() {
    fromLabel.textContent = `From (${zoneLabel()})`;
    toLabel.textContent = `To (${zoneLabel()})`;
  }
  function showError(msg, input) {
    err.textContent = msg; err.hidden = !msg;
    for (const i of [fromIn, toIn]) {
      if (msg && i === input) { i.setAttribute('aria-invalid', 'true'); i.setAttribute('aria-describedby', err.id); } else i.removeAttribute('aria-invalid');
    }
  }
  labelInputs();

  presetSel.addEventListener('change', () => {
    preset = presetSel.value;
    customBox.hidden = preset !== 'custom';
    showError('');
    if (preset !== 'custom') { onChange(); return; }
    const start = custom || shown;
    if (start) { fromIn.value = toInputValue(start.fromMs); toIn.value = toInputValue(start.toMs); }
    fromIn.focus();
  });
  apply.addEventListener('click', () => {
    const fromMs = fromInputValue(fromIn.value);
    const toMs = fromInputValue(toIn.value);
    if (!Number.isFinite(fromMs)) { showError('Enter the start of the window.', fromIn); return; }
    if (!Number.isFinite(toMs)) { showError('Enter the end of the window.', toIn); return; }
    if (fromMs >= toMs) { showError('The start must be before the end.', fromIn); return; }
    showError('');
    custom = { fromMs, toMs };
    onChange();
  });
  for (const i of [fromIn, toIn]) i.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); apply.click(); } });

  return {
    el,
    /** @returns {WindowChoice} */
    choice() {
      const p = PRESETS.find(([v]) => v === preset);
      if (preset === 'all') return { kind: 'all', label: 'all records' };
      if (preset === 'custom') {
        if (custom) return { kind: 'custom', ...custom, label: 'the chosen window' };
        const [, , spanMs] = PRESETS.find(([v]) => v === DEFAULT_WINDOW);
        return { kind: 'recent', spanMs, label: 'the last 24 h' };
      }
      return { kind: 'recent', spanMs: p[2], label: p[1].replace(/^Last/, 'the last') };
    },
    /** Switch to all records (the empty-window state offers it). */
    showAll() { preset = 'all'; presetSel.value = 'all'; customBox.hidden = true; onChange(); },
    setShown(fromMs, toMs) { shown = { fromMs, toMs }; },
    /** The zone changed: relabel, and show the custom window's instants in the new zone. */
    rezone() {
      labelInputs();
      if (custom) { fromIn.value = toInputValue(custom.fromMs); toIn.value = toInputValue(custom.toMs); }
    },
  };
}
