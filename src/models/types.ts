/**
 * Data models ("data schemas" in RHILEX) and their attributes ("properties"), as contract section 3.
 * These shapes are plain data: they travel to the script workers with structured clone.
 */

/** The store refuses logs with more fields (MODEL_FIELDS_MAX); refuse the attribute, not the publish. */
export const ATTRIBUTES_MAX = 1024;

export const ATTRIBUTE_TYPES = ['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO'] as const;
export type AttributeType = (typeof ATTRIBUTE_TYPES)[number];

export const ATTRIBUTE_RW = ['R', 'W', 'RW'] as const;
export type AttributeRw = (typeof ATTRIBUTE_RW)[number];

export interface AttributeRule {
  /** Typed: number for INTEGER/FLOAT, boolean for BOOL, string for STRING/GEO. */
  defaultValue: number | boolean | string;
  /** Bounds INTEGER/FLOAT only when max > min. For STRING, max > 0 is the longest length in bytes. */
  min: number;
  max: number;
  trueLabel: string;
  falseLabel: string;
  /** FLOAT: decimal places kept when stored; 0 leaves values as they are. */
  round: number;
}

export interface Attribute {
  uuid: string;
  schemaId: string;
  name: string;
  label: string;
  type: AttributeType;
  rw: AttributeRw;
  unit: string;
  description: string;
  rule: AttributeRule;
}

/** A model's own retention limits (contract 14): a non-negative integer (0 = unlimited) or null (the `[store]` default). */
export interface ModelRetention {
  maxRecords: number | null;
  maxBytes: number | null;
  maxAgeHours: number | null;
}

export interface DataModel {
  uuid: string;
  name: string;
  description: string;
  published: boolean;
  createdAtMs: number;
  /** In creation order; this is the model order of record keys and of the stored value arrays. */
  attributes: Attribute[];
  /** The model's own retention limits (contract 14); absent: the `[store]` defaults. */
  retention?: ModelRetention;
}

/** The outcome of checking a script's table against a model. `error` is what `rds:*` returns to Lua. */
export type RecordCheck =
  | { ok: true; record: Record<string, unknown> }
  | { ok: false; error: string };
