// The Storage tab of a model: what it holds, the disk it lives on, its own retention (contract 14), its
// backup and restore (contract 15, transfers.js) and its fleet uplink state (contract 17).
import { h, mount, field, setFieldError, fmtBytes } from '../core/dom.js';
import { get, put, messageOf } from '../core/api.js';
import { statusLine, busy, notify, redrawView } from '../core/ui.js';
import { backupPanel } from '../core/transfers.js';
import { fmtTime } from '../core/time.js';
import { reloadModelAfterAction } from '../core/state.js';

const LIMITS = [
  ['maxRecords', 'Keep at most (records)', 'records'],
  ['maxBytes', 'Keep at most (bytes on disk)', 'bytes'],
  ['maxAgeHours', 'Keep for (hours)', 'hours'],
];

function limitText(v, unit) {
  return v === 0 ? 'unlimited' : `${v.toLocaleString()} ${unit}`;
}

function diskLine(disk) {
  if (!disk) return h('p', { class: 'muted', text: 'Free disk space: unknown.' });
  const used = disk.totalBytes - disk.freeBytes;
  const low = disk.reserveBytes > 0 && disk.freeBytes < disk.reserveBytes;
  return h('div', { class: 'disk' },
    h('p', {}, `Free disk: ${fmtBytes(disk.freeBytes)} of ${fmtBytes(disk.totalBytes)}`,
      disk.reserveBytes > 0 ? ` (writes stop below ${fmtBytes(disk.reserveBytes)}: [store] disk_reserve_bytes)` : ''),
    h('progress', { max: String(disk.totalBytes), value: String(used), 'aria-label': 'Disk used' }),
    low ? h('p', { class: 'status-line error', role: 'alert', text: 'Free space is below the reserve: writes are refused until space returns.' }) : null);
}

/** The fleet uplink for this model (contract 17, docs/uplink.md), from GET uplink/status. */
function uplinkPanel(status, uuid) {
  const panel = (...children) => h('section', { class: 'panel uplink', 'aria-labelledby': 'uplink-title' },
    h('h2', { id: 'uplink-title', text: 'Uplink' }), ...children);
  if (status instanceof Error) return panel(h('p', { class: 'status-line error', role: 'alert', text: `Loading the uplink state failed: ${messageOf(status)}` }));
  if (status.engine === 'off') {
    return panel(h('p', { id: 'uplink-state', text: 'Uplink off.' }),
      h('p', { class: 'hint', text: 'Set [uplink] engine = nats to ship every record to a NATS JetStream hub.' }));
  }
  const u = status.models.find((x) => x.uuid === uuid);
  if (!u) {
    return panel(h('p', { id: 'uplink-state', text: `Not shipped to ${status.servers.join(', ')}.` }),
      h('p', { class: 'hint', text: 'Only published models (those in [uplink] models, when set) are shipped.' }));
  }
  const row = (label, id, text, cls) => [h('dt', { text: label }), h('dd', { id, text, ...(cls ? { class: cls } : {}) })];
  const dropped = u.droppedRecords > 0;
  return panel(h('dl', { class: 'usage' },
    ...row('Connected', 'uplink-connected', status.connected ? `yes, to ${status.server ?? status.servers[0]}` : 'no: records wait here'),
    ...row('Lag', 'uplink-lag', `${u.lagRecords.toLocaleString()} records, ${u.lagSeconds.toFixed(1)} s`),
    ...row('Backlog', 'uplink-backlog', fmtBytes(u.backlogBytes)),
    ...row('Acknowledged', 'uplink-acked', `${u.ackedRecords.toLocaleString()} records since the start`),
    ...row('Dropped', 'uplink-dropped', dropped ? `${u.droppedRecords.toLocaleString()} records in ${u.gaps} gap(s): [uplink] backlog_max_bytes` : '0', dropped ? 'error' : '')),
  u.lastError && !status.connected ? h('p', { class: 'hint', text: `Last error: ${u.lastError}` }) : null);
}

export async function renderStorageTab(body, m) {
  mount(body, h('p', { class: 'muted', text: 'Loading…' }));
  let d;
  const uplink = get('uplink/status').catch((e) => (e instanceof Error ? e : new Error(String(e))));
  try {
    d = await get('schema/detail', { uuid: m.uuid });
  } catch (e) {
    mount(body, h('p', { class: 'status-line error', role: 'alert', text: `Loading the storage figures failed: ${messageOf(e)}` }));
    return;
  }
  const usage = d.usage
    ? h('dl', { class: 'usage' },
      h('dt', { text: 'Records' }), h('dd', { id: 'usage-records', text: d.usage.records.toLocaleString() }),
      h('dt', { text: 'On disk' }), h('dd', { id: 'usage-bytes', text: fmtBytes(d.usage.bytes) }),
      h('dt', { text: 'Oldest record' }), h('dd', { text: d.usage.oldestCreateAt ? fmtTime(Date.parse(d.usage.oldestCreateAt)) : '—' }))
    : h('p', { class: 'muted', text: 'A draft holds no data: publish the model to store records.' });
  const fields = LIMITS.map(([key, label, unit]) => {
    const own = d.retention.own[key];
    const f = field(label, h('input', { type: 'number', min: '0', step: '1', name: key, inputmode: 'numeric', value: own === null ? '' : String(own) }),
      { hint: `Empty: the [store] default. 0: unlimited. Now applied: ${limitText(d.retention.effective[key], unit)}.` });
    return { key, f };
  });
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'primary', text: 'Save retention' });
  const form = h('form', { class: 'panel retention-form', 'aria-labelledby': 'retention-title', novalidate: true },
    h('h2', { id: 'retention-title', text: 'Retention' }),
    h('p', { class: 'hint', text: d.retention.note }),
    ...fields.map(({ f }) => f.wrap), h('div', { class: 'actions' }, save), status.el);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const payload = {};
    let ok = true;
    for (const { key, f } of fields) {
      const text = f.input.value.trim();
      setFieldError(f, '');
      if (text === '') { payload[key] = null; continue; }
      const n = Number(text);
      if (!Number.isSafeInteger(n) || n < 0) { setFieldError(f, 'A whole number, 0 or more (0 = unlimited), or empty for the default.'); ok = false; continue; }
      payload[key] = n;
    }
    if (!ok) return;
    await busy(save, async () => {
      const r = await put('schema/retention', payload, { uuid: m.uuid });
      status.ok(`Saved. Applied: ${LIMITS.map(([key, , unit]) => limitText(r.effective[key], unit)).join(', ')}.`);
    }, status);
  });
  // A restore of this very model may change its attributes and figures: show them afresh, and the
  // outcome as a notice (the panel's own line goes with the old view).
  const onRestored = async (r, message) => {
    if (r.uuid !== m.uuid) return;
    await reloadModelAfterAction(m.uuid);
    notify(message, 'ok');
    redrawView();
  };
  mount(body,
    h('section', { class: 'panel', 'aria-labelledby': 'usage-title' }, h('h2', { id: 'usage-title', text: 'Usage' }), usage, diskLine(d.disk)),
    form,
    backupPanel(m, d.usage ? d.usage.records : 0, onRestored),
    uplinkPanel(await uplink, m.uuid));
}
