// The Inputs panel of the Inputs & rules page: the list with push URL, token, connection and health
// cells, the New input / Edit input form (input-form.js), the created / rotated token panel and delete
// with its refusal.
import { h, mount, copyButton } from '../core/dom.js';
import { get, post, del, messageOf, listOf } from '../core/api.js';
import { notify, confirmDialog } from '../core/ui.js';
import { state } from '../core/state.js';
import { examplePayload } from '../models/request.js';
import { inputForm } from './input-form.js';
import { summary, reachHost, typeLabel } from './input-types.js';

const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

function pushUrl(uuid) { return `${location.origin}/api/v1/inends/push?uuid=${encodeURIComponent(uuid)}`; }

function pushCurl(uuid, token, payload) {
  return `curl -s -X POST -H ${shq(`Authorization: Bearer ${token}`)} -H 'Content-Type: application/json' -d ${shq(payload)} ${shq(pushUrl(uuid))}`;
}

function tokenOf(inend) {
  return inend.token || (inend.config && inend.config.token) || '';
}

const named = (name, uuid) => (name ? `${name} (${uuid})` : uuid);

function mqttPubLine(host, port, token, payload) {
  return `mosquitto_pub -h ${shq(host)} -p ${port} -q 1${token ? ` -u device -P ${shq(token)}` : ''} -t 'plant/line1' -m ${shq(payload)}`;
}

function udpLine(host, port, payload) {
  return `printf '%s' ${shq(payload)} | nc -u -w1 ${shq(host)} ${port}`;
}

/** The rows of the created-input panel that say how a device reaches the input. */
function createdRows(created, body, payload) {
  const c = body.config || {};
  const row = (dt, id, text, copy, copyName) => [h('dt', { text: dt }), h('dd', {}, h('code', { id, class: copy && text.length > 60 ? 'wrap' : undefined, text }), copy ? [' ', copyButton(copy, 'Copy', copyName)] : null)];
  if (body.type === 'HTTP') {
    const token = created.token || '';
    return [
      row('Push URL', 'created-push-url', `POST ${pushUrl(created.uuid)}`, pushUrl(created.uuid), 'Copy the push URL'),
      row('Push token', 'created-push-token', token || '(not returned)', token, 'Copy the push token'),
      row('Example', 'created-push-curl', pushCurl(created.uuid, token || '<token>', payload), () => pushCurl(created.uuid, token || '<token>', payload), 'Copy the push curl line'),
    ];
  }
  if (body.type === 'SIMULATOR') return [h('dt', { text: 'Simulator' }), h('dd', { text: `every ${c.intervalMs} ms: ${c.tags.map((t) => `${t.tag} ${t.min}…${t.max}`).join(', ')}` })];
  if (body.type === 'GENERIC_MQTT') {
    return [
      row('Broker', 'created-broker', `mqtt://${c.host}:${c.port}`),
      row('Client id', 'created-client-id', c.clientId),
      row('Topics', 'created-topics', `${c.subTopics.join(', ')} (QoS ${c.qos})`),
    ];
  }
  const host = reachHost(c.host);
  if (body.type === 'GENERIC_MQTT_SERVER') {
    const token = c.anonymous ? '' : created.token || '';
    return [
      row('Broker address', 'created-broker', `mqtt://${host}:${c.port}`, `mqtt://${host}:${c.port}`, 'Copy the broker address'),
      c.anonymous ? row('Login', 'created-login', 'none: anonymous clients are accepted')
        : [row('Username', 'created-username', 'any'),
          row('Password (push token)', 'created-push-token', token || '(not returned)', token, 'Copy the push token')],
      row('Example', 'created-mqtt-pub', mqttPubLine(host, c.port, c.anonymous ? '' : token || '<token>', payload), () => mqttPubLine(host, c.port, c.anonymous ? '' : token || '<token>', payload), 'Copy the mosquitto_pub line'),
    ];
  }
  if (body.type === 'UDP_SERVER') {
    return [
      row('Address', 'created-udp-address', `udp://${host}:${c.port}`, `${host}:${c.port}`, 'Copy the UDP address'),
      row('Example', 'created-udp-example', udpLine(host, c.port, payload), () => udpLine(host, c.port, payload), 'Copy the nc line'),
    ];
  }
  return [];
}

