// Quick request (the exact query URLs with the secret encoded, copy buttons, curl lines with the secret
// in the X-Api-Secret header; the secret masked on screen until Show) and the Script tab.
import { h, mount, select, copyButton, uid } from '../core/dom.js';
import { getSecret, messageOf } from '../core/api.js';
import { statusLine, busy } from '../core/ui.js';
import { queryData } from '../data/data.js';
import { savePreview, sampleForModel } from '../core/samples.js';
import { tokenize } from '../core/editor.js';

const shq = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;

/** What the URL and curl lines show in place of the secret until the user presses Show. */
const SECRET_MASK = '••••••••';

/**
 * The two query URLs of the specification for a model: `list` and `last` with `secretInUrl` (the secret
 * URL-encoded, or the mask) in `secrets` (for HMIs that can only be given a URL), `listBare` and
 * `lastBare` without it (for clients that send the X-Api-Secret header).
 */
export function queryUrls(base, uuid, secretInUrl, p = {}) {
  const enc = encodeURIComponent;
  const withSecret = `&secrets=${secretInUrl}`;
  const paging = `&current=${enc(p.current ?? 1)}&size=${enc(p.size ?? 25)}&order=${enc(p.order ?? 'desc')}`;
  const select = p.select ? `&select=${enc(p.select)}` : '';
  const listPath = `${base}/api/v1/datacenter/queryDataList?uuid=${enc(uuid)}`;
  const lastPath = `${base}/api/v1/datacenter/queryLastData?uuid=${enc(uuid)}`;
  return {
    list: `${listPath}${withSecret}${paging}${select}`,
    last: `${lastPath}${withSecret}${select}`,
    listBare: `${listPath}${paging}${select}`,
    lastBare: `${lastPath}${select}`,
  };
}

const curlLine = (bareUrl, secretText) => `curl -s -H 'User-Agent: edge-datacenter' -H ${shq(`X-Api-Secret: ${secretText}`)} ${shq(bareUrl)}`;

/**
 * A URL line and a curl line with their Copy buttons. The lines on screen may hold the mask; the buttons
 * copy the real lines, which live only here, never in the page's markup.
 */
function urlBlock(title, id) {
  const out = h('output', { id, class: 'url' });
  const curlOut = h('output', { id: `${id}-curl`, class: 'url' });
  let real = { url: '', curl: '' };
  const copy = copyButton(() => real.url, 'Copy URL', `Copy the ${title} URL`);
  const copyCurl = copyButton(() => real.curl, 'Copy curl', `Copy the ${title} curl line`);
  return {
    el: h('div', { class: 'url-block' },
      h('h3', { text: title }),
      h('div', { class: 'url-row' }, out, copy),
      h('div', { class: 'url-row' }, curlOut, copyCurl)),
    set(realLines, shownLines) {
      real = realLines;
      out.textContent = shownLines.url;
      curlOut.textContent = shownLines.curl;
    },
  };
}

