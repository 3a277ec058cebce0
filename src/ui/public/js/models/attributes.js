// A model's Attributes tab: the attribute table with edit and delete, and the form to add or edit one
// (attribute-form.js).
import { h, mount } from '../core/dom.js';
import { del } from '../core/api.js';
import { confirmDialog, redrawView } from '../core/ui.js';
import { reloadModelAfterAction } from '../core/state.js';
import { attributeForm } from './attribute-form.js';

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

export function renderAttributesTab(body, m) {
  // Published models change too (contract 13): attributes are added and removed; name and type stay.
  const formHost = h('div', { class: 'attr-form-host' });
  const addBtn = h('button', { type: 'button', class: 'primary', id: 'add-attr', text: '+ Add attribute' });
  const table = h('table', { class: 'grid', id: 'attr-table' },
    h('caption', { class: 'sr-only', text: `Attributes of ${m.name}` }),
    h('thead', {}, h('tr', {}, ['Name', 'Label', 'Type', 'R/W', 'Unit', 'Rule', 'Description', 'Actions'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, m.attributes.length ? m.attributes.map((a) => h('tr', { dataset: { attr: a.name } },
      h('td', {}, h('code', { text: a.name })), h('td', { text: a.label || '' }), h('td', { text: a.type }), h('td', { text: a.rw || '' }),
      h('td', { text: a.unit || '' }), h('td', { text: ruleText(a) }), h('td', { text: a.description || '' }),
      h('td', { class: 'row-actions' }, editBtn(a), deleteAttrBtn(a))))
      : h('tr', {}, h('td', { colspan: 8, class: 'muted', text: 'No attributes yet: add the first one.' }))));

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
      if (ok) { await reloadModelAfterAction(m.uuid); redrawView(); }
    });
    return b;
  }
  function openForm(a) {
    mount(formHost, attributeForm(m, a, async () => { await reloadModelAfterAction(m.uuid); redrawView(); }, () => { mount(formHost); addBtn.focus(); }));
    const first = formHost.querySelector('input,select');
    if (first) first.focus();
  }
  addBtn.addEventListener('click', () => openForm(null));

  mount(body,
    h('section', { class: 'panel', 'aria-labelledby': 'attrs-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'attrs-title', text: 'Attributes' }), addBtn),
      m.published ? h('p', { class: 'hint', text: 'The model is published: add, edit and delete attributes; an attribute keeps its name and type.' })
        : h('p', { class: 'hint', text: 'The model is a draft: add, edit and delete attributes, then publish it.' }),
      h('div', { class: 'table-wrap' }, table),
      formHost));
}
