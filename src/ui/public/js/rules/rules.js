// The Inputs & rules page: the Inputs panel (inputs.js), the rules list, and the health of both
// (inends/stats, rules/stats, with the connection of MQTT and UDP inputs) refreshed every 5 seconds. The rule editor is rule-editor.js.
import { h, mount } from '../core/dom.js';
import { get, del, messageOf, listOf } from '../core/api.js';
import { confirmDialog } from '../core/ui.js';
import { fmtTime } from '../core/time.js';
import { inputsPanel } from './inputs.js';
import { connectionBlock } from './input-types.js';

const when = (ms) => (typeof ms === 'number' ? fmtTime(ms) : 'never');

/** The health line of an input or a rule: last payload, counts, queue, last error (the error in full on hover). */
function healthCell(parts, lastError, connection = null) {
  return h('div', { class: 'health' },
    connection,
    h('span', { text: parts.join(' · ') }),
    lastError ? h('span', { class: 'health-error', title: lastError.message, text: `Last error ${when(lastError.atMs)}: ${lastError.message}` }) : null);
}

export async function renderRulesPage(ctx) {
  const { main } = ctx;
  mount(main, h('p', { class: 'muted', text: 'Loading inputs and rules…' }));
  const [inRes, ruRes] = await Promise.allSettled([get('inends/list'), get('rules/list')]);
  const inends = inRes.status === 'fulfilled' ? listOf(inRes.value) : [];
  const rules = ruRes.status === 'fulfilled' ? listOf(ruRes.value) : [];
  const inName = Object.fromEntries(inends.map((i) => [i.uuid, i.name]));
  const inputHealth = new Map();
  const ruleHealth = new Map();

  /** Fills the health cells: inends/stats per input, rules/stats per rule (queued: the sum over its inputs). */
  async function loadHealth() {
    const inStats = new Map();
    await Promise.all([...inputHealth.keys()].map(async (uuid) => {
      try { inStats.set(uuid, await get('inends/stats', { uuid })); } catch { /* gone meanwhile */ }
    }));
    for (const [uuid, cell] of inputHealth) {
      const st = inStats.get(uuid);
      if (!st) continue;
      // MQTT and UDP inputs add their connection (state since when, last error) and message counters;
      // their own `stored` counter replaces the payload count, so "stored" is said once.
      const conn = connectionBlock(st);
      mount(cell, healthCell([`Last payload ${when(st.lastPayloadAtMs)}`, conn ? null : `${st.accepted} stored`, `${st.failed} failed`, `${st.queued} queued`].filter(Boolean), st.lastError, conn));
    }
    await Promise.all([...ruleHealth].map(async ([uuid, { cell, rule }]) => {
      let st;
      try { st = await get('rules/stats', { uuid }); } catch { return; }
      const queued = (rule.fromSource || []).reduce((n, id) => n + (inStats.get(id) ? inStats.get(id).queued : 0), 0);
      const last = st.lastErrors && st.lastErrors.length ? st.lastErrors[st.lastErrors.length - 1] : null;
      mount(cell, healthCell([`Last run ${when(st.lastRunAtMs)}`, `${st.successes} ok`, `${st.failures} failed`, `${queued} queued`], last));
    }));
  }

  const inputs = inputsPanel({ inends, rules, healthCells: inputHealth, refreshHealth: loadHealth, reload: () => renderRulesPage(ctx) });

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
    inputs.createdBox,
    inputs.section,
    h('section', { class: 'panel', 'aria-labelledby': 'rules-title' },
      h('div', { class: 'panel-head' }, h('h2', { id: 'rules-title', text: 'Rules' }), h('a', { class: 'button primary', id: 'new-rule', href: '#/rules/new', text: '+ New rule' })),
      h('div', { class: 'table-wrap' }, rulesTable)));
  loadHealth();
  const timer = setInterval(() => { if (!document.hidden) loadHealth(); }, 5000);
  if (ctx.setCleanup) ctx.setCleanup(() => clearInterval(timer));
}
