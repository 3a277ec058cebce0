// The rule editor: name, inputs, what `args` holds for their types, the Lua scripts with samples (reading
// args as those inputs hand it over), validation at the script line, the dry run panel, and the saved
// rule's stats and last errors.
import { h, mount, field, setFieldError, select, uid, fmtValue } from '../core/dom.js';
import { get, post, put, messageOf, listOf } from '../core/api.js';
import { notify, confirmDialog, statusLine, busy } from '../core/ui.js';
import { state, findModel } from '../core/state.js';
import { createEditor } from '../core/editor.js';
import { fmtTime } from '../core/time.js';
import { sampleForModel, rhilexSample, DEFAULT_SUCCESS, DEFAULT_FAILED } from '../core/samples.js';
import { dryRunPanel } from './dry-run.js';
import { ARGS_HELP, typeLabel } from './input-types.js';

export async function renderRuleEditor(ctx, ruleId) {
  const { main, query } = ctx;
  mount(main, h('p', { class: 'muted', text: 'Loading…' }));
  const [inRes, ruleRes] = await Promise.allSettled([get('inends/list'), ruleId ? get('rules/detail', { uuid: ruleId }) : Promise.resolve(null)]);
  if (ruleRes.status === 'rejected') {
    mount(main, h('div', { class: 'panel' }, h('h1', { text: 'Rule' }), h('p', { class: 'status-line error', role: 'alert', text: `Loading rule ${ruleId} failed: ${messageOf(ruleRes.reason)}` }), h('a', { href: '#/rules', text: 'Back to inputs & rules' })));
    return;
  }
  const inends = inRes.status === 'fulfilled' ? listOf(inRes.value) : [];
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
  const typeOf = Object.fromEntries(inends.map((i) => [i.uuid, i.type]));
  /** The types of the checked inputs, in the order listed (every known type when none is checked). */
  const chosenTypes = () => [...new Set([...sources.querySelectorAll('.src-box')].filter((b) => b.checked).map((b) => typeOf[b.value]).filter(Boolean))];
  // What args holds, for the types of the checked inputs (all types while none is checked).
  const argsList = h('dl');
  const sampleNote = h('p', { class: 'hint' });
  const argsHelp = h('details', { class: 'args-help', id: 'args-help' }, h('summary', { text: 'What args holds for these inputs' }), argsList, sampleNote);
  const sampleType = () => chosenTypes()[0];
  const showArgsHelp = () => {
    const checked = chosenTypes();
    const types = checked.length ? checked : Object.keys(ARGS_HELP);
    mount(argsList, types.map((t) => {
      const help = ARGS_HELP[t] || { shape: '(not known to this page)', note: '' };
      return [h('dt', { text: `${typeLabel(t)} (${t})` }), h('dd', {}, h('code', { class: 'wrap', text: help.shape }), h('p', { class: 'hint', text: help.note }))];
    }));
    if (checked.some((t) => t !== 'HTTP' && t !== 'SIMULATOR')) argsHelp.open = true;
    sampleNote.textContent = sampleType()
      ? `The samples read args as the first checked input, a ${typeLabel(sampleType())} input, hands it over.`
      : 'The samples read args as an HTTP push input hands it over; check an input to read it as that input does.';
  };
  sources.addEventListener('change', () => { showArgsHelp(); tryPanel.refillIfUntouched(); });

  const actions = createEditor({ id: 'code-actions', rows: 22, value: rule ? rule.actions : sampleForModel(preModel, typeOf[[...chosen][0]]) });
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
  insertSample.addEventListener('click', () => replaceWith(sampleForModel(findModel(sampleModel.value), sampleType())));
  insertRhilex.addEventListener('click', () => replaceWith(rhilexSample(sampleModel.value, sampleType())));
  showArgsHelp();

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
    argsHelp,
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
    inputType: () => sampleType(),
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
    const whenText = typeof when === 'number' ? fmtTime(when) : (when || '');
    const msg = e.error || e.message || e.msg || JSON.stringify(e);
    return `${whenText ? `${whenText} — ` : ''}${e.line ? `line ${e.line}: ` : ''}${msg}`;
  };
  mount(box,
    h('dl', { class: 'kv stats' }, [...scalars, ...objects.flatMap(([k, o]) => Object.entries(o).filter(([, v]) => v === null || typeof v !== 'object').map(([k2, v]) => [`${k}.${k2}`, v]))]
      .map(([k, v]) => [h('dt', { text: LABELS[k] || k }), h('dd', { text: fmtValue(typeof v === 'number' && /At$|Ms$/.test(k) && v > 1e12 ? fmtTime(v) : v) })])),
    lists.map(([k, arr]) => h('div', { class: 'stat-list' }, h('h3', { text: LABELS[k] || k }),
      arr.length ? h('ol', { class: 'errors' }, arr.map((e) => h('li', { text: fmtItem(e) }))) : h('p', { class: 'muted', text: 'None.' }))));
}
