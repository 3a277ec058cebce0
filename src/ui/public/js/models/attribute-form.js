// The add/edit attribute form: fields that follow the type, the checks of contract section 3 in the
// browser first, and the server's message shown at the field it names.
import { h, field, setFieldError, select, uid } from '../core/dom.js';
import { post, put, messageOf } from '../core/api.js';
import { notify, statusLine, busy } from '../core/ui.js';

const TYPES = ['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO'];
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** a: the attribute to edit, or null for a new one. */
export function attributeForm(m, a, onSaved, onClose) {
  const r = (a && a.rule) || {};
  const f = {
    name: field('Name', h('input', { type: 'text', name: 'name', value: a ? a.name : '', autocomplete: 'off', spellcheck: 'false', required: true }),
      { hint: 'Letters, digits and _, not starting with a digit; at most 64; not id or create_at. This is the key scripts use.' }),
    label: field('Label', h('input', { type: 'text', name: 'label', value: a ? a.label || '' : '', autocomplete: 'off' }), { hint: 'Display text; the name when left empty.' }),
    type: field('Type', select(TYPES.map((t) => [t, t]), a ? a.type : 'FLOAT', { name: 'type' })),
    rw: field('Access', select([['R', 'R (read)'], ['W', 'W (write)'], ['RW', 'RW (read/write)']], a ? a.rw || 'R' : 'R', { name: 'rw' })),
    unit: field('Unit', h('input', { type: 'text', name: 'unit', value: a ? a.unit || '' : '', autocomplete: 'off' })),
    description: field('Description', h('input', { type: 'text', name: 'description', value: a ? a.description || '' : '', autocomplete: 'off' })),
    defaultValue: field('Default value', h('input', { type: 'text', name: 'defaultValue', value: r.defaultValue === undefined ? '' : String(r.defaultValue), autocomplete: 'off' })),
    defaultBool: field('Default (true or false)', select([['false', 'false'], ['true', 'true']], String(r.defaultValue === true || r.defaultValue === 'true'), { name: 'defaultBool' })),
    min: field('Minimum', h('input', { type: 'number', name: 'min', step: 'any', value: r.min === undefined ? '0' : String(r.min) })),
    max: field('Maximum', h('input', { type: 'number', name: 'max', step: 'any', value: r.max === undefined ? '0' : String(r.max) }), { hint: 'Bounds apply only when maximum > minimum.' }),
    maxLen: field('Longest length (bytes)', h('input', { type: 'number', name: 'maxLen', min: '0', step: '1', value: r.max === undefined ? '0' : String(r.max) }), { hint: '0: no limit.' }),
    round: field('Decimal places', h('input', { type: 'number', name: 'round', min: '0', max: '15', step: '1', value: r.round === undefined ? '0' : String(r.round) }), { hint: 'Values are rounded when stored; 0 keeps them as they are.' }),
    trueLabel: field('Label for true', h('input', { type: 'text', name: 'trueLabel', value: r.trueLabel || '', autocomplete: 'off' })),
    falseLabel: field('Label for false', h('input', { type: 'text', name: 'falseLabel', value: r.falseLabel || '', autocomplete: 'off' })),
  };
  if (a && m.published) {
    // Stored values are kept by name and type: those two stay while the model is published.
    f.name.input.readOnly = true;
    f.type.input.disabled = true;
  }
  const status = statusLine();
  const save = h('button', { type: 'submit', class: 'primary', text: a ? 'Save attribute' : 'Add attribute' });
  const cancel = h('button', { type: 'button', text: 'Cancel' });
  cancel.addEventListener('click', onClose);
  const titleId = uid('attrform');
  const form = h('form', { class: 'attr-form', 'aria-labelledby': titleId, novalidate: true },
    h('h3', { id: titleId, text: a ? `Edit attribute ${a.name}` : 'New attribute' }),
    h('div', { class: 'grid-form' }, Object.values(f).map((x) => x.wrap)),
    status.el,
    h('div', { class: 'actions' }, cancel, save));
  form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); onClose(); } });

  const syncType = () => {
    const t = f.type.input.value;
    f.defaultValue.wrap.hidden = t === 'BOOL';
    f.defaultBool.wrap.hidden = t !== 'BOOL';
    f.min.wrap.hidden = f.max.wrap.hidden = !(t === 'INTEGER' || t === 'FLOAT');
    f.maxLen.wrap.hidden = t !== 'STRING';
    f.round.wrap.hidden = t !== 'FLOAT';
    f.trueLabel.wrap.hidden = f.falseLabel.wrap.hidden = t !== 'BOOL';
    f.defaultValue.input.placeholder = t === 'GEO' ? 'lat,lng e.g. 0,0' : (t === 'STRING' ? '' : '0');
    f.defaultValue.input.inputMode = t === 'INTEGER' ? 'numeric' : (t === 'FLOAT' ? 'decimal' : 'text');
  };
  f.type.input.addEventListener('change', syncType);
  syncType();

  /** Client-side checks, mirroring contract section 3. Returns {field: message}. */
  function check(p) {
    const errs = {};
    if (!p.name) errs.name = 'Enter a name.';
    else if (!NAME_RE.test(p.name)) errs.name = 'Use letters, digits and _ only, not starting with a digit, at most 64 characters.';
    else if (p.name === 'id' || p.name === 'create_at') errs.name = `"${p.name}" is reserved for every record.`;
    const t = p.type;
    const dv = p.rule.defaultValue;
    if (t === 'INTEGER' && !Number.isInteger(dv)) errs.defaultValue = 'The default of an INTEGER must be a whole number.';
    if (t === 'FLOAT' && !Number.isFinite(dv)) errs.defaultValue = 'The default of a FLOAT must be a number.';
    if (t === 'GEO' && !/^\s*-?\d+(\.\d+)?\s*,\s*-?\d+(\.\d+)?\s*$/.test(String(dv))) errs.defaultValue = 'A GEO default is "lat,lng", e.g. 0,0.';
    if ((t === 'INTEGER' || t === 'FLOAT') && !Number.isFinite(p.rule.min)) errs.min = 'Enter a number.';
    if ((t === 'INTEGER' || t === 'FLOAT') && !Number.isFinite(p.rule.max)) errs.max = 'Enter a number.';
    if (t === 'STRING' && (!Number.isInteger(p.rule.max) || p.rule.max < 0)) errs.maxLen = 'Enter a whole number, 0 or more.';
    if (t === 'FLOAT' && (!Number.isInteger(p.rule.round) || p.rule.round < 0)) errs.round = 'Enter a whole number, 0 or more.';
    return errs;
  }

  function payload() {
    const t = f.type.input.value;
    const dvRaw = f.defaultValue.input.value.trim();
    let dv;
    if (t === 'BOOL') dv = f.defaultBool.input.value === 'true';
    else if (t === 'INTEGER' || t === 'FLOAT') dv = dvRaw === '' ? 0 : Number(dvRaw);
    else if (t === 'GEO') dv = dvRaw === '' ? '0,0' : dvRaw;
    else dv = f.defaultValue.input.value;
    const num = (x) => (x.input.value.trim() === '' ? 0 : Number(x.input.value));
    const name = f.name.input.value.trim();
    return {
      schemaId: m.uuid,
      name,
      label: f.label.input.value.trim() || name,
      type: t,
      rw: f.rw.input.value,
      unit: f.unit.input.value.trim(),
      description: f.description.input.value.trim(),
      rule: {
        defaultValue: dv,
        min: t === 'INTEGER' || t === 'FLOAT' ? num(f.min) : 0,
        max: t === 'INTEGER' || t === 'FLOAT' ? num(f.max) : (t === 'STRING' ? num(f.maxLen) : 0),
        trueLabel: t === 'BOOL' ? f.trueLabel.input.value.trim() : '',
        falseLabel: t === 'BOOL' ? f.falseLabel.input.value.trim() : '',
        round: t === 'FLOAT' ? num(f.round) : 0,
      },
    };
  }

  /** Which field a server message names (contract: the message names the field). */
  function fieldOfMessage(msg) {
    const t = f.type.input.value;
    const order = [['defaultValue', t === 'BOOL' ? 'defaultBool' : 'defaultValue'], ['trueLabel', 'trueLabel'], ['falseLabel', 'falseLabel'],
      ['round', 'round'], ['min', 'min'], ['max', t === 'STRING' ? 'maxLen' : 'max'], ['label', 'label'], ['unit', 'unit'],
      ['description', 'description'], ['type', 'type'], ['rw', 'rw'], ['name', 'name']];
    for (const [word, key] of order) {
      if (new RegExp(`(^|[^A-Za-z])(rule\\.)?${word}([^A-Za-z]|$)`, 'i').test(msg)) return key;
    }
    if (/default/i.test(msg)) return t === 'BOOL' ? 'defaultBool' : 'defaultValue';
    if (/attribute|already exists|duplicate|reserved/i.test(msg)) return 'name';
    return null;
  }

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    for (const x of Object.values(f)) setFieldError(x, '');
    status.clear();
    const p = payload();
    const errs = check(p);
    const keys = Object.keys(errs);
    if (keys.length) {
      for (const k of keys) setFieldError(f[k], errs[k]);
      f[keys[0]].input.focus();
      return;
    }
    busy(save, async () => {
      try {
        if (a) await put('schema/properties/update', { ...p, uuid: a.uuid });
        else await post('schema/properties/create', p);
      } catch (ex) {
        const k = fieldOfMessage(ex.message);
        if (k && f[k] && !f[k].wrap.hidden) { setFieldError(f[k], ex.message); f[k].input.focus(); } else status.error(messageOf(ex));
        return;
      }
      notify(a ? `Attribute "${p.name}" saved.` : `Attribute "${p.name}" added.`, 'ok');
      await onSaved();
      const again = document.getElementById('add-attr');
      if (again) again.focus();
    }, status);
  });
  return form;
}
