// The Inputs panel of the Inputs & rules page: the list with push URL, token and health cells, the New
// input form (HTTP push or simulator), the created / rotated token panel and delete with its refusal.
import { h, mount, field, setFieldError, select, copyButton } from '../core/dom.js';
import { get, post, del, messageOf, listOf } from '../core/api.js';
import { notify, confirmDialog, statusLine, busy } from '../core/ui.js';
import { state } from '../core/state.js';
import { examplePayload, simulatorTags } from '../models/request.js';

const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

function pushUrl(uuid) { return `${location.origin}/api/v1/inends/push?uuid=${encodeURIComponent(uuid)}`; }

function pushCurl(uuid, token, payload) {
  return `curl -s -X POST -H ${shq(`Authorization: Bearer ${token}`)} -H 'Content-Type: application/json' -d ${shq(payload)} ${shq(pushUrl(uuid))}`;
}

function tokenOf(inend) {
  return inend.token || (inend.config && inend.config.token) || '';
}

const named = (name, uuid) => (name ? `${name} (${uuid})` : uuid);

/**
 * The Inputs panel and the box above it where a created input or a rotated token is shown.
 * opts: inends and rules (as listed), healthCells (uuid -> the health cell, filled here, read by the
 * page's health loader), refreshHealth(), reload() (the whole page, after a delete).
 * @returns {{ createdBox: HTMLElement, section: HTMLElement }}
 */
