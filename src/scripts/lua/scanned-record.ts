/**
 * checkRecord (models/record-check.ts) of a save whose record is a scan (flat-json.ts: a J2T text, or the
 * table rds:Save was given), without the record object: each value goes through checkValue straight into
 * the model's order. It answers only where checkRecord would store the record, with the same values; for
 * anything else (an unknown key, a refused value, an unpublished model) it answers -1, and checkRecord of
 * the record object gives the refusal, so every message stays as it was. Where checkRecord stores, the
 * order of the keys makes no difference, so a scan's order may be any.
 */
import { checkValue, RefusedValue } from '../../models/record-check.js';
import type { Attribute, DataModel } from '../../models/types.js';
import type { FlatScan } from './flat-json.js';

/** What rds counts against an invocation's stored bytes for one field: its name, and a string by its length or any other value as 8. */
export function fieldBytes(name: string, value: unknown): number {
  return name.length + (typeof value === 'string' ? value.length : 8);
}

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
 * Fills values[0 .. attributes) with the checked record of `scan` in model order, missing attributes at
 * their defaults; returns the bytes `rds` counts for it (fieldBytes of each), or -1.
 * `keySlots` is scratch of at least as many entries as the model has attributes.
 */
export function checkScannedSave(model: DataModel, scan: FlatScan, values: unknown[], keySlots: number[]): number {
  if (!model.published) return -1;
  const { attributes } = model;
  for (let a = 0; a < attributes.length; a++) keySlots[a] = -1;
  for (let k = 0; k < scan.keys; k++) {
    // Devices send their keys in the same order each time, and rules build the same table each time.
    const guess = lastAttributeOfKey[k];
    const a = guess !== undefined && guess < attributes.length && scan.keyIs(k, attributes[guess].name) ? guess : attributeOf(attributes, scan, k);
    if (a < 0 || keySlots[a] >= 0) return -1;
    lastAttributeOfKey[k] = a;
    keySlots[a] = k;
  }
  let bytes = 0;
  for (let a = 0; a < attributes.length; a++) {
    const attribute = attributes[a];
    const k = keySlots[a];
    const value = k < 0 ? attribute.rule.defaultValue : checkValue(attribute, scan.value(k));
    if (value instanceof RefusedValue) return -1;
    values[a] = value;
    bytes += fieldBytes(attribute.name, value);
  }
  return bytes;
}

/**
 * The attribute key `k` names; -1 for a key no attribute has. The store's own `id` and `create_at`, which
 * checkRecord refuses, are among those: no attribute may take either name (attribute-input.ts).
 */
function attributeOf(attributes: readonly Attribute[], scan: FlatScan, k: number): number {
  for (let a = 0; a < attributes.length; a++) if (scan.keyIs(k, attributes[a].name)) return a;
  return -1;
}