export function renderRequestTab(ctx, body, m) {
  const base = location.origin;
  const cur = h('input', { id: 'qr-current', type: 'number', min: '1', value: '1', class: 'narrow' });
  const size = h('input', { id: 'qr-size', type: 'number', min: '1', max: '1000', value: '25', class: 'narrow' });
  const order = select([['desc', 'desc (newest first)'], ['asc', 'asc (oldest first)']], 'desc', { id: 'qr-order' });
  const sel = h('input', { id: 'qr-select', type: 'text', placeholder: 'all fields', autocomplete: 'off', spellcheck: 'false', list: 'qr-fields' });
  const fieldsList = h('datalist', { id: 'qr-fields' }, ['id', 'create_at', ...m.attributes.map((a) => a.name)].map((f) => h('option', { value: f })));
  const secretOut = h('input', { id: 'qr-secret', type: 'password', readOnly: true, class: 'mono' });
  const showSecret = h('button', { type: 'button', class: 'small', 'aria-pressed': 'false', text: 'Show' });
  // One toggle for the field and the lines: someone sharing their screen shows no secret by accident.
  showSecret.addEventListener('click', () => {
    const show = secretOut.type === 'password';
    secretOut.type = show ? 'text' : 'password';
    showSecret.setAttribute('aria-pressed', String(show));
    showSecret.textContent = show ? 'Hide' : 'Show';
    update();
  });
  const reloadSecret = h('button', { type: 'button', class: 'small', text: 'Reload secret' });
  const status = statusLine();
  const listBlock = urlBlock('History: queryDataList', 'qr-list-url');
  const lastBlock = urlBlock('Latest record: queryLastData', 'qr-last-url');
  const tryList = h('button', { type: 'button', text: 'Send history request' });
  const tryLast = h('button', { type: 'button', text: 'Send latest request' });
  const response = h('pre', { class: 'json', id: 'qr-response', tabindex: '0', 'aria-label': 'Response' });
  let secret = '';

  const update = () => {
    const p = { current: cur.value || 1, size: size.value || 25, order: order.value, select: sel.value.trim() };
    const linesFor = (secretInUrl, secretText) => {
      const u = queryUrls(base, m.uuid, secretInUrl, p);
      return { list: { url: u.list, curl: curlLine(u.listBare, secretText) }, last: { url: u.last, curl: curlLine(u.lastBare, secretText) } };
    };
    const realLines = linesFor(encodeURIComponent(secret), secret);
    const shown = secretOut.type === 'password' ? linesFor(SECRET_MASK, SECRET_MASK) : realLines;
    listBlock.set(realLines.list, shown.list);
    lastBlock.set(realLines.last, shown.last);
  };
  for (const el of [cur, size, order, sel]) el.addEventListener('input', update);

  async function loadSecret(force) {
    try {
      secret = await getSecret(force);
      secretOut.value = secret;
      status.clear();
    } catch (e) {
      status.error(`Reading the secret failed: ${messageOf(e)}`);
    }
    update();
  }
  reloadSecret.addEventListener('click', () => busy(reloadSecret, () => loadSecret(true)));

  const send = (path, params) => async () => {
    response.textContent = 'Sending…';
    try {
      const d = await queryData(path, params());
      response.textContent = JSON.stringify({ code: 200, msg: 'Success', data: d }, null, 2);
    } catch (e) {
      response.textContent = `Error: ${messageOf(e)}`;
    }
  };
  const common = () => ({ uuid: m.uuid, select: sel.value.trim() || undefined });
  tryList.addEventListener('click', () => busy(tryList, send('datacenter/queryDataList', () => ({ ...common(), current: cur.value || 1, size: size.value || 25, order: order.value }))));
  tryLast.addEventListener('click', () => busy(tryLast, send('datacenter/queryLastData', common)));

  mount(body, h('section', { class: 'panel', 'aria-labelledby': 'qr-title' },
    h('h2', { id: 'qr-title', text: 'Quick request' }),
    h('p', { class: 'hint', text: 'The two read endpoints for dashboards and HMIs. The secret ([main] dataschema_secrets) goes in the header X-Api-Secret, as the curl lines and this page send it. For an HMI that can only be given a URL, the URLs carry it in the query parameter secrets, URL-encoded; proxies and logs keep URLs, so prefer the header. The lines show the secret masked until you press Show; the Copy buttons always copy it in full.' }),
    m.published ? null : h('p', { class: 'status-line error', text: 'This model is a draft: these requests answer 409 until it is published.' }),
    h('div', { class: 'controls' },
      h('div', { class: 'field inline' }, h('label', { for: 'qr-secret', text: 'Secret' }), secretOut, showSecret, reloadSecret)),
    h('div', { class: 'controls' },
      h('div', { class: 'field inline' }, h('label', { for: 'qr-current', text: 'current' }), cur),
      h('div', { class: 'field inline' }, h('label', { for: 'qr-size', text: 'size' }), size),
      h('div', { class: 'field inline' }, h('label', { for: 'qr-order', text: 'order' }), order),
      h('div', { class: 'field inline' }, h('label', { for: 'qr-select', text: 'select' }), sel, fieldsList)),
    status.el,
    listBlock.el, lastBlock.el,
    h('div', { class: 'actions left' }, tryList, tryLast),
    response));
  update();
  loadSecret(false);
}

/** Read-only highlighted Lua. */
export function luaBlock(src, label) {
  return h('pre', { class: 'hl static', tabindex: '0', 'aria-label': label },
    tokenize(src).map(([cls, text]) => (cls ? h('span', { class: `t-${cls}`, text }) : text)));
}

