// The model page: its header (name, state, uuid), the publish / return to draft / delete actions and the
// tabs. The tabs themselves live in attributes.js, data.js, storage.js and request.js.
import { h, mount, copyButton } from '../core/dom.js';
import { post, del, messageOf } from '../core/api.js';
import { notify, confirmDialog, redrawView } from '../core/ui.js';
import { reloadModel, reloadModelAfterAction, findModel, removeModel } from '../core/state.js';
import { renderAttributesTab } from './attributes.js';
import { renderDataTab } from '../data/data.js';
import { renderRequestTab, renderScriptTab } from './request.js';
import { renderStorageTab } from './storage.js';

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
        await reloadModelAfterAction(m.uuid);
        notify(`"${m.name}" is published.`, 'ok');
        redrawView();
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
      if (ok) { await reloadModelAfterAction(m.uuid); notify(`"${m.name}" is a draft again.`, 'ok'); redrawView(); }
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
