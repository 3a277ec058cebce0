// Data models: home, creation (blank or template), the model page with its attributes, publish and delete.
import { h, mount, field, setFieldError, select, copyButton, uid } from './dom.js';
import { get, post, put, del, messageOf } from './api.js';
import { notify, confirmDialog, statusLine, busy } from './ui.js';
import { state, loadModels, reloadModel, findModel, removeModel } from './state.js';
import { renderDataTab } from './data.js';
import { renderRequestTab, renderScriptTab } from './request.js';
import { renderStorageTab } from './storage.js';
import { restoreForm } from './transfers.js';

export const TYPES = ['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO'];
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

// ---------------------------------------------------------------------------------------------------
// Home

export function renderModelsHome({ main }) {
  const steps = [
    ['Create a data model', 'blank or from a quick-select template.', '#/models/new'],
    ['Add attributes', 'named, typed fields; shown in the tree on the left.', null],
    ['Publish the model', 'attributes can still be added, edited and removed; name and type then stay.', null],
    ['Write a script that stores data', 'an input receives payloads; a rule calls rds:Save.', '#/rules'],
    ['Watch, export and clear the data', 'on the model\'s Data tab.', null],
  ];
  mount(main,
    h('div', { class: 'panel' },
      h('h1', { text: 'Data center' }),
      h('p', { text: `${state.models.length} data model${state.models.length === 1 ? '' : 's'}, ${state.models.filter((m) => m.published).length} published.` }),
      h('h2', { text: 'Working order' }),
      h('ol', { class: 'steps' }, steps.map(([t, d, href]) => h('li', {},
        href ? h('a', { href, text: t }) : h('strong', { text: t }), ` — ${d}`))),
      h('p', {}, h('a', { class: 'button primary', href: '#/models/new', text: '+ New model' }))),
    h('section', { class: 'panel', 'aria-labelledby': 'home-restore-title' },
      h('h2', { id: 'home-restore-title', text: 'Restore a model from a backup' }),
      h('p', { class: 'hint', text: 'A backup file (from a model\'s Storage tab, here or on another gateway) brings back the model with its attributes, ids and records.' }),
      restoreForm()));
}

// ---------------------------------------------------------------------------------------------------
// New model

