// "Run with this payload" in the rule editor: POST rules/dryRun runs the scripts being edited on a payload
// in the service's workers, under a real run's limits, and shows the records that would be stored or the
// error at its line. Nothing is stored.
import { h, mount, select, uid } from '../core/dom.js';
import { post } from '../core/api.js';
import { statusLine, busy } from '../core/ui.js';
import { examplePayload, tagsReadBy } from '../models/request.js';
import { argsExample } from './input-types.js';

const NDJSON = 'application/x-ndjson';

/**
 * opts: scripts() -> {actions, success, failed}; model() -> the model the samples are for;
 * inputType() -> the type of the input the rule reads first (an MQTT or UDP input's payload is the
 * envelope it hands over, the message inside); showError(message, line, script) marks a line in the editor;
 * clearErrors(). The returned section has refillIfUntouched(): a new example after the inputs changed,
 * unless the payload was edited.
 */
export function dryRunPanel(opts) {
  const boxId = uid('payload');
  const typeId = uid('ctype');
  const payload = h('textarea', { id: boxId, class: 'payload-box mono', rows: '5', spellcheck: 'false', autocomplete: 'off' });
  const contentType = select([['application/json', 'One payload (application/json)'], [NDJSON, 'One payload per line (NDJSON)']], 'application/json', { id: typeId });
  const runBtn = h('button', { type: 'button', id: 'dry-run', class: 'primary', text: 'Run with this payload' });
  const refill = h('button', { type: 'button', id: 'refill-payload', text: 'Fill in a payload for this rule' });
  const status = statusLine();
  const out = h('div', { id: 'dry-run-result', 'aria-live': 'polite' });

  const shapeNote = h('p', { class: 'hint', hidden: true });
  let touched = false;
  payload.addEventListener('input', () => { touched = true; });
  const fill = () => {
    const type = opts.inputType ? opts.inputType() : undefined;
    const message = examplePayload(opts.model(), tagsReadBy(opts.scripts().actions));
    payload.value = argsExample(type, message);
    shapeNote.hidden = payload.value === message;
    const note = { GENERIC_MQTT: 'As the MQTT input hands it to the rule: the message is the "payload", in base64.',
      GENERIC_MQTT_SERVER: 'As the built-in broker hands it to the rule: the message is the "payload".',
      UDP_SERVER: 'As the UDP input hands it to the rule: the datagram is the "data", in hex.' }[type];
    shapeNote.textContent = shapeNote.hidden ? '' : note || '';
    contentType.value = 'application/json';
    touched = false;
  };
  refill.addEventListener('click', fill);
  fill();

  async function run() {
    opts.clearErrors();
    status.clear();
    mount(out);
    const d = await post('rules/dryRun', { ...opts.scripts(), payload: payload.value, contentType: contentType.value });
    show(d);
  }

  function show(d) {
    const scriptError = d.errors.find((e) => e.index === undefined);
    const first = scriptError || d.errors[0];
    if (first && first.line) opts.showError(first.message, first.line, first.script || 'actions');
    const summary = scriptError
      ? `The script does not compile${scriptError.line ? ` (line ${scriptError.line})` : ''}: nothing would run. Nothing was stored.`
      : `${d.accepted} of ${d.payloads} payload${d.payloads === 1 ? '' : 's'} would be stored (${d.recordsTotal} record${d.recordsTotal === 1 ? '' : 's'}), ${d.failed} would fail. Nothing was stored.`;
    if (d.failed > 0) status.error(summary); else status.ok(summary);
    const multi = d.payloads > 1;
    mount(out,
      d.errors.length ? h('div', { class: 'stat-list' }, h('h3', { text: 'Errors' }),
        h('ol', { class: 'errors', id: 'dry-run-errors' }, d.errors.map((e) => h('li', {
          text: `${multi && e.index !== undefined ? `payload ${e.index + 1}: ` : ''}${e.line ? `${e.script && e.script !== 'actions' ? `${e.script} ` : ''}line ${e.line}: ` : ''}${e.message}`,
        }))),
        d.errorsTotal > d.errors.length ? h('p', { class: 'muted', text: `and ${d.errorsTotal - d.errors.length} more` }) : null) : null,
      d.records.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'grid compact', id: 'dry-run-records' },
        h('caption', { text: 'Records that would be stored' }),
        h('thead', {}, h('tr', {}, [multi ? 'Payload' : null, 'Model', 'Operation', 'Record'].filter(Boolean).map((c) => h('th', { scope: 'col', text: c })))),
        h('tbody', {}, d.records.map((r) => h('tr', {},
          multi ? h('td', { text: String(r.index + 1) }) : null,
          h('td', { text: r.modelName ? `${r.modelName} (${r.model})` : r.model }),
          h('td', { text: r.op === 'save' ? 'rds:Save' : 'rds:UpdateLast' }),
          h('td', {}, h('code', { class: 'wrap', text: JSON.stringify(r.record) }))))))) : null,
      d.recordsTotal > d.records.length ? h('p', { class: 'muted', text: `and ${d.recordsTotal - d.records.length} more records` }) : null,
      d.debug.length ? h('div', { class: 'stat-list' }, h('h3', { text: 'Debug output' }), h('pre', { class: 'json', text: d.debug.join('\n') })) : null);
  }

  runBtn.addEventListener('click', () => busy(runBtn, run, status));
  const section = h('section', { class: 'panel dry-run', 'aria-labelledby': `${boxId}-title` },
    h('h2', { id: `${boxId}-title`, text: 'Try the rule' }),
    h('p', { class: 'hint', text: 'Runs the scripts above on this payload in the service\'s workers, with every limit of a real run, and shows the records a push would store. Nothing is stored, saved or counted.' }),
    h('label', { for: boxId, class: 'code-label', text: 'Payload (the push body)' }), payload, shapeNote,
    h('div', { class: 'controls' }, h('div', { class: 'field inline' }, h('label', { for: typeId, text: 'Body type' }), contentType), refill, runBtn),
    status.el, out);
  section.refillIfUntouched = () => { if (!touched) fill(); };
  return section;
}
