// Backup, restore and import (contract 15) in the browser: a model's backup downloaded, a backup file
// restored (asking first when it replaces a model that exists), an export file imported into a model.
// Uploads go with the admin token in the Authorization header (api.js uploadFile), never in a URL.
import { receive, saveAs } from './download.js';
import { h, fmtBytes, uid } from './dom.js';
import { get, rawFetch, uploadFile, messageOf } from './api.js';
import { confirmDialog, statusLine } from './ui.js';
import { findModel, loadModelsAfterAction } from './state.js';

const BACKUP_FORMAT = 'edge-datacenter-backup/1';
/** The header line of a backup is read from the file's start to show what a restore replaces. */
const HEADER_BYTES_MAX = 1024 * 1024;

/** A file picker with its label, a progress bar, a status line and a Cancel button for one upload. */
function uploadControls(label, accept, name, action) {
  const id = uid(name);
  const input = h('input', { type: 'file', id, name, accept });
  const progress = h('progress', { max: '1', value: '0', hidden: true, 'aria-label': `${action} progress` });
  const cancel = h('button', { type: 'button', text: `Cancel ${action.toLowerCase()}`, hidden: true });
  const status = statusLine();
  let abort = null;
  cancel.addEventListener('click', () => { if (abort) abort.abort(); });
  return {
    input, progress, cancel, status,
    field: h('div', { class: 'field inline' }, h('label', { for: id, text: label }), input),
    /** Runs one upload of `file`: progress while it is sent, then "the gateway is writing". */
    async send(path, params, file) {
      const what = action;
      abort = new AbortController();
      progress.hidden = false;
      progress.max = Math.max(1, file.size);
      progress.value = 0;
      cancel.hidden = false;
      status.info(`${what}: sending ${fmtBytes(file.size)}…`);
      try {
        return await uploadFile(path, params, file, {
          signal: abort.signal,
          onProgress(sent, total) {
            progress.max = Math.max(1, total);
            progress.value = sent;
            if (sent < total) status.info(`${what}: sent ${fmtBytes(sent)} of ${fmtBytes(total)} (${Math.floor((100 * sent) / total)} %)…`);
            else { progress.removeAttribute('value'); status.info(`${what}: all ${fmtBytes(total)} sent; the gateway is storing the records…`); }
          },
        });
      } finally {
        abort = null;
        cancel.hidden = true;
        progress.hidden = true;
      }
    },
  };
}

/** The failure of a restore or import as the user should read it: the server names the line; a 4xx changed nothing. */
function failure(what, e) {
  if (e && e.name === 'AbortError') return `${what} cancelled: nothing was changed.`;
  const unchanged = e && e.status >= 400 && e.status < 500 ? ' Nothing was changed.' : '';
  const msg = messageOf(e);
  return `${what} failed: ${msg}${msg.endsWith('.') ? '' : '.'}${unchanged}`;
}

/** The backup's header line ({format, model, records}), or null when the file does not start with one. */
async function readBackupHeader(file) {
  const head = await file.slice(0, HEADER_BYTES_MAX).text();
  const end = head.indexOf('\n');
  try {
    const header = JSON.parse(end < 0 ? head : head.slice(0, end));
    return header && header.format === BACKUP_FORMAT && header.model && typeof header.model.uuid === 'string' ? header : null;
  } catch {
    return null;
  }
}

/**
 * Asks before a restore replaces a model that exists (naming it, its records and the backup's); the
 * user types the model's name when it holds records. Resolves whether to go on and with `replace`.
 */
async function confirmRestore(header, file) {
  const existing = header ? findModel(header.model.uuid) : undefined;
  if (!existing) return { go: true, replace: false };
  let records = 0;
  try { records = (await get('schema/detail', { uuid: existing.uuid })).usage?.records ?? 0; } catch { /* shown as 0 */ }
  const go = await confirmDialog({
    title: `Replace "${existing.name}" with the backup?`,
    body: [
      h('p', {}, 'The backup ', h('strong', { text: file.name }), ` holds model ${header.model.uuid} with ${header.records} record${header.records === 1 ? '' : 's'}. `,
        'That model exists here: restoring ', h('strong', { text: `replaces it and its ${records} stored record${records === 1 ? '' : 's'}` }),
        ' with the backup\'s attributes and records. It cannot be undone.'),
      h('p', { text: 'Take a backup of the current data first if you may need it.' }),
    ],
    confirmLabel: 'Replace with the backup', danger: true,
    ...(records > 0 ? { typeToConfirm: existing.name } : {}),
  });
  return { go, replace: true };
}

/**
 * The "Backup and restore" panel of a model (Storage tab): download its backup, restore one from a file.
 * `onRestored(result, message)` runs after a successful restore.
 */
export function backupPanel(m, records, onRestored) {
  const backupBtn = h('button', { type: 'button', class: 'primary', id: 'backup', text: 'Download backup', disabled: !m.published });
  const backupStatus = statusLine();
  backupBtn.addEventListener('click', () => downloadBackup(m, records, backupBtn, backupStatus));
  return h('section', { class: 'panel transfers', 'aria-labelledby': 'backup-title' },
    h('h2', { id: 'backup-title', text: 'Backup and restore' }),
    h('p', { class: 'hint', text: 'A backup is one file with the model (its attributes) and every record with its id and time. Restoring it brings back exactly that, here or on another gateway.' }),
    m.published ? null : h('p', { class: 'muted', text: 'A draft holds no records: publish the model to back it up.' }),
    h('div', { class: 'actions left' }, backupBtn), backupStatus.el,
    restoreForm(onRestored));
}

