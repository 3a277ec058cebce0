// Entry point: sign-in, layout, the models tree and the hash router.
import { h, mount } from './core/dom.js';
import { get, getToken, setToken, setUnauthorizedHandler, messageOf, clearCaches } from './core/api.js';
import { notify } from './core/ui.js';
import { state, loadModels, onModelsChanged } from './core/state.js';
import { renderModelsHome, renderNewModel } from './models/models.js';
import { renderModel } from './models/model-page.js';
import { renderRulesPage } from './rules/rules.js';
import { renderRuleEditor } from './rules/rule-editor.js';
import { stopHealth, watchHealth } from './health.js';

const app = document.getElementById('app');
const nav = document.getElementById('nav');
const signoutBtn = document.getElementById('signout');

/** Cleanup of the current view (timers, observers). */
let viewCleanup = null;
let shell = null;

window.addEventListener('unhandledrejection', (e) => {
  const r = e.reason;
  if (r && r.name === 'AbortError') return;
  notify(`Unexpected error: ${messageOf(r)}`, 'error');
});

setUnauthorizedHandler((err) => {
  setToken('');
  clearCaches();
  showSignIn(`Signed out: ${err.message}`);
});

signoutBtn.addEventListener('click', () => {
  setToken('');
  clearCaches();
  showSignIn('Signed out.');
});

// ---------------------------------------------------------------------------------------------------
// Sign in

function showSignIn(message) {
  if (viewCleanup) { viewCleanup(); viewCleanup = null; }
  stopHealth();
  shell = null;
  nav.hidden = true;
  signoutBtn.hidden = true;
  const input = h('input', { id: 'token', type: 'password', name: 'token', autocomplete: 'current-password', required: true, spellcheck: 'false' });
  const err = h('p', { class: 'field-error', id: 'token-err', role: 'alert', hidden: !message });
  if (message) err.textContent = message;
  input.setAttribute('aria-describedby', 'token-hint token-err');
  const btn = h('button', { type: 'submit', class: 'primary', text: 'Sign in' });
  const form = h('form', { class: 'signin panel', 'aria-labelledby': 'signin-title', novalidate: true },
    h('h1', { id: 'signin-title', text: 'Sign in' }),
    h('p', { id: 'token-hint', class: 'hint', text: 'Enter the admin token of this gateway: [main] admin_token in the configuration file, or, when the service generated it at its first start, in <data_dir>/credentials.ini on the gateway (the start-up line names the file; the token itself is never printed). It is kept for this browser tab only.' }),
    // For password managers only, which file a saved password under a user name; hidden (not rendered, not
    // in the accessibility tree): the admin token has no user, so there is nothing to show or label.
    h('input', { type: 'text', name: 'username', autocomplete: 'username', value: 'admin', hidden: true }),
    h('div', { class: 'field' }, h('label', { for: 'token', text: 'Admin token' }), input),
    err,
    h('div', { class: 'actions' }, btn));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const t = input.value.trim();
    if (!t) { err.textContent = 'Enter the admin token.'; err.hidden = false; input.setAttribute('aria-invalid', 'true'); input.focus(); return; }
    btn.disabled = true;
    try {
      await get('schema/list', undefined, { tokenOverride: t });
      setToken(t);
      start();
    } catch (ex) {
      err.textContent = ex.status === 401 ? `Wrong token: ${ex.message}` : messageOf(ex);
      err.hidden = false;
      input.setAttribute('aria-invalid', 'true');
      input.select();
      input.focus();
    } finally {
      btn.disabled = false;
    }
  });
  mount(app, h('main', { id: 'main', class: 'signin-wrap' }, form));
  input.focus();
}

// ---------------------------------------------------------------------------------------------------
// Shell: sidebar tree + main

function buildShell() {
  const tree = h('ul', { class: 'tree', id: 'model-tree' });
  const side = h('aside', { class: 'sidebar', 'aria-labelledby': 'side-title' },
    h('div', { class: 'side-head' },
      h('h2', { id: 'side-title', text: 'Data models' }),
      h('a', { class: 'button small primary', href: '#/models/new', text: '+ New model' })),
    tree);
  const main = h('main', { id: 'main', class: 'main', tabindex: '-1' });
  mount(app, h('div', { class: 'layout' }, side, main));
  shell = { tree, main };
  onModelsChanged(renderTree);
  renderTree();
}

const expanded = new Map();

