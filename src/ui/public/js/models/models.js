// Data models: the home page and creating a model (blank or from a template). The model page is
// model-page.js.
import { h, mount, field, setFieldError, uid } from '../core/dom.js';
import { get, post, messageOf } from '../core/api.js';
import { notify, statusLine, busy } from '../core/ui.js';
import { state, loadModelsAfterAction } from '../core/state.js';
import { restoreForm } from '../core/transfers.js';

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
      await loadModelsAfterAction();
      notify(`Model "${n}" created.`, 'ok');
      location.hash = `#/models/${uuid}/attributes`;
    }, status);
  });
}