export function renderScriptTab(ctx, body, m) {
  const sample = sampleForModel(m);
  const preview = savePreview(m);
  const useId = uid('use');
  mount(body, h('section', { class: 'panel', 'aria-labelledby': 'script-title' },
    h('h2', { id: 'script-title', text: 'Storing data from a script' }),
    h('p', {}, 'Rule scripts store records with ', h('code', { text: 'rds:Save(uuid, table)' }), ' (a new record) or ',
      h('code', { text: 'rds:UpdateLast(uuid, table)' }), ' (merge into the latest record). Both return nil, or an error text to report with ', h('code', { text: 'Throw(err)' }), '.'),
    m.published ? null : h('p', { class: 'status-line error', text: 'Publish the model first: rds:Save fails on a draft model.' }),
    h('h3', { text: 'Preview' }),
    h('div', { class: 'url-row' }, luaBlock(preview, 'rds:Save preview'), copyButton(preview, 'Copy', 'Copy the rds:Save preview')),
    h('h3', { text: 'Sample rule for this model' }),
    h('p', { class: 'hint', text: 'Takes a JSON array of {tag, value} rows (as Modbus inputs send), maps tags to attributes and saves one record.' }),
    luaBlock(sample, 'Sample rule script'),
    h('div', { class: 'actions left' },
      copyButton(sample, 'Copy sample', 'Copy the sample rule'),
      h('a', { id: useId, class: 'button primary', href: `#/rules/new?schema=${encodeURIComponent(m.uuid)}`, text: 'Create a rule with this sample' }))));
}

// ---------------------------------------------------------------------------------------------------
// Example payloads that fit a model: values inside each attribute's bounds, of its type, so the first
// push (the curl line of a new input, the simulator's defaults, the dry-run box) is stored, not refused.

const bounded = (a) => (a.type === 'INTEGER' || a.type === 'FLOAT') && a.rule && Number(a.rule.max) > Number(a.rule.min);
/** Decimal places a FLOAT keeps (its rule's round), 2 when it keeps them all. */
const decimalsOf = (a) => (a.type === 'INTEGER' ? 0 : a.rule && a.rule.round > 0 ? Math.min(6, a.rule.round) : 2);
const roundTo = (v, d) => Math.round(v * 10 ** d) / 10 ** d;

/** One value the attribute accepts: the middle of its bounds, else its default (or a plain sample). */
export function exampleValue(a) {
  const rule = a.rule || {};
  switch (a.type) {
    case 'INTEGER':
    case 'FLOAT': {
      if (bounded(a)) {
        const mid = (Number(rule.min) + Number(rule.max)) / 2;
        const v = a.type === 'INTEGER' ? Math.round(mid) : roundTo(mid, decimalsOf(a));
        return Math.min(Number(rule.max), Math.max(Number(rule.min), v));
      }
      if (typeof rule.defaultValue === 'number' && rule.defaultValue !== 0) return rule.defaultValue;
      return a.type === 'INTEGER' ? 1 : 21.5;
    }
    case 'BOOL': return true;
    case 'GEO': return '31.2304,121.4737';
    default: {
      const s = 'dev-1';
      return rule.max > 0 ? s.slice(0, rule.max) : s;
    }
  }
}

/** `[{tag, value}]` as the sample rules read it: one row per attribute, or per tag in `tags`. */
export function examplePayload(model, tags) {
  const attrs = model ? model.attributes : [];
  const names = tags && tags.length ? tags : attrs.map((a) => a.name);
  const numeric = attrs.filter(bounded);
  return JSON.stringify(names.map((tag) => {
    const a = attrs.find((x) => x.name === tag);
    // A tag the rule reads that is no attribute (RHILEX's t1..t3, averaged into temp): a value that fits
    // the first bounded number, so whatever the rule computes from it stays in range.
    return { tag, value: a ? exampleValue(a) : numeric.length ? exampleValue(numeric[0]) : 20 };
  }));
}

/** The tags a rule reads from the usual `schemaData[row.tag] = row.value` table, in order of use. */
export function tagsReadBy(script) {
  const seen = [];
  const re = /schemaData(?:\.([A-Za-z_][A-Za-z0-9_]*)|\[\s*"([^"]*)"\s*\])/g;
  for (let m = re.exec(script || ''); m; m = re.exec(script || '')) {
    const name = m[1] || m[2];
    if (!seen.includes(name)) seen.push(name);
  }
  return seen;
}

/** Simulator tags for the model's numbers: their bounds (0..100 when unbounded), whole numbers for INTEGER. */
export function simulatorTags(model) {
  return (model ? model.attributes : []).filter((a) => a.type === 'INTEGER' || a.type === 'FLOAT').map((a) => {
    const lo = bounded(a) ? Number(a.rule.min) : 0;
    const hi = bounded(a) ? Number(a.rule.max) : 100;
    return { tag: a.name, min: lo, max: hi, decimals: decimalsOf(a) };
  });
}
