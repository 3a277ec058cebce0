/**
 * checkRecord (models/record-check.ts) of a save whose record is a flat object read by scanFlatObject,
 * without the object: the values go straight into the model's order. It answers only where checkRecord
 * would store the record, with the same values; for anything else (an unknown or reserved key, a value
 * of the wrong type or out of range, an unpublished model, an update) it answers -1, and checkRecord of
 * the parsed object gives the refusal, so every message stays as it was.
 */
import { isGeo, roundDecimals } from '../../models/record-check.js';
import type { Attribute, DataModel } from '../../models/types.js';
import { FLAT_FALSE, FLAT_NUMBER, FLAT_STRING, FLAT_TRUE, type FlatScan } from './flat-json.js';

const REFUSED = Symbol('refused');

/** The attribute each key position named in the last record checked (any model: a guess, always verified). */
const lastAttributeOfKey: number[] = [];

/** The attribute names of a model in its order: one array per model, which the packed ops share as their shape. */
const namesOfModel = new WeakMap<DataModel, readonly string[]>();

export function attributeNames(model: DataModel): readonly string[] {
  let names = namesOfModel.get(model);
  if (names === undefined) {
    names = model.attributes.map((a) => a.name);
    namesOfModel.set(model, names);
  }
  return names;
}

/**
 * Fills values[0 .. attributes) with the checked record of `text` in model order, missing attributes at
 * their defaults; returns the bytes `rds` counts for it (keys, strings by length, other values 8), or -1.
 * `keySlots` is scratch of at least as many entries as the model has attributes.
 */
export function checkScannedSave(model: DataModel, text: string, scan: FlatScan, values: unknown[], keySlots: number[]): number {
  if (!model.published) return -1;
  const { attributes } = model;
  for (let a = 0; a < attributes.length; a++) keySlots[a] = -1;
  for (let k = 0; k < scan.keys; k++) {
    // Devices send their keys in the same order each time: the attribute the last record's k-th key named first.
    const guess = lastAttributeOfKey[k];
    const a = guess !== undefined && guess < attributes.length && scan.keyIs(text, k, attributes[guess].name) ? guess : attributeOf(attributes, text, scan, k);
    if (a < 0) return -1;
    lastAttributeOfKey[k] = a;
    keySlots[a] = k;
  }
  let bytes = 0;
  for (let a = 0; a < attributes.length; a++) {
    const attribute = attributes[a];
    const k = keySlots[a];
    const value = k < 0 ? attribute.rule.defaultValue : checkedValue(attribute, text, scan, k);
    if (value === REFUSED) return -1;
    values[a] = value;
    bytes += attribute.name.length + (typeof value === 'string' ? value.length : 8);
  }
  return bytes;
}

/**
 * The attribute key `k` names; -1 for a key no attribute has. The store's own `id` and `create_at`, which
 * checkRecord refuses, are among those: no attribute may take either name (attribute-input.ts).
 */
function attributeOf(attributes: readonly Attribute[], text: string, scan: FlatScan, k: number): number {
  for (let a = 0; a < attributes.length; a++) {
    const name = attributes[a].name;
    if (scan.keyIs(text, k, name)) return a;
  }
  return -1;
}

/** checkValue of the scanned value, where it accepts it; REFUSED where it would refuse or convert otherwise. */
function checkedValue(attribute: Attribute, text: string, scan: FlatScan, k: number): unknown {
  const { rule } = attribute;
  const kind = scan.kind[k];
  switch (attribute.type) {
    case 'INTEGER':
    case 'FLOAT': {
      if (kind !== FLAT_NUMBER) return REFUSED;
      let stored = scan.number[k];
      if (attribute.type === 'INTEGER') {
        // At most 15 digits: an integer is a safe one.
        if (!Number.isInteger(stored)) return REFUSED;
      } else if (rule.round > 0) {
        stored = roundDecimals(stored, rule.round);
      }
      if (rule.max > rule.min && (stored < rule.min || stored > rule.max)) return REFUSED;
      return stored === 0 ? 0 : stored;
    }
    case 'BOOL':
      return kind === FLAT_TRUE ? true : kind === FLAT_FALSE ? false : REFUSED;
    case 'STRING': {
      if (kind !== FLAT_STRING) return REFUSED;
      // ASCII: a byte a character.
      const length = scan.valueEnd[k] - scan.valueStart[k];
      return rule.max > 0 && length > rule.max ? REFUSED : text.slice(scan.valueStart[k], scan.valueEnd[k]);
    }
    case 'GEO': {
      if (kind !== FLAT_STRING) return REFUSED;
      const value = text.slice(scan.valueStart[k], scan.valueEnd[k]);
      return isGeo(value) ? value : REFUSED;
    }
    default:
      return REFUSED;
  }
}
