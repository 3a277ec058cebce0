// The New input / Edit input form: name, type and description, then the fields of the type (simulator
// tags, MQTT client, built-in MQTT broker, UDP server). The browser checks what the server checks
// (input-types.js); when the server refuses, its message is shown at the field it names, or under the form.
import { h, mount, field, setFieldError, select } from '../core/dom.js';
import { post, put, messageOf } from '../core/api.js';
import { notify, statusLine, busy } from '../core/ui.js';
import { state } from '../core/state.js';
import { simulatorTags } from '../models/request.js';
import { INPUT_TYPES, CONNECTED_TYPES, defaultConfig, configProblems, fieldOfMessage, UDP_DATA_MAX } from './input-types.js';

const num = (input) => (input.value.trim() === '' ? NaN : Number(input.value));

/** The simulator's fieldset: interval and {tag, min, max, decimals} rows. */
function simulatorPart(config) {
  const interval = field('Interval (ms)', h('input', { type: 'number', name: 'intervalMs', min: '100', step: '100', value: String(config ? config.intervalMs : 1000) }));
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
  if (config && Array.isArray(config.tags)) config.tags.forEach((t) => addRow(t.tag, String(t.min), String(t.max), String(t.decimals ?? 2)));
  else {
    // The model's numbers within their bounds, so the simulated payloads are stored, not refused.
    const tags = simulatorTags(model);
    if (tags.length) tags.forEach((t) => addRow(t.tag, String(t.min), String(t.max), String(t.decimals))); else addRow('temperature', '0', '40');
  }
  const el = h('fieldset', { class: 'sim', hidden: true }, h('legend', { text: 'Simulated tags' }), interval.wrap,
    model && !config ? h('p', { class: 'hint', text: `Filled from the numbers of model ${model.name} and their bounds; INTEGER attributes get 0 decimals.` }) : null,
    h('table', { class: 'grid compact' }, h('thead', {}, h('tr', {}, ['Tag', 'Min', 'Max', 'Decimals', ''].map((c) => h('th', { scope: 'col', text: c })))), tagsBody),
    tagsErr, addTag);
  return {
    el,
    fields: { intervalMs: interval },
    clear() { setFieldError(interval, ''); tagsErr.hidden = true; },
    /** The config, or null after showing what is wrong. */
    read() {
      const ms = Number(interval.input.value);
      if (!Number.isInteger(ms) || ms < 1) { setFieldError(interval, 'Enter a whole number of milliseconds.'); interval.input.focus(); return null; }
      const tags = [...tagsBody.children].map((tr) => ({ tag: tr.querySelector('.tag-name').value.trim(), min: Number(tr.querySelector('.tag-min').value), max: Number(tr.querySelector('.tag-max').value), decimals: Number(tr.querySelector('.tag-decimals').value || 2) }));
      const bad = tags.find((t) => !t.tag || !Number.isFinite(t.min) || !Number.isFinite(t.max) || t.max < t.min || !Number.isInteger(t.decimals) || t.decimals < 0 || t.decimals > 6);
      if (!tags.length || bad) { tagsErr.textContent = !tags.length ? 'Add at least one tag.' : `Tag "${bad.tag || '(empty)'}": give a name, min ≤ max and 0 to 6 decimals.`; tagsErr.hidden = false; return null; }
      return { ...(config && config.payloadsPerTick ? { payloadsPerTick: config.payloadsPerTick } : {}), intervalMs: ms, tags };
    },
    showServerError(msg) {
      if (/interval/i.test(msg)) { setFieldError(interval, msg); interval.input.focus(); return true; }
      if (/config\.tags/.test(msg)) { tagsErr.textContent = msg; tagsErr.hidden = false; return true; }
      return false;
    },
  };
}

/**
 * The fields of a connected type (host and port, then the type's own), as one fieldset.
 * `config`: the input's current config when editing, else the type's defaults.
 */