function renderTree() {
  if (!shell) return;
  const cur = currentModelId();
  if (!state.loaded) { mount(shell.tree, h('li', { class: 'muted', text: 'Loading…' })); return; }
  if (!state.models.length) {
    mount(shell.tree, h('li', { class: 'muted' }, 'No data model yet. ', h('a', { href: '#/models/new', text: 'Create one' }), '.'));
    return;
  }
  const focusedHref = document.activeElement && shell.tree.contains(document.activeElement) ? document.activeElement.getAttribute('href') : null;
  mount(shell.tree, state.models.map((m) => {
    const open = expanded.has(m.uuid) ? expanded.get(m.uuid) : true;
    const listId = `attrs-${m.uuid}`;
    const toggle = h('button', {
      type: 'button', class: 'twisty', 'aria-expanded': String(open), 'aria-controls': listId,
      'aria-label': `${open ? 'Hide' : 'Show'} attributes of ${m.name}`, text: open ? '▾' : '▸',
    });
    toggle.addEventListener('click', () => {
      expanded.set(m.uuid, !open);
      renderTree();
      const again = shell && shell.tree.querySelector(`[aria-controls="${listId}"]`);
      if (again) again.focus();
    });
    const link = h('a', { href: `#/models/${m.uuid}`, class: 'model-link', 'aria-current': m.uuid === cur ? 'page' : false },
      h('span', { class: 'model-name', text: m.name }),
      h('span', { class: `badge ${m.published ? 'pub' : 'draft'}`, text: m.published ? 'published' : 'draft' }));
    const attrs = h('ul', { id: listId, class: 'attr-list', hidden: !open, 'aria-label': `Attributes of ${m.name}` },
      m.attributes.length
        ? m.attributes.map((a) => h('li', { title: a.description || a.label || '' },
          h('span', { class: 'attr-name', text: a.name }), ' ',
          h('span', { class: 'attr-type', text: a.type }),
          a.unit ? h('span', { class: 'attr-unit', text: ` ${a.unit}` }) : null))
        : h('li', { class: 'muted', text: 'no attributes' }));
    return h('li', { class: 'tree-item' }, h('div', { class: 'tree-row' }, toggle, link), attrs);
  }));
  if (focusedHref) {
    const again = [...shell.tree.querySelectorAll('a')].find((a) => a.getAttribute('href') === focusedHref);
    if (again) again.focus();
  }
}

function currentModelId() {
  const m = /^#\/models\/([A-Z0-9]+)/.exec(location.hash);
  return m && m[1] !== 'new' ? m[1] : '';
}

// ---------------------------------------------------------------------------------------------------
// Router

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/models';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean);
  return { parts, query: new URLSearchParams(qs || '') };
}

async function route() {
  if (!getToken()) { showSignIn(); return; }
  if (!shell) buildShell();
  if (viewCleanup) { viewCleanup(); viewCleanup = null; }
  const { parts, query } = parseHash();
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.nav === (parts[0] || 'models')) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  renderTree();
  const main = shell.main;
  const ctx = { main, query, setCleanup: (fn) => { viewCleanup = fn; } };
  try {
    if (parts[0] === 'rules') {
      if (parts[1]) await renderRuleEditor(ctx, parts[1] === 'new' ? '' : parts[1]);
      else await renderRulesPage(ctx);
    } else if (parts[0] === 'models' && parts[1] === 'new') {
      await renderNewModel(ctx);
    } else if (parts[0] === 'models' && parts[1]) {
      await renderModel(ctx, parts[1], parts[2] || 'attributes');
    } else {
      renderModelsHome(ctx);
    }
  } catch (e) {
    mount(main, h('div', { class: 'panel' }, h('h1', { text: 'Something went wrong' }), h('p', { role: 'alert', class: 'status-line error', text: messageOf(e) })));
  }
  if (!document.activeElement || document.activeElement === document.body) main.focus({ preventScroll: true });
}

async function start() {
  nav.hidden = false;
  signoutBtn.hidden = false;
  watchHealth();
  state.loaded = false;
  shell = null;
  buildShell();
  try {
    await loadModels();
  } catch (e) {
    if (e.status === 401) return;
    notify(`Loading the data models failed: ${messageOf(e)}`, 'error');
  }
  await route();
  const main = document.getElementById('main');
  if (main) main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', () => { if (getToken()) route(); });

if (getToken()) start(); else showSignIn();