const CREATED_HINT = {
  HTTP: 'Keep the token: the push endpoint needs it as a Bearer token. Next: write a rule that reads from this input.',
  GENERIC_MQTT: 'The input connects to the broker now: its state (Connected, or Reconnecting with the broker\'s error) shows in the list. Next: write a rule that reads from this input.',
  GENERIC_MQTT_SERVER: 'Keep the token: it is shown only now, and clients log in with it as the password. Next: write a rule that reads from this input.',
  UDP_SERVER: 'The port is open now; its state shows in the list. Next: write a rule that reads from this input.',
};

/** What a delete stops, by type. */
const DELETE_STOPS = {
  HTTP: ': its push URL and token stop working',
  SIMULATOR: ' and its simulator stops',
  GENERIC_MQTT: ': it disconnects from its broker',
  GENERIC_MQTT_SERVER: ': its broker stops listening and its clients are disconnected',
  UDP_SERVER: ': its UDP port closes',
};

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
  const closeForm = (back) => { mount(formHost); (back && back.isConnected ? back : newInputBtn).focus(); };
  newInputBtn.addEventListener('click', () => {
    mount(formHost, inputForm({ onSaved: afterCreate, onClose: () => closeForm(newInputBtn) }));
    formHost.querySelector('input').focus();
  });

  function showCreated(created, body) {
    const model = state.models.find((m) => m.published) || state.models[0];
    const payload = model ? examplePayload(model) : '[{"tag":"temperature","value":21.5}]';
    const title = h('h3', { tabindex: '-1', text: `Input "${body.name}" created` });
    const dismiss = h('button', { type: 'button', class: 'small', text: 'Dismiss' });
    dismiss.addEventListener('click', () => { mount(createdBox); newInputBtn.focus(); });
    const hint = CREATED_HINT[body.type];
    mount(createdBox, h('div', { class: 'panel created' },
      title,
      h('dl', { class: 'kv wide' },
        h('dt', { text: 'uuid' }), h('dd', {}, h('code', { id: 'created-input-uuid', text: created.uuid }), ' ', copyButton(created.uuid, 'Copy', 'Copy the input uuid')),
        createdRows(created, body, payload)),
      hint && !(body.type === 'GENERIC_MQTT_SERVER' && body.config.anonymous) ? h('p', { class: 'hint', text: hint }) : null,
      h('div', { class: 'actions left' },
        h('a', { class: 'button primary', id: 'rule-for-input', href: `#/rules/new?input=${encodeURIComponent(created.uuid)}${model ? `&schema=${encodeURIComponent(model.uuid)}` : ''}`, text: 'Write a rule for this input' }),
        dismiss)));
    title.focus();
  }

  async function reloadList() {
    try {
      const list = listOf(await get('inends/list'));
      healthCells.clear();
      mount(inputsTable.tBodies[0], inputRows(list));
      refreshHealth();
    } catch (e) { notify(`Reloading the inputs failed: ${messageOf(e)}`, 'error'); }
  }

  async function afterCreate(created, body) {
    mount(formHost);
    await reloadList();
    showCreated(created, body);
  }

  function edit(i, opener) {
    mount(formHost, inputForm({
      inend: i,
      onSaved: async () => { mount(formHost); await reloadList(); newInputBtn.focus(); },
      onClose: () => closeForm(opener),
    }));
    formHost.querySelector('input').focus();
  }

  function deleteBody(i) {
    const readers = rules.filter((r) => (r.fromSource || []).includes(i.uuid));
    if (readers.length) {
      return [h('p', { text: `The gateway refuses to delete an input that a rule reads. ${readers.length === 1 ? 'This rule reads' : 'These rules read'} from "${i.name}":` }),
        h('ul', {}, readers.map((r) => h('li', {}, h('a', { href: `#/rules/${r.uuid}`, text: named(r.name, r.uuid) })))),
        h('p', { text: 'Remove the input from each rule\'s inputs (or delete the rules) first; nothing is deleted until then.' })];
    }
    return h('p', { text: `The input ${named(i.name, i.uuid)} is removed at once${DELETE_STOPS[i.type] || ''}. Records already stored stay in their models.` });
  }

  async function rotate(i) {
    let created;
    const broker = i.type === 'GENERIC_MQTT_SERVER';
    const ok = await confirmDialog({
      title: `Rotate the push token of "${i.name}"?`,
      body: [h('p', { text: broker
        ? 'A new token is made now, and the current one stops working at once: a client logging in to this broker with it is refused until it is given the new token.'
        : 'A new token is made now, and the current one stops working at once: every device pushing to this input gets 401 until it is given the new token.' }),
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
      h('p', { class: 'hint', text: broker ? 'The old token is refused from now on. Give this one to the clients of this broker as their password.' : 'The old token is refused from now on. Give this one to the devices that push to this input.' }),
      h('div', { class: 'actions left' }, dismiss)));
    notify(`Push token of "${i.name}" rotated: the old one no longer works.`, 'ok');
    title.focus();
  }

  function inputRows(list) {
    if (!list.length) return h('tr', {}, h('td', { colspan: '6', class: 'muted', text: 'No input yet. An input receives payloads (HTTP push, MQTT, UDP or a simulator) and hands them to its rules.' }));
    return list.map((i) => {
      const delBtn = h('button', { type: 'button', class: 'small danger-outline', 'aria-label': `Delete input ${i.name}`, text: 'Delete' });
      delBtn.addEventListener('click', async () => {
        const refused = rules.some((r) => (r.fromSource || []).includes(i.uuid));
        const ok = await confirmDialog({ title: `Delete input "${i.name}"?`, body: deleteBody(i), confirmLabel: 'Delete', danger: true, action: () => del('inends/del', { uuid: i.uuid }), ...(refused ? { confirmLabel: 'Try to delete' } : {}) });
        if (ok) reload();
      });
      const editBtn = h('button', { type: 'button', class: 'small', 'aria-label': `Edit input ${i.name}`, text: 'Edit' });
      editBtn.addEventListener('click', () => edit(i, editBtn));
      const rotateBtn = i.type === 'HTTP' || (i.type === 'GENERIC_MQTT_SERVER' && !(i.config && i.config.anonymous)) ? h('button', { type: 'button', class: 'small', 'aria-label': `Rotate the push token of ${i.name}`, text: 'Rotate token' }) : null;
      if (rotateBtn) rotateBtn.addEventListener('click', () => rotate(i));
      const health = h('td', { class: 'health-cell', 'data-input': i.uuid }, h('span', { class: 'muted', text: '…' }));
      healthCells.set(i.uuid, health);
      const tok = tokenOf(i);
      const details = i.type === 'HTTP'
        ? h('span', {}, h('code', { class: 'wrap', text: `POST ${pushUrl(i.uuid)}` }), ' ', copyButton(pushUrl(i.uuid), 'Copy', `Copy the push URL of ${i.name}`),
          tok ? [' ', copyButton(tok, 'Copy token', `Copy the push token of ${i.name}`)] : null)
        : h('span', { text: summary(i) });
      return h('tr', { 'data-input-row': i.uuid }, h('td', { text: i.name }), h('td', {}, typeLabel(i.type), i.type !== typeLabel(i.type) ? h('code', { class: 'type-code' }, i.type.split('_').flatMap((part, n) => (n ? ['_', h('wbr'), part] : [part]))) : null), h('td', {}, h('code', { text: i.uuid })), h('td', {}, details), health, h('td', { class: 'row-actions' }, editBtn, rotateBtn, delBtn));
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