function connectedPart(type, config, editing) {
  const c = { ...defaultConfig(type), ...(config || {}) };
  const text = (label, key, attrs = {}, hint) => field(label, h('input', { type: 'text', name: key, autocomplete: 'off', spellcheck: 'false', value: String(c[key] ?? ''), ...attrs }), hint ? { hint } : {});
  const number = (label, key, min, max, hint) => field(label, h('input', { type: 'number', name: key, min: String(min), max: String(max), step: '1', value: String(c[key]), class: 'narrow' }), hint ? { hint } : {});
  const f = {};
  f.host = text(type === 'GENERIC_MQTT' ? 'Broker host' : 'Listen on (host)', 'host', {},
    type === 'GENERIC_MQTT' ? 'The broker to subscribe at: a name or an IP address.' : 'An IP address of the gateway: 0.0.0.0 takes every interface (devices on the network), 127.0.0.1 only this machine.');
  f.port = number(type === 'GENERIC_MQTT' ? 'Broker port' : 'Port', 'port', 1, 65535);
  const parts = [f.host.wrap, f.port.wrap];
  if (type === 'GENERIC_MQTT') {
    f.clientId = text('Client id', 'clientId', {}, 'Keep it fixed: the broker keeps this input\'s session (and the messages sent while the gateway is down) under it.');
    f.username = text('Username', 'username', { autocomplete: 'off' });
    f.password = field('Password', h('input', { type: 'password', name: 'mqtt-password', autocomplete: 'new-password', value: String(c.password ?? '') }),
      editing ? { hint: 'The saved password is not shown: leave the dots to keep it, type a new one, or empty the field to send none.' } : {});
    f.qos = field('QoS', select([['0', '0: at most once'], ['1', '1: at least once'], ['2', '2: exactly once']], String(c.qos ?? 1), { name: 'qos' }),
      { hint: 'With 1 or 2 a message is acknowledged only once its records are stored.' });
    const topics = h('textarea', { name: 'subTopics', rows: '3', spellcheck: 'false', class: 'topics' });
    topics.value = (c.subTopics || []).join('\n');
    f.subTopics = field('Topics (one per line)', topics, { hint: 'Topic filters to subscribe to: + matches one level, # every level below (# alone: every topic).' });
    parts.push(f.clientId.wrap, f.username.wrap, f.password.wrap, f.qos.wrap, f.subTopics.wrap);
  }
  if (type === 'GENERIC_MQTT_SERVER') {
    const anonymous = h('input', { type: 'checkbox', name: 'anonymous', checked: Boolean(c.anonymous) });
    f.anonymous = { input: anonymous };
    const hint = h('p', { class: 'hint', id: `${type}-anon-hint`, text: 'Unticked (the default), a client logs in with any username and this input\'s push token as the password; the token is shown once, when the input is created. Ticked, anyone who reaches the port can publish: the service warns about it at start.' });
    anonymous.setAttribute('aria-describedby', hint.id);
    const id = `${type}-anonymous`;
    anonymous.id = id;
    parts.push(h('div', { class: 'field wide' }, h('div', { class: 'check' }, anonymous, h('label', { for: id, text: 'Anonymous: no username or password' })), hint));
  }
  if (type === 'UDP_SERVER') {
    f.maxDataLength = number('Longest datagram (bytes)', 'maxDataLength', 1, UDP_DATA_MAX, 'A longer datagram is refused and counted, not stored. UDP is lossy: what the network drops is never seen.');
    parts.push(f.maxDataLength.wrap);
  }
  const legend = { GENERIC_MQTT: 'MQTT client', GENERIC_MQTT_SERVER: 'Built-in MQTT broker', UDP_SERVER: 'UDP server' }[type];
  const el = h('fieldset', { class: 'conn-config', 'data-type': type, hidden: true }, h('legend', { text: legend }), h('div', { class: 'grid-form' }, parts));
  const errorFields = Object.entries(f).filter(([, v]) => v.error);
  return {
    el,
    fields: f,
    clear() { for (const [, v] of errorFields) setFieldError(v, ''); },
    read() {
      // Keys the form does not show (the server's limits, RHILEX's serverName) are kept as they were.
      const out = { ...(config || {}), host: f.host.input.value.trim(), port: num(f.port.input) };
      if (type === 'GENERIC_MQTT') {
        Object.assign(out, {
          clientId: f.clientId.input.value.trim(), username: f.username.input.value, password: f.password.input.value,
          qos: Number(f.qos.input.value), subTopics: f.subTopics.input.value.split('\n').map((t) => t.trim()).filter(Boolean),
        });
      }
      if (type === 'GENERIC_MQTT_SERVER') out.anonymous = f.anonymous.input.checked;
      if (type === 'UDP_SERVER') out.maxDataLength = num(f.maxDataLength.input);
      const problems = configProblems(type, out);
      for (const [key, msg] of problems) setFieldError(f[key], msg);
      if (problems.length) { f[problems[0][0]].input.focus(); return null; }
      return out;
    },
    showServerError(msg) {
      const key = fieldOfMessage(msg);
      if (!f[key] || !f[key].error) return false;
      setFieldError(f[key], msg);
      f[key].input.focus();
      return true;
    },
  };
}