/** The restore control alone: on the Storage tab, and on the home page for a model that is not here yet. */
export function restoreForm(onRestored) {
  const c = uploadControls('Backup file', '.jsonl,.ndjson,.json,application/x-ndjson', 'restore-file', 'Restore');
  const go = h('button', { type: 'submit', text: 'Restore…', id: 'restore' });
  const form = h('form', { class: 'controls restore-form', 'aria-label': 'Restore a backup', novalidate: true }, c.field, go, c.cancel, c.progress);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const file = c.input.files && c.input.files[0];
    if (!file) { c.status.error('Choose a backup file first (a .backup.jsonl from "Download backup").'); c.input.focus(); return; }
    go.disabled = true;
    try {
      const header = await readBackupHeader(file);
      const { go: ok, replace } = await confirmRestore(header, file);
      if (!ok) { c.status.info('Restore not started: nothing was changed.'); return; }
      const r = await c.send('datacenter/restore', replace ? { replace: 'true' } : undefined, file);
      await loadModelsAfterAction();
      const message = `Restored ${r.records} record${r.records === 1 ? '' : 's'} into model "${r.name}" (${r.uuid}); the next record gets id ${r.nextId}.`;
      c.status.ok(message);
      c.input.value = '';
      if (onRestored) onRestored(r, message);
    } catch (ex) {
      c.status.error(failure('Restore', ex));
    } finally {
      go.disabled = false;
    }
  });
  return h('div', { class: 'restore' }, form, c.status.el);
}

/** The Data tab's import section: rows of an export file (CSV or JSON Lines) appended with new ids. */
export function importSection(m, onImported) {
  const fmtId = uid('import-format');
  const format = h('select', { id: fmtId, name: 'import-format' },
    h('option', { value: 'csv', text: 'CSV' }), h('option', { value: 'jsonl', text: 'JSON Lines' }));
  const c = uploadControls('File to import', '.csv,.jsonl,.ndjson,text/csv,application/x-ndjson', 'import-file', 'Import');
  c.input.addEventListener('change', () => {
    const f = c.input.files && c.input.files[0];
    if (f && /\.(jsonl|ndjson)$/i.test(f.name)) format.value = 'jsonl';
    else if (f && /\.csv$/i.test(f.name)) format.value = 'csv';
  });
  const go = h('button', { type: 'submit', class: 'primary', id: 'import', text: 'Import' });
  const form = h('form', { class: 'controls', 'aria-label': 'Import rows', novalidate: true },
    h('div', { class: 'field inline' }, h('label', { for: fmtId, text: 'File format' }), format), c.field, go, c.cancel, c.progress);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const file = c.input.files && c.input.files[0];
    if (!file) { c.status.error('Choose a CSV or JSON Lines file first (the format of an export).'); c.input.focus(); return; }
    go.disabled = true;
    try {
      const r = await c.send('datacenter/importData', { uuid: m.uuid, format: format.value }, file);
      c.status.ok(r.imported === 0
        ? `${file.name} holds no rows: nothing was imported.`
        : `Imported ${r.imported} row${r.imported === 1 ? '' : 's'} from ${file.name} as records ${r.firstId}–${r.lastId}.`);
      c.input.value = '';
      if (onImported) onImported(r);
    } catch (ex) {
      c.status.error(failure('Import', ex));
    } finally {
      go.disabled = false;
    }
  });
  return h('section', { class: 'panel', 'aria-labelledby': 'import-title' },
    h('h2', { id: 'import-title', text: 'Import' }),
    h('p', { class: 'hint' }, 'Appends the rows of an export file (CSV with its header row, or JSON Lines) with new ids, keeping their ',
      h('code', { text: 'create_at' }), ', which must not be older than the newest record. All or nothing: a bad row is reported with its line and nothing is added. While it runs, writes to the model are refused with 503 (senders retry).'),
    form, c.status.el);
}

/** Streams the backup into a download (a blob: URL: a plain link could not carry the admin token). */
async function downloadBackup(m, records, btn, status) {
  btn.disabled = true;
  status.info('Starting the backup…');
  try {
    const res = await rawFetch('datacenter/backup', { uuid: m.uuid });
    const { chunks, bytes, lines } = await receive(res, (p) =>
      status.info(`Receiving the backup: ${fmtBytes(p.bytes)}, ${Math.max(0, p.lines - 1)} of about ${records} records…`));
    const cd = res.headers.get('Content-Disposition') || '';
    const match = /filename="?([^";]+)"?/i.exec(cd);
    const filename = saveAs(chunks, 'application/x-ndjson', match ? match[1] : `${m.uuid}.backup.jsonl`);
    const n = Math.max(0, lines - 1);
    status.ok(`Backed up ${n} record${n === 1 ? '' : 's'} (${fmtBytes(bytes)}) to ${filename}.`);
  } catch (e) {
    status.error(`Backup failed: ${messageOf(e)}`);
  } finally {
    btn.disabled = !m.published;
  }
}