export async function renderNewModel({ main }) {
  const name = field('Name', h('input', { type: 'text', name: 'name', required: true, autocomplete: 'off', maxlength: '128' }));
  const desc = field('Description', h('input', { type: 'text', name: 'description', autocomplete: 'off' }));
  const blankId = uid('start');
  const tplId = uid('start');
  const rBlank = h('input', { type: 'radio', name: 'start', id: blankId, value: 'blank', checked: true });
  const rTpl = h('input', { type: 'radio', name: 'start', id: tplId, value: 'template' });
  const tplSelect = h('select', { id: 'template', name: 'template', disabled: true }, h('option', { value: '', text: 'Loading templates…' }));
  const tplField = field('Template', tplSelect);
  const preview = h('div', { class: 'tpl-preview', 'aria-live': 'polite' });
  const status = statusLine();
  const submit = h('button', { type: 'submit', class: 'primary', text: 'Create model' });
  const form = h('form', { class: 'panel', 'aria-labelledby': 'newmodel-title', novalidate: true },
    h('h1', { id: 'newmodel-title', text: 'New data model' }),
    name.wrap, desc.wrap,
    h('fieldset', { class: 'start' }, h('legend', { text: 'Start from' }),
      h('div', { class: 'radio' }, rBlank, h('label', { for: blankId, text: 'A blank model (add attributes yourself)' })),
      h('div', { class: 'radio' }, rTpl, h('label', { for: tplId, text: 'A quick-select template' })),
      tplField.wrap, preview),
    status.el,
    h('div', { class: 'actions' }, h('a', { class: 'button', href: '#/models', text: 'Cancel' }), submit));
  mount(main, form);
  name.input.focus();

  let templates = [];
  const syncStart = () => {
    const useTpl = rTpl.checked;
    tplSelect.disabled = !useTpl || !templates.length;
    tplField.wrap.hidden = !useTpl;
    preview.hidden = !useTpl;
    if (useTpl && tplSelect.value) showPreview();
  };
  rBlank.addEventListener('change', syncStart);
  rTpl.addEventListener('change', syncStart);
  tplField.wrap.hidden = true;

  let previewSeq = 0;
  async function showPreview() {
    const id = tplSelect.value;
    if (!id) { mount(preview); return; }
    const seq = ++previewSeq;
    mount(preview, h('p', { class: 'muted', text: 'Loading the template\'s attributes…' }));
    try {
      const d = await get('schema/getTemplateFields', { templateId: id });
      if (seq !== previewSeq) return;
      const fields = Array.isArray(d) ? d : (d && Array.isArray(d.records) ? d.records : (d && Array.isArray(d.fields) ? d.fields : []));
      const cols = ['name', 'type', 'unit', 'label', 'description'].filter((c) => fields.some((f) => f && f[c] !== undefined && f[c] !== ''));
      const tpl = templates.find((t) => String(t.value) === id);
      mount(preview,
        h('table', { class: 'grid compact' },
          h('caption', { text: `Attributes the template "${tpl ? tpl.label : id}" adds (${fields.length})` }),
          h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col', text: c })))),
          h('tbody', {}, fields.map((f) => h('tr', {}, cols.map((c) => h('td', { text: f[c] === undefined ? '' : String(f[c]) })))))));
    } catch (e) {
      if (seq === previewSeq) mount(preview, h('p', { class: 'status-line error', role: 'alert', text: `Template preview failed: ${messageOf(e)}` }));
    }
  }
  tplSelect.addEventListener('change', () => {
    const t = templates.find((x) => String(x.value) === tplSelect.value);
    if (t && !name.input.value.trim()) name.input.value = t.value.toLowerCase();
    showPreview();
  });

  get('schema/getTemplates').then((list) => {
    templates = Array.isArray(list) ? list : [];
    mount(tplSelect, h('option', { value: '', text: templates.length ? 'Choose a template…' : 'No templates' }),
      templates.map((t) => h('option', { value: t.value, text: t.label && t.label !== t.value ? `${t.label} (${t.value})` : t.value })));
    syncStart();
  }).catch((e) => {
    mount(tplSelect, h('option', { value: '', text: 'Templates unavailable' }));
    setFieldError(tplField, `Loading the templates failed: ${messageOf(e)}`);
  });

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setFieldError(name, '');
    setFieldError(tplField, '');
    status.clear();
    const n = name.input.value.trim();
    if (!n) { setFieldError(name, 'A model needs a name.'); name.input.focus(); return; }
    const useTpl = rTpl.checked;
    if (useTpl && !tplSelect.value) { setFieldError(tplField, 'Choose a template, or start from a blank model.'); tplSelect.focus(); return; }
    busy(submit, async () => {
      let created;
      try {
        created = await post('schema/create', { name: n, description: desc.input.value.trim() });
      } catch (ex) {
        if (/name/i.test(ex.message)) { setFieldError(name, ex.message); name.input.focus(); } else if (/description/i.test(ex.message)) setFieldError(desc, ex.message);
        else status.error(`Creating the model failed: ${messageOf(ex)}`);
        return;
      }
      const uuid = created && created.uuid;
      if (!uuid) { status.error('The gateway did not return the new model\'s uuid.'); return; }
      if (useTpl) {
        try {
          await post('schema/genTemplate', undefined, { schemaId: uuid, templateId: tplSelect.value });
        } catch (ex) {
          notify(`The model was created, but applying the template failed: ${messageOf(ex)}`, 'error');
        }
      }
      await loadModels().catch(() => {});
      notify(`Model "${n}" created.`, 'ok');
      location.hash = `#/models/${uuid}/attributes`;
    }, status);
  });
}

// ---------------------------------------------------------------------------------------------------
// Model page

const TABS = [['attributes', 'Attributes'], ['data', 'Data'], ['storage', 'Storage'], ['request', 'Quick request'], ['script', 'Script']];

