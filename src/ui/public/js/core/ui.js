// Notifications, confirmation dialogs and redrawing the current view.
import { h, uid } from './dom.js';
import { messageOf } from './api.js';

/** Show a notice in the top-right live region. Errors stay until dismissed; others fade after a while. */
export function notify(message, kind = 'info') {
  const box = document.getElementById('notices');
  const close = h('button', { type: 'button', class: 'ghost small', 'aria-label': 'Dismiss notification', text: '×' });
  const n = h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' },
    h('span', { text: message }), close);
  close.addEventListener('click', () => n.remove());
  box.appendChild(n);
  if (kind !== 'error') setTimeout(() => n.remove(), 4000);
  while (box.children.length > 5) box.firstElementChild.remove();
  return n;
}

/** Notify an error from a failed call, with the server's message. */
export function notifyError(e, what) {
  if (e && e.name === 'AbortError') return;
  notify(what ? `${what}: ${messageOf(e)}` : messageOf(e), 'error');
}

/** Draw the current view again, from the cached state: after an action that changed what it shows. */
export function redrawView() { window.dispatchEvent(new HashChangeEvent('hashchange')); }

/** An inline status/error line inside a panel. */
export function statusLine() {
  const el = h('p', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
  return {
    el,
    ok(msg) { el.className = 'status-line ok'; el.textContent = msg; el.setAttribute('role', 'status'); },
    error(msg) { el.className = 'status-line error'; el.textContent = msg; el.setAttribute('role', 'alert'); },
    info(msg) { el.className = 'status-line'; el.textContent = msg; el.setAttribute('role', 'status'); },
    clear() { el.className = 'status-line'; el.textContent = ''; },
  };
}

/**
 * A modal confirmation (<dialog>). Resolves true on confirm.
 * opts: title, body (nodes or text), confirmLabel, danger, typeToConfirm (string the user must type),
 * action (async fn run on confirm; its error is shown in the dialog and keeps it open), other ({label, run}:
 * a button that closes the dialog and runs something else instead).
 */
export function confirmDialog(opts) {
  return new Promise((resolve) => {
    const titleId = uid('dlg');
    const bodyId = uid('dlgb');
    const err = h('p', { class: 'status-line error', role: 'alert', hidden: true });
    let typed = null;
    let typedField = null;
    const okBtn = h('button', { type: 'submit', class: opts.danger ? 'danger' : 'primary', text: opts.confirmLabel || 'Confirm' });
    if (opts.typeToConfirm !== undefined) {
      const tid = uid('type');
      typed = h('input', { id: tid, type: 'text', autocomplete: 'off', spellcheck: 'false' });
      typedField = h('div', { class: 'field' },
        h('label', { for: tid }, 'Type ', h('strong', { text: opts.typeToConfirm }), ' to confirm'), typed);
      okBtn.disabled = true;
      typed.addEventListener('input', () => { okBtn.disabled = typed.value !== opts.typeToConfirm; });
    }
    const cancel = h('button', { type: 'button', text: opts.cancelLabel || 'Cancel' });
    // `other`: {label, run}, a way out that does something else instead (e.g. "Export now" before a clear).
    const other = opts.other ? h('button', { type: 'button', text: opts.other.label }) : null;
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleId, text: opts.title }),
      h('div', { id: bodyId, class: 'dlg-body' }, opts.body),
      typedField, err,
      h('div', { class: 'actions' }, cancel, other, okBtn));
    const dlg = h('dialog', { 'aria-labelledby': titleId, 'aria-describedby': bodyId, class: opts.danger ? 'danger-dlg' : '' }, form);
    document.body.appendChild(dlg);
    const opener = document.activeElement;
    let done = false;
    const finish = (v) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      if (opener && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      resolve(v);
    };
    cancel.addEventListener('click', () => finish(false));
    if (other) other.addEventListener('click', () => { finish(false); opts.other.run(); });
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); finish(false); });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (typed && typed.value !== opts.typeToConfirm) return;
      if (opts.action) {
        okBtn.disabled = true;
        okBtn.setAttribute('aria-busy', 'true');
        err.hidden = true;
        try {
          await opts.action();
        } catch (ex) {
          err.textContent = messageOf(ex);
          err.hidden = false;
          okBtn.disabled = false;
          okBtn.removeAttribute('aria-busy');
          return;
        }
      }
      finish(true);
    });
    dlg.showModal();
    (typed || okBtn).focus();
  });
}

/** Run an async action from a button: disables it while busy, reports failures with the server message. */
export async function busy(btn, fn, errorTarget) {
  btn.disabled = true;
  btn.setAttribute('aria-busy', 'true');
  try {
    return await fn();
  } catch (e) {
    if (e && e.name === 'AbortError') return undefined;
    if (errorTarget) errorTarget.error(messageOf(e));
    else notifyError(e);
    return undefined;
  } finally {
    btn.disabled = false;
    btn.removeAttribute('aria-busy');
  }
}
