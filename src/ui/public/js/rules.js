// Inputs (HTTP push, simulator) and rules (Lua scripts with the code editor, validation and stats).
import { h, mount, field, setFieldError, select, copyButton, uid, fmtValue } from './dom.js';
import { get, post, put, del, messageOf } from './api.js';
import { notify, confirmDialog, statusLine, busy } from './ui.js';
import { state, findModel } from './state.js';
import { createEditor } from './editor.js';
import { sampleForModel, rhilexSample, DEFAULT_SUCCESS, DEFAULT_FAILED } from './samples.js';
import { examplePayload, simulatorTags } from './request.js';
import { dryRunPanel } from './dry-run.js';

const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
const asArray = (d) => (Array.isArray(d) ? d : d && Array.isArray(d.records) ? d.records : []);

export function pushUrl(uuid) { return `${location.origin}/api/v1/inends/push?uuid=${encodeURIComponent(uuid)}`; }

function pushCurl(uuid, token, payload) {
  return `curl -s -X POST -H ${shq(`Authorization: Bearer ${token}`)} -H 'Content-Type: application/json' -d ${shq(payload)} ${shq(pushUrl(uuid))}`;
}

function tokenOf(inend) {
  return inend.token || (inend.config && inend.config.token) || '';
}

const named = (name, uuid) => (name ? `${name} (${uuid})` : uuid);
const when = (ms) => (typeof ms === 'number' ? new Date(ms).toLocaleString() : 'never');

/** The health line of an input or a rule: last payload, counts, queue, last error (the error in full on hover). */
function healthCell(parts, lastError) {
  return h('div', { class: 'health' },
    h('span', { text: parts.join(' · ') }),
    lastError ? h('span', { class: 'health-error', title: lastError.message, text: `Last error ${when(lastError.atMs)}: ${lastError.message}` }) : null);
}

// ---------------------------------------------------------------------------------------------------
// Inputs & rules page