/**
 * The form. opts: inend (the input to edit; absent for a new one), onSaved(result, body) after the
 * server took it (result: the create answer with uuid and, for HTTP and the built-in broker, the token;
 * or the updated input), onClose() on Cancel.
 */
export function inputForm({ inend, onSaved, onClose }) {
  const editing = Boolean(inend);
  const title = editing ? `Edit input ${inend.name}` : 'New input';
  const name = field('Name', h('input', { type: 'text', name: 'name', autocomplete: 'off', required: true, value: editing ? inend.name : '' }));
  const typeChoices = editing && !INPUT_TYPES.some(([t]) => t === inend.type) ? [...INPUT_TYPES, [inend.type, inend.type]] : INPUT_TYPES;
  const type = field('Type', select(typeChoices, editing ? inend.type : 'HTTP', { name: 'type', disabled: editing }),
    editing ? { hint: 'The type of an input cannot change: create a new input for another.' } : {});
  const desc = field('Description', h('input', { type: 'text', name: 'description', autocomplete: 'off', value: editing ? inend.description || '' : '' }));
  const own = (t) => (editing && inend.type === t ? inend.config : undefined);
  const parts = {
    SIMULATOR: simulatorPart(own('SIMULATOR')),
    ...Object.fromEntries([...CONNECTED_TYPES].map((t) => [t, connectedPart(t, own(t), editing)])),
  };
  // Only the chosen type's fields are in the form (each part keeps what was typed in it meanwhile).
  const partHost = h('div');
  const show = () => {
    const p = parts[type.input.value];
    if (p) p.el.hidden = false;
    mount(partHost, p ? p.el : null);
  };
  type.input.addEventListener('change', show);
  show();
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'primary', text: editing ? 'Save input' : 'Create input' });
  const cancel = h('button', { type: 'button', text: 'Cancel' });
  cancel.addEventListener('click', onClose);
  const form = h('form', { class: 'attr-form input-form', 'aria-label': title, novalidate: true },
    h('h3', { text: title }),
    h('div', { class: 'grid-form' }, name.wrap, type.wrap, desc.wrap), partHost,
    status.el, h('div', { class: 'actions' }, cancel, save));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    setFieldError(name, ''); setFieldError(desc, ''); status.clear();
    for (const p of Object.values(parts)) p.clear();
    const t = type.input.value;
    const body = { name: name.input.value.trim(), type: t, description: desc.input.value.trim(), config: {} };
    if (!body.name) { setFieldError(name, 'Enter a name.'); name.input.focus(); return; }
    if (parts[t]) {
      const config = parts[t].read();
      if (!config) return;
      body.config = config;
    } else if (editing) body.config = inend.config || {};
    busy(save, async () => {
      let result;
      try {
        result = editing ? await put('inends/update', { ...body, uuid: inend.uuid }) : await post('inends/create', body);
      } catch (ex) {
        const msg = messageOf(ex);
        const shown = parts[t] && parts[t].showServerError(msg);
        const at = shown ? '' : fieldOfMessage(msg);
        if (at === 'name') { setFieldError(name, msg); name.input.focus(); } else if (at === 'description') { setFieldError(desc, msg); desc.input.focus(); } else if (!shown) status.error(msg);
        return;
      }
      notify(`Input "${body.name}" ${editing ? 'saved' : 'created'}.`, 'ok');
      onSaved(result || {}, body);
    }, status);
  });
  return form;
}