export async function renderModel(ctx, uuid, tab) {
  const { main } = ctx;
  let m = findModel(uuid);
  if (!m) {
    mount(main, h('p', { class: 'muted', text: 'Loading…' }));
    try { m = await reloadModel(uuid); } catch (e) {
      mount(main, h('div', { class: 'panel' }, h('h1', { text: 'Data model' }), h('p', { class: 'status-line error', role: 'alert', text: `Loading model ${uuid} failed: ${messageOf(e)}` })));
      return;
    }
  }
  if (!TABS.some(([t]) => t === tab)) tab = 'attributes';
  const body = h('div', { class: 'tab-body' });
  const header = h('div', { class: 'model-head' },
    h('div', {},
      h('h1', {}, h('span', { text: m.name }), ' ', h('span', { class: `badge ${m.published ? 'pub' : 'draft'}`, text: m.published ? 'published' : 'draft' })),
      h('p', { class: 'uuid' }, 'uuid ', h('code', { id: 'model-uuid', text: m.uuid }), ' ', copyButton(m.uuid, 'Copy', 'Copy the model uuid')),
      m.description ? h('p', { class: 'muted', text: m.description }) : null),
    h('div', { class: 'head-actions' }, modelActions(m)));
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Model views' },
    TABS.map(([t, label]) => h('a', { href: `#/models/${m.uuid}/${t}`, 'aria-current': t === tab ? 'page' : false, text: label })));
  mount(main, header, tabs, body);
  if (tab === 'attributes') renderAttributesTab(body, m);
  else if (tab === 'data') renderDataTab(ctx, body, m);
  else if (tab === 'storage') renderStorageTab(body, m);
  else if (tab === 'request') renderRequestTab(ctx, body, m);
  else renderScriptTab(ctx, body, m);
}

function rerender() { window.dispatchEvent(new HashChangeEvent('hashchange')); }

function modelActions(m) {
  const out = [];
  if (!m.published) {
    const pub = h('button', { type: 'button', class: 'primary', id: 'publish', text: 'Publish…' });
    pub.addEventListener('click', async () => {
      if (!m.attributes.length) { notify('Add at least one attribute before publishing.', 'error'); return; }
      const ok = await confirmDialog({
        title: `Publish "${m.name}"?`,
        body: [h('p', {}, h('strong', { text: 'After publishing, an attribute keeps its name and type: ' }), 'you can still add attributes (older records read their default), edit labels, units and bounds, and remove attributes (their stored values stay and come back if you add them again). Scripts can then store data in this model.'),
          h('p', { class: 'muted', text: `${m.attributes.length} attribute${m.attributes.length === 1 ? '' : 's'}: ${m.attributes.map((a) => `${a.name} (${a.type})`).join(', ')}.` }),
          h('p', { class: 'muted', text: 'To rename or retype an attribute later, the model must be returned to draft, which deletes all its stored data.' })],
        confirmLabel: 'Publish',
        action: () => post('schema/publish', undefined, { uuid: m.uuid }),
      });
      if (ok) {
        await reloadModel(m.uuid).catch(() => {});
        notify(`"${m.name}" is published.`, 'ok');
        rerender();
      }
    });
    out.push(pub);
  } else {
    const fix = h('button', { type: 'button', text: 'Return to draft…' });
    fix.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: `Return "${m.name}" to draft?`,
        body: [h('p', {}, 'This ', h('strong', { text: 'deletes all data stored' }), ' in this model, then lets you change its attributes. It cannot be undone.'),
          h('p', { text: 'Export the data first if you need it (Data tab).' })],
        confirmLabel: 'Delete the data and return to draft', danger: true, typeToConfirm: m.name,
        action: () => post('schema/fix', undefined, { uuid: m.uuid, confirm: 'true' }),
      });
      if (ok) { await reloadModel(m.uuid).catch(() => {}); notify(`"${m.name}" is a draft again.`, 'ok'); rerender(); }
    });
    out.push(fix);
  }
  const delBtn = h('button', { type: 'button', class: 'danger-outline', text: 'Delete model…' });
  delBtn.addEventListener('click', async () => {
    const ok = await confirmDialog({
      title: `Delete "${m.name}"?`,
      body: [h('p', {}, 'The model, its attributes ', h('strong', { text: 'and all its stored data' }), ' are deleted. It cannot be undone.'),
        m.published ? h('p', { text: 'Export the data first if you need it (Data tab).' }) : null],
      confirmLabel: 'Delete the model', danger: true, typeToConfirm: m.name,
      action: () => del('schema/del', { uuid: m.uuid }),
    });
    if (ok) { removeModel(m.uuid); notify(`"${m.name}" deleted.`, 'ok'); location.hash = '#/models'; }
  });
  out.push(delBtn);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Attributes tab