export async function renderRulesPage(ctx) {
  const { main } = ctx;
  mount(main, h('p', { class: 'muted', text: 'Loading inputs and rules…' }));
  const [inRes, ruRes] = await Promise.allSettled([get('inends/list'), get('rules/list')]);
  const inends = inRes.status === 'fulfilled' ? asArray(inRes.value) : [];
  const rules = ruRes.status === 'fulfilled' ? asArray(ruRes.value) : [];
  const inName = Object.fromEntries(inends.map((i) => [i.uuid, i.name]));

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
      const list = asArray(await get('inends/list'));
      inputHealth.clear();
      mount(inputsTable.tBodies[0], inputRows(list));
      loadHealth();
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
        if (ok) renderRulesPage(ctx);
      });
      const rotateBtn = i.type === 'HTTP' ? h('button', { type: 'button', class: 'small', 'aria-label': `Rotate the push token of ${i.name}`, text: 'Rotate token' }) : null;
      if (rotateBtn) rotateBtn.addEventListener('click', () => rotate(i));
      const health = h('td', { class: 'health-cell', 'data-input': i.uuid }, h('span', { class: 'muted', text: '…' }));
      inputHealth.set(i.uuid, health);
      const tok = tokenOf(i);
      const details = i.type === 'HTTP'
        ? h('span', {}, h('code', { class: 'wrap', text: `POST ${pushUrl(i.uuid)}` }), ' ', copyButton(pushUrl(i.uuid), 'Copy', `Copy the push URL of ${i.name}`),
          tok ? [' ', copyButton(tok, 'Copy token', `Copy the push token of ${i.name}`)] : null)
        : h('span', { text: i.config && Array.isArray(i.config.tags) ? `every ${i.config.intervalMs} ms: ${i.config.tags.map((t) => t.tag).join(', ')}` : '' });
      return h('tr', {}, h('td', { text: i.name }), h('td', { text: i.type }), h('td', {}, h('code', { text: i.uuid })), h('td', {}, details), health, h('td', { class: 'row-actions' }, rotateBtn, delBtn));
    });
  }

  /** Fills the health cells: inends/stats per input, rules/stats per rule (queued: the sum over its inputs). */
  async function loadHealth() {
    const inStats = new Map();
    await Promise.all([...inputHealth.keys()].map(async (uuid) => {
      try { inStats.set(uuid, await get('inends/stats', { uuid })); } catch { /* gone meanwhile */ }
    }));
    for (const [uuid, cell] of inputHealth) {
      const st = inStats.get(uuid);
      if (!st) continue;
      mount(cell, healthCell([`Last payload ${when(st.lastPayloadAtMs)}`, `${st.accepted} stored`, `${st.failed} failed`, `${st.queued} queued`], st.lastError));
    }
    await Promise.all([...ruleHealth].map(async ([uuid, { cell, rule }]) => {
      let st;
      try { st = await get('rules/stats', { uuid }); } catch { return; }
      const queued = (rule.fromSource || []).reduce((n, id) => n + (inStats.get(id) ? inStats.get(id).queued : 0), 0);
      const last = st.lastErrors && st.lastErrors.length ? st.lastErrors[st.lastErrors.length - 1] : null;
      mount(cell, healthCell([`Last run ${when(st.lastRunAtMs)}`, `${st.successes} ok`, `${st.failures} failed`, `${queued} queued`], last));
    }));
  }
  const inputHealth = new Map();
  const ruleHealth = new Map();

  const inputsTable = h('table', { class: 'grid', id: 'inputs-table' },
    h('caption', { class: 'sr-only', text: 'Inputs' }),
    h('thead', {}, h('tr', {}, ['Name', 'Type', 'uuid', 'Details', 'Health', 'Actions'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, inputRows(inends)));

  const rulesTable = h('table', { class: 'grid', id: 'rules-table' },
    h('caption', { class: 'sr-only', text: 'Rules' }),
    h('thead', {}, h('tr', {}, ['Name', 'Inputs', 'Description', 'Health', 'Actions'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, rules.length ? rules.map((r) => {
      const delBtn = h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete rule ${r.name}`, text: 'Delete' });
      delBtn.addEventListener('click', async () => {
        const ok = await confirmDialog({ title: `Delete rule "${r.name}"?`, body: h('p', { text: 'Its script stops running for new payloads.' }), confirmLabel: 'Delete', danger: true, action: () => del('rules/del', { uuid: r.uuid }) });
        if (ok) renderRulesPage(ctx);
      });
      const health = h('td', { class: 'health-cell', 'data-rule': r.uuid }, h('span', { class: 'muted', text: '…' }));
      ruleHealth.set(r.uuid, { cell: health, rule: r });
      return h('tr', {},
        h('td', {}, h('a', { href: `#/rules/${r.uuid}`, text: r.name })),
        h('td', { text: (r.fromSource || []).map((u) => inName[u] || u).join(', ') }),
        h('td', { text: r.description || '' }),
        health,
        h('td', { class: 'row-actions' }, h('a', { class: 'button small', href: `#/rules/${r.uuid}`, 'aria-label': `Edit rule ${r.name}`, text: 'Edit' }), delBtn));
    }) : h('tr', {}, h('td', { colspan: '5', class: 'muted', text: 'No rule yet. A rule is a Lua script that runs for every payload of its inputs, and stores data with rds:Save.' }))));

  mount(main,
    h('h1', { text: 'Inputs & rules' }),
    inRes.status === 'rejected' ? h('p', { class: 'status-line error', role: 'alert', text: `Loading the inputs failed: ${messageOf(inRes.reason)}` }) : null,
    ruRes.status === 'rejected' ? h('p', { class: 'status-line error', role: 'alert', text: `Loading the rules failed: ${messageOf(ruRes.reason)}` }) : null,
    createdBox,
    h('section', { class: 'panel', 'aria-labelledby': 'inputs-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'inputs-title', text: 'Inputs' }), newInputBtn),
      formHost,
      h('div', { class: 'table-wrap' }, inputsTable)),
    h('section', { class: 'panel', 'aria-labelledby': 'rules-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'rules-title', text: 'Rules' }), h('a', { class: 'button primary', id: 'new-rule', href: '#/rules/new', text: '+ New rule' })),
      h('div', { class: 'table-wrap' }, rulesTable)));
  loadHealth();
  const timer = setInterval(() => { if (!document.hidden) loadHealth(); }, 5000);
  if (ctx.setCleanup) ctx.setCleanup(() => clearInterval(timer));
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

// ---------------------------------------------------------------------------------------------------
// Rule editor

export async function renderRuleEditor(ctx, ruleId) {
  const { main, query } = ctx;
  mount(main, h('p', { class: 'muted', text: 'Loading…' }));
  const [inRes, ruleRes] = await Promise.allSettled([get('inends/list'), ruleId ? get('rules/detail', { uuid: ruleId }) : Promise.resolve(null)]);
  if (ruleRes.status === 'rejected') {
    mount(main, h('div', { class: 'panel' }, h('h1', { text: 'Rule' }), h('p', { class: 'status-line error', role: 'alert', text: `Loading rule ${ruleId} failed: ${messageOf(ruleRes.reason)}` }), h('a', { href: '#/rules', text: 'Back to inputs & rules' })));
    return;
  }
  const inends = inRes.status === 'fulfilled' ? asArray(inRes.value) : [];
  const rule = ruleRes.value;
  const schemaId = query.get('schema') || '';
  const preModel = findModel(schemaId) || state.models.find((m) => m.published) || state.models[0];

  const name = field('Name', h('input', { type: 'text', name: 'name', autocomplete: 'off', value: rule ? rule.name : (preModel ? `store ${preModel.name}` : '') }));
  const desc = field('Description', h('input', { type: 'text', name: 'description', autocomplete: 'off', value: rule ? rule.description || '' : '' }));
  const chosen = new Set(rule ? rule.fromSource || [] : [query.get('input') || ''].filter(Boolean));
  if (!rule && !chosen.size && inends.length === 1) chosen.add(inends[0].uuid);
  const srcErr = h('p', { class: 'field-error', hidden: true, role: 'alert' });
  const srcBoxes = inends.map((i) => {
    const id = uid('src');
    return h('div', { class: 'check' }, h('input', { type: 'checkbox', id, value: i.uuid, checked: chosen.has(i.uuid), class: 'src-box' }), h('label', { for: id }, i.name, h('span', { class: 'muted', text: ` (${i.type}, ${i.uuid})` })));
  });
  const sources = h('fieldset', { class: 'sources' }, h('legend', { text: 'Inputs (fromSource)' }),
    srcBoxes.length ? srcBoxes : h('p', { class: 'muted' }, 'No input yet. ', h('a', { href: '#/rules', text: 'Create an input' }), ' first.'), srcErr);

  const actions = createEditor({ id: 'code-actions', rows: 22, value: rule ? rule.actions : sampleForModel(preModel) });
  const success = createEditor({ id: 'code-success', rows: 4, value: rule ? rule.success || DEFAULT_SUCCESS : DEFAULT_SUCCESS });
  const failed = createEditor({ id: 'code-failed', rows: 4, value: rule ? rule.failed || DEFAULT_FAILED : DEFAULT_FAILED });
  const editors = { actions, success, failed };

  const sampleModel = select(state.models.map((m) => [m.uuid, `${m.name} (${m.uuid})${m.published ? '' : ' — draft'}`]), preModel ? preModel.uuid : '', { id: 'sample-model' });
  const insertSample = h('button', { type: 'button', id: 'insert-sample', text: 'Insert sample for this model' });
  const insertRhilex = h('button', { type: 'button', id: 'insert-rhilex', text: 'Insert RHILEX documentation sample' });
  const replaceWith = async (src) => {
    if (actions.getValue().trim() && actions.getValue() !== src) {
      const ok = await confirmDialog({ title: 'Replace the Actions script?', body: h('p', { text: 'The current Actions script is replaced by the sample.' }), confirmLabel: 'Replace' });
      if (!ok) return;
    }
    actions.setValue(src);
    actions.textarea.focus();
  };
  insertSample.addEventListener('click', () => replaceWith(sampleForModel(findModel(sampleModel.value))));
  insertRhilex.addEventListener('click', () => replaceWith(rhilexSample(sampleModel.value)));

  const status = statusLine();
  const validateBtn = h('button', { type: 'button', id: 'validate', text: 'Validate' });
  const saveBtn = h('button', { type: 'submit', class: 'primary', id: 'save-rule', text: rule ? 'Save rule' : 'Create rule' });
  const statsBox = h('div', { id: 'rule-stats', 'aria-live': 'polite' });
  const details = h('details', { class: 'callbacks', open: Boolean(rule && ((rule.success && rule.success !== DEFAULT_SUCCESS) || (rule.failed && rule.failed !== DEFAULT_FAILED))) },
    h('summary', { text: 'Success and Failed callbacks' }),
    h('label', { for: 'code-success', class: 'code-label', text: 'Success' }), success.el,
    h('label', { for: 'code-failed', class: 'code-label', text: 'Failed' }), failed.el);

  const form = h('form', { class: 'panel', 'aria-labelledby': 'rule-title', novalidate: true },
    h('h1', { id: 'rule-title', text: rule ? `Rule ${rule.name}` : 'New rule' }),
    rule ? h('p', { class: 'uuid' }, 'uuid ', h('code', { text: rule.uuid })) : null,
    h('div', { class: 'grid-form' }, name.wrap, desc.wrap),
    sources,
    h('div', { class: 'controls sample-bar' },
      h('div', { class: 'field inline' }, h('label', { for: 'sample-model', text: 'Model for samples' }), sampleModel), insertSample, insertRhilex),
    h('label', { for: 'code-actions', class: 'code-label', text: 'Actions (Lua)' }),
    actions.el,
    details,
    status.el,
    h('div', { class: 'actions' }, h('a', { class: 'button', href: '#/rules', text: 'Back' }), validateBtn, saveBtn));
  const scripts = () => ({ actions: actions.getValue(), success: success.getValue(), failed: failed.getValue() });
  const clearErrors = () => { for (const ed of Object.values(editors)) ed.setError(null); };
  const tryPanel = dryRunPanel({
    scripts: () => scripts(),
    model: () => findModel(sampleModel.value) || preModel,
    showError: (msg, line, which) => showScriptError(msg, line, which),
    clearErrors: () => clearErrors(),
  });
  mount(main, form, tryPanel, rule ? h('section', { class: 'panel', 'aria-labelledby': 'stats-title' }, h('div', { class: 'panel-head' }, h('h2', { id: 'stats-title', text: 'Stats and last errors' }), statsRefreshBtn()), statsBox) : null);

  function statsRefreshBtn() {
    const b = h('button', { type: 'button', id: 'refresh-stats', text: 'Refresh stats' });
    b.addEventListener('click', () => busy(b, loadStats));
    return b;
  }
  async function loadStats() {
    if (!rule) return;
    try {
      renderStats(statsBox, await get('rules/stats', { uuid: rule.uuid }));
    } catch (e) {
      mount(statsBox, h('p', { class: 'status-line error', role: 'alert', text: `Loading stats failed: ${messageOf(e)}` }));
    }
  }


  /** Show a compile/validation error at its line in the right editor. */
  function showScriptError(msg, line, which) {
    let key = String(which || '').toLowerCase();
    const pm = /^\s*(actions|success|failed)\s*:\s*line\s+(\d+)\s*:\s*([\s\S]*)$/i.exec(msg || '');
    if (pm) {
      if (!editors[key]) key = pm[1].toLowerCase();
      if (!line) line = Number(pm[2]);
      msg = pm[3];
    }
    if (!editors[key]) key = /success/i.test(msg) && !/actions/i.test(msg) ? 'success' : (/failed/i.test(msg) && !/actions/i.test(msg) ? 'failed' : 'actions');
    let ln = Number(line);
    if (!Number.isInteger(ln) || ln < 1) {
      const mm = /(?:line\s+|:)(\d+)(?::|\b)/i.exec(msg || '');
      ln = mm ? Number(mm[1]) : null;
    }
    if (key !== 'actions') details.open = true;
    editors[key].setError(ln, msg || 'Invalid script');
    if (ln) editors[key].goToLine(ln);
  }

  async function validate() {
    clearErrors();
    status.clear();
    const d = await post('rules/validate', scripts());
    if (d && d.ok) { status.ok('The script compiles.'); return true; }
    const err = (d && (d.error || d.msg)) || 'Invalid script';
    showScriptError(err, d && d.line, d && (d.script || d.field || d.part));
    status.error(d && d.line ? `Validation failed: see line ${d.line} (marked in the editor).` : `Validation failed: ${err}`);
    return false;
  }
  validateBtn.addEventListener('click', () => busy(validateBtn, validate, status));

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setFieldError(name, '');
    srcErr.hidden = true;
    const fromSource = [...form.querySelectorAll('.src-box')].filter((b) => b.checked).map((b) => b.value);
    const body = { name: name.input.value.trim(), description: desc.input.value.trim(), fromSource, ...scripts() };
    if (!body.name) { setFieldError(name, 'Enter a name.'); name.input.focus(); return; }
    if (!fromSource.length) { srcErr.textContent = 'Choose at least one input: the rule runs for its payloads.'; srcErr.hidden = false; const first = form.querySelector('.src-box'); if (first) first.focus(); return; }
    busy(saveBtn, async () => {
      if (!(await validate())) return;
      try {
        if (rule) {
          await put('rules/update', { ...body, uuid: rule.uuid });
          status.ok('Rule saved.');
          notify(`Rule "${body.name}" saved.`, 'ok');
          loadStats();
        } else {
          const created = await post('rules/create', body);
          notify(`Rule "${body.name}" created.`, 'ok');
          location.hash = created && created.uuid ? `#/rules/${created.uuid}` : '#/rules';
        }
      } catch (ex) {
        if (/name/i.test(ex.message) && !/line|script|actions/i.test(ex.message)) { setFieldError(name, ex.message); name.input.focus(); } else if (/fromSource|input/i.test(ex.message) && !/line/i.test(ex.message)) { srcErr.textContent = ex.message; srcErr.hidden = false; } else if (/line|script|actions|success|failed|lua/i.test(ex.message)) { showScriptError(ex.message, null, null); status.error(messageOf(ex)); } else status.error(messageOf(ex));
      }
    }, status);
  });

  if (rule) {
    loadStats();
    const t = setInterval(() => { if (!document.hidden) loadStats(); }, 5000);
    ctx.setCleanup(() => clearInterval(t));
  }
}

/** Render rules/stats generically: counters as a list, arrays (last errors) as lists of messages. */
function renderStats(box, d) {
  if (!d || typeof d !== 'object') { mount(box, h('p', { class: 'muted', text: 'No stats.' })); return; }
  const LABELS = { invocations: 'Runs', successes: 'Successes', failures: 'Failures', p50Ms: 'Median run time (ms, at most)', p99Ms: '99th percentile run time (ms, at most)', lastRunAtMs: 'Last run', lastErrors: 'Last errors' };
  const scalars = Object.entries(d).filter(([k, v]) => k !== 'uuid' && (v === null || typeof v !== 'object'));
  const lists = Object.entries(d).filter(([, v]) => Array.isArray(v));
  const objects = Object.entries(d).filter(([, v]) => v && typeof v === 'object' && !Array.isArray(v));
  const fmtItem = (e) => {
    if (!e || typeof e !== 'object') return String(e);
    const when = e.atMs || e.at || e.time || e.ts || e.timestamp;
    const whenText = typeof when === 'number' ? new Date(when).toLocaleString() : (when || '');
    const msg = e.error || e.message || e.msg || JSON.stringify(e);
    return `${whenText ? `${whenText} — ` : ''}${e.line ? `line ${e.line}: ` : ''}${msg}`;
  };
  mount(box,
    h('dl', { class: 'kv stats' }, [...scalars, ...objects.flatMap(([k, o]) => Object.entries(o).filter(([, v]) => v === null || typeof v !== 'object').map(([k2, v]) => [`${k}.${k2}`, v]))]
      .map(([k, v]) => [h('dt', { text: LABELS[k] || k }), h('dd', { text: fmtValue(typeof v === 'number' && /At$|Ms$/.test(k) && v > 1e12 ? new Date(v).toLocaleString() : v) })])),
    lists.map(([k, arr]) => h('div', { class: 'stat-list' }, h('h3', { text: LABELS[k] || k }),
      arr.length ? h('ol', { class: 'errors' }, arr.map((e) => h('li', { text: fmtItem(e) }))) : h('p', { class: 'muted', text: 'None.' }))));
}
