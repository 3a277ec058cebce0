// A small Lua code editor: a transparent <textarea> over a highlighted <pre>, with a line-number gutter.
// The wrapper scrolls; the textarea grows with its content, so the layers never drift apart.
import { h, uid } from './dom.js';

const KEYWORDS = new Set(['and', 'break', 'do', 'else', 'elseif', 'end', 'false', 'for', 'function', 'goto', 'if', 'in', 'local', 'nil', 'not', 'or', 'repeat', 'return', 'then', 'true', 'until', 'while']);
const BUILTINS = new Set(['rds', 'json', 'time', 'Throw', 'Debug', 'kv', 'data', 'string', 'math', 'table', 'ipairs', 'pairs', 'tostring', 'tonumber', 'type', 'print', 'error', 'pcall', 'select', 'next', 'Actions', 'Success', 'Failed', 'args']);

/** Tokenize Lua into [class, text] pairs (class '' for plain text). */
export function tokenize(src) {
  const out = [];
  let i = 0;
  const n = src.length;
  let plain = '';
  const flush = () => { if (plain) { out.push(['', plain]); plain = ''; } };
  const longBracket = (at) => {
    const m = /^\[(=*)\[/.exec(src.slice(at, at + 64));
    if (!m) return -1;
    const close = `]${m[1]}]`;
    const end = src.indexOf(close, at + m[0].length);
    return end < 0 ? n : end + close.length;
  };
  while (i < n) {
    const c = src[i];
    if (c === '-' && src[i + 1] === '-') {
      flush();
      let end = src[i + 2] === '[' ? longBracket(i + 2) : -1;
      if (end < 0) { end = src.indexOf('\n', i); if (end < 0) end = n; }
      out.push(['c', src.slice(i, end)]);
      i = end;
    } else if (c === '"' || c === "'") {
      flush();
      let j = i + 1;
      while (j < n && src[j] !== c && src[j] !== '\n') j += src[j] === '\\' ? 2 : 1;
      j = Math.min(n, j + 1);
      out.push(['s', src.slice(i, j)]);
      i = j;
    } else if (c === '[' && (src[i + 1] === '[' || src[i + 1] === '=')) {
      const end = longBracket(i);
      if (end < 0) { plain += c; i++; continue; }
      flush();
      out.push(['s', src.slice(i, end)]);
      i = end;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(src[i + 1] || ''))) {
      flush();
      const m = /^(0[xX][0-9a-fA-F.]+([pP][+-]?\d+)?|\d*\.?\d+([eE][+-]?\d+)?\.?\d*)/.exec(src.slice(i));
      const t = m ? m[0] : c;
      out.push(['n', t]);
      i += t.length;
    } else if (/[A-Za-z_]/.test(c)) {
      const m = /^[A-Za-z_][A-Za-z0-9_]*/.exec(src.slice(i, i + 256));
      const w = m[0];
      const prev = src[i - 1];
      if (KEYWORDS.has(w)) { flush(); out.push(['k', w]); } else if (BUILTINS.has(w) && prev !== '.' && prev !== ':') { flush(); out.push(['b', w]); } else if (prev === ':' || prev === '.') { flush(); out.push(['f', w]); } else plain += w;
      i += w.length;
    } else {
      plain += c;
      i++;
    }
  }
  flush();
  return out;
}

/** Highlighted lines: an array of DocumentFragments-to-be, built as element arrays (no innerHTML). */
function highlightLines(src) {
  const lines = [[]];
  for (const [cls, text] of tokenize(src)) {
    const parts = text.split('\n');
    parts.forEach((p, idx) => {
      if (idx > 0) lines.push([]);
      if (p) lines[lines.length - 1].push(cls ? h('span', { class: `t-${cls}`, text: p }) : document.createTextNode(p));
    });
  }
  return lines;
}

/**
 * Create an editor. opts: label (accessible name), value, rows (minimum visible), id.
 * Returns {el, textarea, getValue, setValue, setError(line|null, message), onInput(fn)}.
 */
export function createEditor(opts = {}) {
  const id = opts.id || uid('code');
  const gutter = h('div', { class: 'gutter', 'aria-hidden': 'true' });
  const pre = h('pre', { class: 'hl', 'aria-hidden': 'true' });
  const helpId = `${id}-help`;
  const ta = h('textarea', {
    id, class: 'code-input', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
    'aria-describedby': helpId, 'aria-multiline': 'true',
  });
  const help = h('p', { id: helpId, class: 'sr-only', text: 'Lua code. Tab inserts two spaces; press Escape, then Tab, to move on.' });
  const errBox = h('p', { class: 'code-error', role: 'alert', hidden: true });
  const stack = h('div', { class: 'code-stack' }, pre, ta);
  const scroller = h('div', { class: 'code-scroll' }, gutter, stack);
  scroller.style.setProperty('--rows', String(opts.rows || 12));
  const el = h('div', { class: 'code-editor' }, help, scroller, errBox);
  let errLine = null;
  const listeners = [];
  let escaped = false;

  function paint() {
    const src = ta.value;
    const lines = highlightLines(src);
    pre.replaceChildren(...lines.map((parts, i) => h('span', { class: `ln${errLine === i + 1 ? ' err' : ''}` }, parts.length ? parts : '\u200b')));
    const frag = document.createDocumentFragment();
    for (let i = 1; i <= lines.length; i++) frag.appendChild(h('span', { class: errLine === i ? 'err' : '', text: String(i) }));
    gutter.replaceChildren(frag);
  }

  let raf = 0;
  const schedule = () => { if (!raf) raf = requestAnimationFrame(() => { raf = 0; paint(); }); };

  ta.addEventListener('input', () => {
    if (errLine !== null) setError(null);
    schedule();
    for (const fn of listeners) fn(ta.value);
  });
  ta.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { escaped = true; return; }
    if (e.key === 'Tab' && !escaped && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.preventDefault();
      const { selectionStart: s, selectionEnd: t, value } = ta;
      if (e.shiftKey) {
        const ls = value.lastIndexOf('\n', s - 1) + 1;
        if (value.startsWith('  ', ls)) { ta.setRangeText('', ls, ls + 2, 'preserve'); ta.setSelectionRange(Math.max(ls, s - 2), Math.max(ls, t - 2)); }
      } else {
        ta.setRangeText('  ', s, t, 'end');
      }
      ta.dispatchEvent(new Event('input'));
      return;
    }
    if (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey) {
      // keep the indentation of the current line
      const { selectionStart: s, selectionEnd: t, value } = ta;
      const ls = value.lastIndexOf('\n', s - 1) + 1;
      const indent = /^[ \t]*/.exec(value.slice(ls, s))[0];
      e.preventDefault();
      ta.setRangeText(`\n${indent}`, s, t, 'end');
      ta.dispatchEvent(new Event('input'));
      return;
    }
    escaped = false;
  });
  ta.addEventListener('blur', () => { escaped = false; });

  function setValue(v) { ta.value = v || ''; setError(null); paint(); }
  function setError(line, message) {
    errLine = Number.isInteger(line) && line > 0 ? line : null;
    if (message) {
      errBox.textContent = errLine ? `Line ${errLine}: ${message}` : message;
      errBox.hidden = false;
      if (errLine) ta.setAttribute('aria-invalid', 'true');
    } else {
      errBox.textContent = '';
      errBox.hidden = true;
      ta.removeAttribute('aria-invalid');
    }
    paint();
    if (errLine) {
      const target = gutter.children[errLine - 1];
      if (target) {
        const top = target.offsetTop;
        if (top < scroller.scrollTop || top > scroller.scrollTop + scroller.clientHeight - 24) scroller.scrollTop = Math.max(0, top - 48);
      }
    }
  }
  /** Put the caret at the start of a line. */
  function goToLine(line) {
    const lines = ta.value.split('\n');
    let pos = 0;
    for (let i = 0; i < Math.min(line - 1, lines.length); i++) pos += lines[i].length + 1;
    ta.focus();
    ta.setSelectionRange(pos, pos);
  }
  setValue(opts.value || '');
  return { el, textarea: ta, errorBox: errBox, getValue: () => ta.value, setValue, setError, goToLine, onInput: (fn) => listeners.push(fn) };
}