function ruleText(a) {
  const r = a.rule || {};
  const parts = [];
  if (r.defaultValue !== undefined && r.defaultValue !== '') parts.push(`default ${JSON.stringify(r.defaultValue)}`);
  if ((a.type === 'INTEGER' || a.type === 'FLOAT') && Number(r.max) > Number(r.min)) parts.push(`${r.min}…${r.max}`);
  if (a.type === 'STRING' && Number(r.max) > 0) parts.push(`max ${r.max} bytes`);
  if (a.type === 'FLOAT' && Number(r.round) > 0) parts.push(`round ${r.round}`);
  if (a.type === 'BOOL' && (r.trueLabel || r.falseLabel)) parts.push(`${r.trueLabel || 'true'}/${r.falseLabel || 'false'}`);
  return parts.join(', ');
}

function renderAttributesTab(body, m) {
  // Published models change too (contract 13): attributes are added and removed; name and type stay.
  const editable = true;
  const formHost = h('div', { class: 'attr-form-host' });
  const addBtn = editable ? h('button', { type: 'button', class: 'primary', id: 'add-attr', text: '+ Add attribute' }) : null;
  const table = h('table', { class: 'grid', id: 'attr-table' },
    h('caption', { class: 'sr-only', text: `Attributes of ${m.name}` }),
    h('thead', {}, h('tr', {}, ['Name', 'Label', 'Type', 'R/W', 'Unit', 'Rule', 'Description', editable ? 'Actions' : null].filter(Boolean).map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, m.attributes.length ? m.attributes.map((a) => h('tr', { dataset: { attr: a.name } },
      h('td', {}, h('code', { text: a.name })), h('td', { text: a.label || '' }), h('td', { text: a.type }), h('td', { text: a.rw || '' }),
      h('td', { text: a.unit || '' }), h('td', { text: ruleText(a) }), h('td', { text: a.description || '' }),
      editable ? h('td', { class: 'row-actions' }, editBtn(a), deleteAttrBtn(a)) : null))
      : h('tr', {}, h('td', { colspan: editable ? 8 : 7, class: 'muted', text: editable ? 'No attributes yet: add the first one.' : 'No attributes.' }))));

  function editBtn(a) {
    const b = h('button', { type: 'button', class: 'small', 'aria-label': `Edit attribute ${a.name}`, text: 'Edit' });
    b.addEventListener('click', () => openForm(a));
    return b;
  }
  function deleteAttrBtn(a) {
    const b = h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete attribute ${a.name}`, text: 'Delete' });
    b.addEventListener('click', async () => {
      const ok = await confirmDialog({
        title: `Delete attribute "${a.name}"?`,
        body: h('p', { text: m.published
          ? 'It leaves answers and writes. Its stored values stay on disk and come back if an attribute with the same name and type is added again.'
          : 'The model is a draft, so nothing is stored yet.' }),
        confirmLabel: 'Delete', danger: true, action: () => del('schema/properties/del', { uuid: a.uuid }),
      });
      if (ok) { await reloadModel(m.uuid).catch(() => {}); rerender(); }
    });
    return b;
  }
  function openForm(a) {
    mount(formHost, attributeForm(m, a, async () => { await reloadModel(m.uuid).catch(() => {}); rerender(); }, () => { mount(formHost); if (addBtn) addBtn.focus(); }));
    const first = formHost.querySelector('input,select');
    if (first) first.focus();
  }
  if (addBtn) addBtn.addEventListener('click', () => openForm(null));

  mount(body,
    h('section', { class: 'panel', 'aria-labelledby': 'attrs-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'attrs-title', text: 'Attributes' }), addBtn),
      m.published ? h('p', { class: 'hint', text: 'The model is published: add, edit and delete attributes; an attribute keeps its name and type.' })
        : h('p', { class: 'hint', text: 'The model is a draft: add, edit and delete attributes, then publish it.' }),
      h('div', { class: 'table-wrap' }, table),
      formHost));
}

/** The add/edit attribute form. a: existing attribute or null. */
function attributeForm(m, a, onSaved, onClose) {
  const r = (a && a.rule) || {};
  const f = {
    name: field('Name', h('input', { type: 'text', name: 'name', value: a ? a.name : '', autocomplete: 'off', spellcheck: 'false', required: true }),
      { hint: 'Letters, digits and _, not starting with a digit; at most 64; not id or create_at. This is the key scripts use.' }),
    label: field('Label', h('input', { type: 'text', name: 'label', value: a ? a.label || '' : '', autocomplete: 'off' }), { hint: 'Display text; the name when left empty.' }),
    type: field('Type', select(TYPES.map((t) => [t, t]), a ? a.type : 'FLOAT', { name: 'type' })),
    rw: field('Access', select([['R', 'R (read)'], ['W', 'W (write)'], ['RW', 'RW (read/write)']], a ? a.rw || 'R' : 'R', { name: 'rw' })),
    unit: field('Unit', h('input', { type: 'text', name: 'unit', value: a ? a.unit || '' : '', autocomplete: 'off' })),
    description: field('Description', h('input', { type: 'text', name: 'description', value: a ? a.description || '' : '', autocomplete: 'off' })),
    defaultValue: field('Default value', h('input', { type: 'text', name: 'defaultValue', value: r.defaultValue === undefined ? '' : String(r.defaultValue), autocomplete: 'off' })),
    defaultBool: field('Default (true or false)', select([['false', 'false'], ['true', 'true']], String(r.defaultValue === true || r.defaultValue === 'true'), { name: 'defaultBool' })),
    min: field('Minimum', h('input', { type: 'number', name: 'min', step: 'any', value: r.min === undefined ? '0' : String(r.min) })),
    max: field('Maximum', h('input', { type: 'number', name: 'max', step: 'any', value: r.max === undefined ? '0' : String(r.max) }), { hint: 'Bounds apply only when maximum > minimum.' }),
    maxLen: field('Longest length (bytes)', h('input', { type: 'number', name: 'maxLen', min: '0', step: '1', value: r.max === undefined ? '0' : String(r.max) }), { hint: '0: no limit.' }),
    round: field('Decimal places', h('input', { type: 'number', name: 'round', min: '0', max: '15', step: '1', value: r.round === undefined ? '0' : String(r.round) }), { hint: 'Values are rounded when stored; 0 keeps them as they are.' }),
    trueLabel: field('Label for true', h('input', { type: 'text', name: 'trueLabel', value: r.trueLabel || '', autocomplete: 'off' })),
    falseLabel: field('Label for false', h('input', { type: 'text', name: 'falseLabel', value: r.falseLabel || '', autocomplete: 'off' })),
  };
  if (a && m.published) {
    // Stored values are kept by name and type: those two stay while the model is published.
    f.name.input.readOnly = true;
    f.type.input.disabled = true;
  }
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'primary', text: a ? 'Save attribute' : 'Add attribute' });
  const cancel = h('button', { type: 'button', text: 'Cancel' });
  cancel.addEventListener('click', onClose);
  const titleId = uid('attrform');
  const form = h('form', { class: 'attr-form', 'aria-labelledby': titleId, novalidate: true },
    h('h3', { id: titleId, text: a ? `Edit attribute ${a.name}` : 'New attribute' }),
    h('div', { class: 'grid-form' }, Object.values(f).map((x) => x.wrap)),
    status.el,
    h('div', { class: 'actions' }, cancel, save));
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); onClose(); } });

  const syncType = () => {
    const t = f.type.input.value;
    f.defaultValue.wrap.hidden = t === 'BOOL';
    f.defaultBool.wrap.hidden = t !== 'BOOL';
    f.min.wrap.hidden = f.max.wrap.hidden = !(t === 'INTEGER' || t === 'FLOAT');
    f.maxLen.wrap.hidden = t !== 'STRING';
    f.round.wrap.hidden = t !== 'FLOAT';
    f.trueLabel.wrap.hidden = f.falseLabel.wrap.hidden = t !== 'BOOL';
    f.defaultValue.input.placeholder = t === 'GEO' ? 'lat,lng e.g. 0,0' : (t === 'STRING' ? '' : '0');
    f.defaultValue.input.inputMode = t === 'INTEGER' ? 'numeric' : (t === 'FLOAT' ? 'decimal' : 'text');
  };
  f.type.input.addEventListener('change', syncType);
  syncType();

  /** Client-side checks, mirroring contract section 3. Returns {field: message}. */
  function check(p) {
    const errs = {};
    if (!p.name) errs.name = 'Enter a name.';
    else if (!NAME_RE.test(p.name)) errs.name = 'Use letters, digits and _ only, not starting with a digit, at most 64 characters.';
    else if (p.name === 'id' || p.name === 'create_at') errs.name = `"${p.name}" is reserved for every record.`;
    const t = p.type;
    const dv = p.rule.defaultValue;
    if (t === 'INTEGER' && !Number.isInteger(dv)) errs.defaultValue = 'The default of an INTEGER must be a whole number.';
    if (t === 'FLOAT' && !Number.isFinite(dv)) errs.defaultValue = 'The default of a FLOAT must be a number.';
    if (t === 'GEO' && !/^\s*-?\d+(\.\d+)?\s*,\s*-?\d+(\.\d+)?\s*$/.test(String(dv))) errs.defaultValue = 'A GEO default is "lat,lng", e.g. 0,0.';
    if ((t === 'INTEGER' || t === 'FLOAT') && !Number.isFinite(p.rule.min)) errs.min = 'Enter a number.';
    if ((t === 'INTEGER' || t === 'FLOAT') && !Number.isFinite(p.rule.max)) errs.max = 'Enter a number.';
    if (t === 'STRING' && (!Number.isInteger(p.rule.max) || p.rule.max < 0)) errs.maxLen = 'Enter a whole number, 0 or more.';
    if (t === 'FLOAT' && (!Number.isInteger(p.rule.round) || p.rule.round < 0)) errs.round = 'Enter a whole number, 0 or more.';
    return errs;
  }

  function payload() {
    const t = f.type.input.value;
    const dvRaw = f.defaultValue.input.value.trim();
    let dv;
    if (t === 'BOOL') dv = f.defaultBool.input.value === 'true';
    else if (t === 'INTEGER' || t === 'FLOAT') dv = dvRaw === '' ? 0 : Number(dvRaw);
    else if (t === 'GEO') dv = dvRaw === '' ? '0,0' : dvRaw;
    else dv = f.defaultValue.input.value;
    const num = (x) => (x.input.value.trim() === '' ? 0 : Number(x.input.value));
    const name = f.name.input.value.trim();
    return {
      schemaId: m.uuid,
      name,
      label: f.label.input.value.trim() || name,
      type: t,
      rw: f.rw.input.value,
      unit: f.unit.input.value.trim(),
      description: f.description.input.value.trim(),
      rule: {
        defaultValue: dv,
        min: t === 'INTEGER' || t === 'FLOAT' ? num(f.min) : 0,
        max: t === 'INTEGER' || t === 'FLOAT' ? num(f.max) : (t === 'STRING' ? num(f.maxLen) : 0),
        trueLabel: t === 'BOOL' ? f.trueLabel.input.value.trim() : '',
        falseLabel: t === 'BOOL' ? f.falseLabel.input.value.trim() : '',
        round: t === 'FLOAT' ? num(f.round) : 0,
      },
    };
  }

  /** Which field a server message names (contract: the message names the field). */
  function fieldOfMessage(msg) {
    const t = f.type.input.value;
    const order = [['defaultValue', t === 'BOOL' ? 'defaultBool' : 'defaultValue'], ['trueLabel', 'trueLabel'], ['falseLabel', 'falseLabel'],
      ['round', 'round'], ['min', 'min'], ['max', t === 'STRING' ? 'maxLen' : 'max'], ['label', 'label'], ['unit', 'unit'],
      ['description', 'description'], ['type', 'type'], ['rw', 'rw'], ['name', 'name']];
    for (const [word, key] of order) {
      if (new RegExp(`(^|[^A-Za-z])(rule\\.)?${word}([^A-Za-z]|$)`, 'i').test(msg)) return key;
    }
    if (/default/i.test(msg)) return t === 'BOOL' ? 'defaultBool' : 'defaultValue';
    if (/attribute|already exists|duplicate|reserved/i.test(msg)) return 'name';
    return null;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const x of Object.values(f)) setFieldError(x, '');
    status.clear();
    const p = payload();
    const errs = check(p);
    const keys = Object.keys(errs);
    if (keys.length) {
      for (const k of keys) setFieldError(f[k], errs[k]);
      f[keys[0]].input.focus();
      return;
    }
    busy(save, async () => {
      try {
        if (a) await put('schema/properties/update', { ...p, uuid: a.uuid });
        else await post('schema/properties/create', p);
      } catch (ex) {
        const k = fieldOfMessage(ex.message);
        if (k && f[k] && !f[k].wrap.hidden) { setFieldError(f[k], ex.message); f[k].input.focus(); } else status.error(messageOf(ex));
        return;
      }
      notify(a ? `Attribute "${p.name}" saved.` : `Attribute "${p.name}" added.`, 'ok');
      await onSaved();
      const again = document.getElementById('add-attr');
      if (again) again.focus();
    }, status);
  });
  return form;
}