export function inputsPanel({ inends, rules, healthCells, refreshHealth, reload }) {
  const createdBox = h('div', { id: 'input-created', 'aria-live': 'polite' });
  const formHost = h('div');
  const newInputBtn = h('button', { type: 'button', class: 'primary', id: 'new-input', text: '+ New input' });
  newInputBtn.addEventListener('click', () => {
    mount(formHost, inputForm(afterCreate, () => { mount(formHost); newInputBtn.focus(); }));
    formHost.querySelector('input').focus();
  });

  function showCreated(created, body) {
    const isHttp = body.type === 'HTTP';
    const model = state.models.find((m) => m.published) || state.models[0];
    const payload = model ? examplePayload(model) : '[{"tag":"temperature","value":21.5}]';
    const title = h('h3', { tabindex: '-1', text: `Input "${body.name}" created` });
    const dismiss = h('button', { type: 'button', class: 'small', text: 'Dismiss' });
    dismiss.addEventListener('click', () => { mount(createdBox); newInputBtn.focus(); });
    mount(createdBox, h('div', { class: 'panel created' },
      title,
      h('dl', { class: 'kv wide' },
        h('dt', { text: 'uuid' }), h('dd', {}, h('code', { id: 'created-input-uuid', text: created.uuid }), ' ', copyButton(created.uuid, 'Copy', 'Copy the input uuid')),
        isHttp ? [
          h('dt', { text: 'Push URL' }), h('dd', {}, h('code', { id: 'created-push-url', text: `POST ${pushUrl(created.uuid)}` }), ' ', copyButton(pushUrl(created.uuid), 'Copy', 'Copy the push URL')),
          h('dt', { text: 'Push token' }), h('dd', {}, h('code', { id: 'created-push-token', text: created.token || '(not returned)' }), ' ', copyButton(created.token || '', 'Copy', 'Copy the push token')),
          h('dt', { text: 'Example' }), h('dd', {}, h('code', { class: 'wrap', id: 'created-push-curl', text: pushCurl(created.uuid, created.token || '<token>', payload) }), ' ', copyButton(() => pushCurl(created.uuid, created.token || '<token>', payload), 'Copy', 'Copy the push curl line')),
        ] : [h('dt', { text: 'Simulator' }), h('dd', { text: `every ${body.config.intervalMs} ms: ${body.config.tags.map((t) => `${t.tag} ${t.min}…${t.max}`).join(', ')}` })]),
      isHttp ? h('p', { class: 'hint', text: 'Keep the token: the push endpoint needs it as a Bearer token. Next: write a rule that reads from this input.' }) : null,
      h('div', { class: 'actions left' },
        h('a', { class: 'button primary', id: 'rule-for-input', href: `#/rules/new?input=${encodeURIComponent(created.uuid)}${model ? `&schema=${encodeURIComponent(model.uuid)}` : ''}`, text: 'Write a rule for this input' }),
        dismiss)));
    title.focus();
  }

  async function afterCreate(created, body) {
    mount(formHost);
    try {
      const list = listOf(await get('inends/list'));
      healthCells.clear();
      mount(inputsTable.tBodies[0], inputRows(list));
      refreshHealth();
    } catch (e) { notify(`Reloading the inputs failed: ${messageOf(e)}`, 'error'); }
    showCreated(created, body);
  }

  function deleteBody(i) {
    const readers = rules.filter((r) => (r.fromSource || []).includes(i.uuid));
    if (readers.length) {
      return [h('p', { text: `The gateway refuses to delete an input that a rule reads. ${readers.length === 1 ? 'This rule reads' : 'These rules read'} from "${i.name}":` }),
        h('ul', {}, readers.map((r) => h('li', {}, h('a', { href: `#/rules/${r.uuid}`, text: named(r.name, r.uuid) })))),
        h('p', { text: 'Remove the input from each rule\'s inputs (or delete the rules) first; nothing is deleted until then.' })];
    }
    return h('p', { text: `The input ${named(i.name, i.uuid)} is removed at once${i.type === 'HTTP' ? ': its push URL and token stop working' : ' and its simulator stops'}. Records already stored stay in their models.` });
  }

  async function rotate(i) {
    let created;
    const ok = await confirmDialog({
      title: `Rotate the push token of "${i.name}"?`,
      body: [h('p', { text: 'A new token is made now, and the current one stops working at once: every device pushing to this input gets 401 until it is given the new token.' }),
        h('p', { text: 'The new token is shown once, on this page.' })],
      confirmLabel: 'Rotate token', danger: true,
      action: async () => { created = await post('inends/rotateToken', undefined, { uuid: i.uuid }); },
    });
    if (!ok || !created) return;
    const title = h('h3', { tabindex: '-1', text: `New push token for "${i.name}"` });
    const dismiss = h('button', { type: 'button', class: 'small', text: 'Dismiss' });
    dismiss.addEventListener('click', () => { mount(createdBox); newInputBtn.focus(); });
    mount(createdBox, h('div', { class: 'panel created' }, title,
      h('dl', { class: 'kv wide' },
        h('dt', { text: 'Push token' }), h('dd', {}, h('code', { id: 'rotated-push-token', text: created.token }), ' ', copyButton(created.token, 'Copy', 'Copy the new push token'))),
      h('p', { class: 'hint', text: 'The old token is refused from now on. Give this one to the devices that push to this input.' }),
      h('div', { class: 'actions left' }, dismiss)));
    notify(`Push token of "${i.name}" rotated: the old one no longer works.`, 'ok');
    title.focus();
  }

  function inputRows(list) {
    if (!list.length) return h('tr', {}, h('td', { colspan: '6', class: 'muted', text: 'No input yet. An input receives payloads (HTTP push or a simulator) and hands them to its rules.' }));
    return list.map((i) => {
      const delBtn = h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete input ${i.name}`, text: 'Delete' });
      delBtn.addEventListener('click', async () => {
        const refused = rules.some((r) => (r.fromSource || []).includes(i.uuid));
        const ok = await confirmDialog({ title: `Delete input "${i.name}"?`, body: deleteBody(i), confirmLabel: 'Delete', danger: true, action: () => del('inends/del', { uuid: i.uuid }), ...(refused ? { confirmLabel: 'Try to delete' } : {}) });
        if (ok) reload();
      });
      const rotateBtn = i.type === 'HTTP' ? h('button', { type: 'button', class: 'small', 'aria-label': `Rotate the push token of ${i.name}`, text: 'Rotate token' }) : null;
      if (rotateBtn) rotateBtn.addEventListener('click', () => rotate(i));
      const health = h('td', { class: 'health-cell', 'data-input': i.uuid }, h('span', { class: 'muted', text: '…' }));
      healthCells.set(i.uuid, health);
      const tok = tokenOf(i);
      const details = i.type === 'HTTP'
        ? h('span', {}, h('code', { class: 'wrap', text: `POST ${pushUrl(i.uuid)}` }), ' ', copyButton(pushUrl(i.uuid), 'Copy', `Copy the push URL of ${i.name}`),
          tok ? [' ', copyButton(tok, 'Copy token', `Copy the push token of ${i.name}`)] : null)
        : h('span', { text: i.config && Array.isArray(i.config.tags) ? `every ${i.config.intervalMs} ms: ${i.config.tags.map((t) => t.tag).join(', ')}` : '' });
      return h('tr', {}, h('td', { text: i.name }), h('td', { text: i.type }), h('td', {}, h('code', { text: i.uuid })), h('td', {}, details), health, h('td', { class: 'row-actions' }, rotateBtn, delBtn));
    });
  }

  const inputsTable = h('table', { class: 'grid', id: 'inputs-table' },
    h('caption', { class: 'sr-only', text: 'Inputs' }),
    h('thead', {}, h('tr', {}, ['Name', 'Type', 'uuid', 'Details', 'Health', 'Actions'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, inputRows(inends)));

  const section = h('section', { class: 'panel', 'aria-labelledby': 'inputs-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'inputs-title', text: 'Inputs' }), newInputBtn),
    formHost,
    h('div', { class: 'table-wrap' }, inputsTable));
  return { createdBox, section };
}

function inputForm(onCreated, onClose) {
  const name = field('Name', h('input', { type: 'text', name: 'name', autocomplete: 'off', required: true }));
  const type = field('Type', select([['HTTP', 'HTTP push'], ['SIMULATOR', 'Simulator']], 'HTTP', { name: 'type' }));
  const desc = field('Description', h('input', { type: 'text', name: 'description', autocomplete: 'off' }));
  const interval = field('Interval (ms)', h('input', { type: 'number', name: 'intervalMs', min: '100', step: '100', value: '1000' }));
  const tagsBody = h('tbody');
  const tagsErr = h('p', { class: 'field-error', hidden: true, role: 'alert' });
  const addTag = h('button', { type: 'button', class: 'small', text: '+ Add tag' });
  const addRow = (tag = '', min = '0', max = '100', decimals = '2') => {
    const n = tagsBody.children.length + 1;
    const rm = h('button', { type: 'button', class: 'small', 'aria-label': `Remove tag row ${n}`, text: 'Remove' });
    const row = h('tr', {},
      h('td', {}, h('input', { type: 'text', 'aria-label': `Tag ${n} name`, value: tag, class: 'tag-name', spellcheck: 'false' })),
      h('td', {}, h('input', { type: 'number', step: 'any', 'aria-label': `Tag ${n} minimum`, value: min, class: 'tag-min narrow' })),
      h('td', {}, h('input', { type: 'number', step: 'any', 'aria-label': `Tag ${n} maximum`, value: max, class: 'tag-max narrow' })),
      h('td', {}, h('input', { type: 'number', min: '0', max: '6', step: '1', 'aria-label': `Tag ${n} decimals`, value: decimals, class: 'tag-decimals narrow' })),
      h('td', {}, rm));
    rm.addEventListener('click', () => { row.remove(); addTag.focus(); });
    tagsBody.appendChild(row);
  };
  addTag.addEventListener('click', () => { addRow(); tagsBody.lastElementChild.querySelector('input').focus(); });
  const model = state.models.find((m) => m.published) || state.models[0];
  // The model's numbers within their bounds, so the simulated payloads are stored, not refused.
  const tags = simulatorTags(model);
  if (tags.length) tags.forEach((t) => addRow(t.tag, String(t.min), String(t.max), String(t.decimals))); else addRow('temperature', '0', '40');
  const sim = h('fieldset', { class: 'sim', hidden: true }, h('legend', { text: 'Simulated tags' }), interval.wrap,
    model ? h('p', { class: 'hint', text: `Filled from the numbers of model ${model.name} and their bounds; INTEGER attributes get 0 decimals.` }) : null,
    h('table', { class: 'grid compact' }, h('thead', {}, h('tr', {}, ['Tag', 'Min', 'Max', 'Decimals', ''].map((c) => h('th', { scope: 'col', text: c })))), tagsBody),
    tagsErr, addTag);
  type.input.addEventListener('change', () => { sim.hidden = type.input.value !== 'SIMULATOR'; });
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'primary', text: 'Create input' });
  const cancel = h('button', { type: 'button', text: 'Cancel' });
  cancel.addEventListener('click', onClose);
  const form = h('form', { class: 'attr-form', 'aria-label': 'New input', novalidate: true },
    h('h3', { text: 'New input' }),
    h('div', { class: 'grid-form' }, name.wrap, type.wrap, desc.wrap), sim, status.el, h('div', { class: 'actions' }, cancel, save));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setFieldError(name, ''); setFieldError(interval, ''); tagsErr.hidden = true; status.clear();
    const body = { name: name.input.value.trim(), type: type.input.value, description: desc.input.value.trim(), config: {} };
    if (!body.name) { setFieldError(name, 'Enter a name.'); name.input.focus(); return; }
    if (body.type === 'SIMULATOR') {
      const ms = Number(interval.input.value);
      if (!Number.isInteger(ms) || ms < 1) { setFieldError(interval, 'Enter a whole number of milliseconds.'); interval.input.focus(); return; }
      const tags = [...tagsBody.children].map((tr) => ({ tag: tr.querySelector('.tag-name').value.trim(), min: Number(tr.querySelector('.tag-min').value), max: Number(tr.querySelector('.tag-max').value), decimals: Number(tr.querySelector('.tag-decimals').value || 2) }));
      const bad = tags.find((t) => !t.tag || !Number.isFinite(t.min) || !Number.isFinite(t.max) || t.max < t.min || !Number.isInteger(t.decimals) || t.decimals < 0 || t.decimals > 6);
      if (!tags.length || bad) { tagsErr.textContent = !tags.length ? 'Add at least one tag.' : `Tag "${bad.tag || '(empty)'}": give a name, min ≤ max and 0 to 6 decimals.`; tagsErr.hidden = false; return; }
      body.config = { intervalMs: ms, tags };
    }
    busy(save, async () => {
      let created;
      try { created = await post('inends/create', body); } catch (ex) {
        if (/name/i.test(ex.message)) { setFieldError(name, ex.message); name.input.focus(); } else if (/interval/i.test(ex.message)) setFieldError(interval, ex.message);
        else status.error(messageOf(ex));
        return;
      }
      notify(`Input "${body.name}" created.`, 'ok');
      onCreated(created || {}, body);
    }, status);
  });
  return form;
}
