// Small DOM helpers. No innerHTML with data: every text goes in through text nodes.

let idSeq = 0;
/** A unique element id with a readable prefix. */
export function uid(prefix = 'id') {
  idSeq += 1;
  return `${prefix}-${idSeq}`;
}

/**
 * Create an element. attrs: `class`, `text`, `on: {event: fn}`, `dataset`, properties (value, checked,
 * disabled, hidden...) and any other attribute (aria-*, role, for, type...). Children: nodes, strings, arrays,
 * null/false (skipped).
 * @param {string} tag
 * @param {Record<string, any>} [attrs]
 * @param {...any} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'on') for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value' || k === 'checked' || k === 'selected' || k === 'disabled' || k === 'hidden' || k === 'open' || k === 'readOnly' || k === 'required' || k === 'multiple') el[k] = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

/** Append children (nodes, strings, nested arrays; null/false skipped). */
export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

/** Replace all children of el. */
export function mount(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A labelled form control: returns {wrap, input, error}. The error element is tied by aria-describedby. */
export function field(label, input, opts = {}) {
  const id = input.id || uid('f');
  input.id = id;
  const err = h('p', { class: 'field-error', id: `${id}-err`, hidden: true, 'aria-live': 'polite' });
  const hint = opts.hint ? h('p', { class: 'hint', id: `${id}-hint`, text: opts.hint }) : null;
  input.setAttribute('aria-describedby', [hint ? hint.id : '', err.id].filter(Boolean).join(' '));
  const wrap = h('div', { class: `field${opts.class ? ` ${opts.class}` : ''}` },
    h('label', { for: id, text: label }), input, hint, err);
  return { wrap, input, error: err };
}

/** Show or clear the error of a field made by field(). */
export function setFieldError(f, msg) {
  if (msg) {
    f.error.textContent = msg;
    f.error.hidden = false;
    f.input.setAttribute('aria-invalid', 'true');
  } else {
    f.error.textContent = '';
    f.error.hidden = true;
    f.input.removeAttribute('aria-invalid');
  }
}

/** A <select> from [value, label] pairs. */
export function select(options, value, attrs = {}) {
  return h('select', attrs, options.map(([v, l]) => h('option', { value: v, selected: String(v) === String(value), text: l })));
}

/** Human byte count. */
export function fmtBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KB`;
  if (n < 1024 ** 3) return `${(n / 1024 ** 2).toFixed(1)} MB`;
  return `${(n / 1024 ** 3).toFixed(1)} GB`;
}

/** Copy text to the clipboard; falls back to execCommand where the async API is missing (plain http on a LAN). */
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch { /* fall through */ }
  const ta = h('textarea', { class: 'offscreen', readOnly: true, 'aria-hidden': 'true' });
  ta.value = text;
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand('copy'); } catch { ok = false; }
  ta.remove();
  return ok;
}

/** A "Copy" button for a text getter; announces the result in its own label for a moment. */
export function copyButton(getText, label = 'Copy', accessibleName) {
  const btn = h('button', { type: 'button', class: 'small', 'aria-label': accessibleName || label, text: label });
  btn.addEventListener('click', async () => {
    const ok = await copyText(typeof getText === 'function' ? getText() : getText);
    btn.textContent = ok ? 'Copied' : 'Copy failed: select and copy by hand';
    setTimeout(() => { btn.textContent = label; }, 1500);
  });
  return btn;
}

/** Render a record value as text. */
export function fmtValue(v) {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}
