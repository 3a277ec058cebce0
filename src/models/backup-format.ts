/**
 * The backup file (contract section 15): NDJSON, a header line
 * `{"format":"edge-datacenter-backup/1","model":{...},"records":n}`, then one line per record
 * `{"id":..,"create_at_ms":..,<attributes>}` in id order. This module writes and checks its lines;
 * backup.ts moves them.
 */
import { InvalidArgumentError, StateError } from '../errors.js';
import type { RecordView } from '../store/base/types.js';
import { createAtDomainRule, idDomainRule } from '../store/index.js';
import { parseAttributeFields, parseModelDescription, parseModelName, requireObject } from './attribute-input.js';
import { describeValue } from '../util/messages.js';
import { isId } from './ids.js';
import { parseRetention } from './retention-input.js';
import { isGeo } from './record-check.js';
import { ATTRIBUTES_MAX, type Attribute, type DataModel } from './types.js';

export const BACKUP_FORMAT = 'edge-datacenter-backup/1';

/** The model as the header carries it: the definition with its attributes (what schema/detail and properties/list show). */
export function backupModel(model: DataModel): Record<string, unknown> {
  return {
    uuid: model.uuid,
    name: model.name,
    description: model.description,
    published: model.published,
    createdAt: new Date(model.createdAtMs).toISOString(),
    attributes: model.attributes,
    ...(model.retention === undefined ? {} : { retention: model.retention }),
  };
}

export function headerLine(model: DataModel, records: number): string {
  return `${JSON.stringify({ format: BACKUP_FORMAT, model: backupModel(model), records })}\n`;
}

/** Characters a number, boolean or null prints as at most (`-1.2345678901234567e-308`). */
const SCALAR_CHARS_MAX = 24;
/** A JSON string escapes one UTF-16 unit to at most 6 characters (`\u001f`). */
const ESCAPED_CHARS_PER_UNIT = 6;

/**
 * The record lines of a backup, a chunk at a time. Records come from the store as views
 * `{id, create_at, <attributes in model order>}`; when the first one has exactly those keys, a whole
 * chunk of them is printed by one JSON.stringify and the array punctuation and the `create_at` key
 * are rewritten into lines (the patterns `},{"id":` and `,"create_at":` cannot occur inside a JSON
 * string, whose quotes are escaped), a fifth cheaper than a line at a time. Otherwise each line is
 * written by `recordLineWriter`. The output is the same either way.
 */
export class RecordLineChunker {
  private readonly line: (view: RecordView) => string;
  private readonly keys: readonly string[];
  /** STRING and GEO attributes: the only values whose printed size is not bounded. */
  private readonly textNames: readonly string[];
  private readonly fixedChars: number;
  private batched: boolean | undefined;
  private views: RecordView[] = [];
  private text = '';
  private chars = 0;

  /** `chunkChars`: a chunk is handed out once it may hold this many characters. */
  constructor(
    model: DataModel,
    private readonly chunkChars: number,
  ) {
    this.line = recordLineWriter(model);
    this.keys = ['id', 'create_at', ...model.attributes.map((a) => a.name)];
    this.textNames = model.attributes.filter((a) => a.type === 'STRING' || a.type === 'GEO').map((a) => a.name);
    this.fixedChars = model.attributes.reduce((n, a) => n + JSON.stringify(a.name).length + 2 + SCALAR_CHARS_MAX, 40 + 2 * SCALAR_CHARS_MAX);
  }

  /** Adds a record; answers a chunk of whole lines when enough are gathered. */
  add(view: RecordView): string | undefined {
    this.batched ??= sameKeys(view, this.keys);
    if (!this.batched) {
      this.text += this.line(view);
      return this.text.length >= this.chunkChars ? this.flush() : undefined;
    }
    this.views.push(view);
    let chars = this.fixedChars;
    for (const name of this.textNames) {
      const value = view[name];
      if (typeof value === 'string') chars += ESCAPED_CHARS_PER_UNIT * value.length;
    }
    this.chars += chars;
    return this.chars >= this.chunkChars ? this.flush() : undefined;
  }

  /** The lines gathered since the last chunk ('' when none). */
  flush(): string {
    let out = this.text;
    this.text = '';
    if (this.views.length > 0) {
      const json = JSON.stringify(this.views);
      out += `${json.slice(1, -1).replaceAll('},{"id":', '}\n{"id":').replaceAll(',"create_at":', ',"create_at_ms":')}\n`;
      this.views = [];
      this.chars = 0;
    }
    return out;
  }
}

function sameKeys(view: RecordView, keys: readonly string[]): boolean {
  const own = Object.keys(view);
  return own.length === keys.length && own.every((k, i) => k === keys[i]);
}

/**
 * Writes `{"id":..,"create_at_ms":..,<attributes>}` lines for the model's records: the keys are
 * escaped once here, values by type (numbers and booleans print as JSON does, null as `null`).
 */
export function recordLineWriter(model: DataModel): (view: RecordView) => string {
  const parts = model.attributes.map((a) => ({ name: a.name, prefix: `,${JSON.stringify(a.name)}:`, text: a.type === 'STRING' || a.type === 'GEO' }));
  return (view) => {
    let line = `{"id":${view.id},"create_at_ms":${view.create_at}`;
    for (const p of parts) {
      const value = view[p.name];
      line += p.prefix + (value === null || value === undefined ? 'null' : p.text ? JSON.stringify(value) : String(value));
    }
    return `${line}}\n`;
  };
}

export interface BackupHeader {
  model: DataModel;
  records: number;
}

/** Line 1 of a backup. Errors name the line and the field. */
export function parseHeader(line: string): BackupHeader {
  const header = requireObject(parseJson(line, 1), 'line 1 (the header)');
  if (header.format !== BACKUP_FORMAT) {
    throw new InvalidArgumentError(`line 1: format must be "${BACKUP_FORMAT}", got ${describeValue(header.format)}; is this a backup file?`);
  }
  const records = header.records;
  if (typeof records !== 'number' || !Number.isSafeInteger(records) || records < 0) {
    throw new InvalidArgumentError(`line 1: records must be a non-negative integer, got ${describeValue(records)}`);
  }
  return { model: withWhere('line 1: ', () => parseBackupModel(header.model)), records };
}

/** The model definition of a header (or of a RESTORE.json marker), checked as the management API checks it. */
export function parseBackupModel(value: unknown): DataModel {
  const body = requireObject(value, 'model');
  if (!isId('SCHEMA', body.uuid)) throw new InvalidArgumentError(`model.uuid must be SCHEMA + 8 characters of [2-9A-Z], got ${describeValue(body.uuid)}`);
  const uuid = body.uuid;
  const createdAtMs = typeof body.createdAt === 'string' ? Date.parse(body.createdAt) : NaN;
  if (!Number.isFinite(createdAtMs)) throw new InvalidArgumentError(`model.createdAt must be an ISO date, got ${describeValue(body.createdAt)}`);
  if (!Array.isArray(body.attributes) || body.attributes.length === 0 || body.attributes.length > ATTRIBUTES_MAX) {
    throw new InvalidArgumentError(`model.attributes must be an array of 1 to ${ATTRIBUTES_MAX} attributes, got ${describeValue(body.attributes)}`);
  }
  const names = new Set<string>();
  const uuids = new Set<string>();
  const attributes = body.attributes.map((raw: unknown, i: number): Attribute => {
    const where = `model.attributes[${i}]`;
    const a = requireObject(raw, where);
    if (!isId('PROPER', a.uuid) || uuids.has(a.uuid)) {
      throw new InvalidArgumentError(`${where}.uuid must be a unique PROPER + 8 characters of [2-9A-Z], got ${describeValue(a.uuid)}`);
    }
    const fields = withWhere(`${where}: `, () => parseAttributeFields(a));
    if (names.has(fields.name.toLowerCase())) throw new InvalidArgumentError(`${where}.name "${fields.name}" is used twice (names are case-insensitive)`);
    names.add(fields.name.toLowerCase());
    uuids.add(a.uuid);
    return { uuid: a.uuid, schemaId: uuid, ...fields };
  });
  return {
    uuid,
    name: withWhere('model.', () => parseModelName(body.name)),
    description: withWhere('model.', () => parseModelDescription(body.description, '')),
    published: true,
    createdAtMs,
    attributes,
    // A backup written before the header carried retention restores with the [store] defaults.
    ...(body.retention === undefined || body.retention === null ? {} : { retention: withWhere('model.retention: ', () => parseRetention(body.retention)) }),
  };
}

/** RESTORE.json is ours: damage means the data directory was touched from outside; stop and say where. */
export function parseRestoreMarker(marker: unknown, modelId: string): DataModel {
  let model: DataModel;
  try {
    model = parseBackupModel(marker);
  } catch (err) {
    throw new StateError(`the restored model directory ${modelId} holds a damaged RESTORE.json (${(err as Error).message})`);
  }
  if (model.uuid !== modelId) throw new StateError(`the restored model directory ${modelId} holds the RESTORE.json of model ${model.uuid}`);
  return model;
}

/** A record line, checked against the model and the line before it. */
export class RecordLineReader {
  private readonly byName = new Map<string, Attribute>();
  private lastId = 0;

  constructor(model: DataModel) {
    for (const a of model.attributes) this.byName.set(a.name, a);
  }

  /** `{id, tsMs, record}`; throws InvalidArgumentError naming `lineNo` and the field. */
  read(line: string, lineNo: number): { id: number; tsMs: number; record: Record<string, unknown> } {
    const value = parseJson(line, lineNo);
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new InvalidArgumentError(`line ${lineNo}: a record must be a JSON object, got ${describeValue(value)}`);
    }
    const input = value as Record<string, unknown>;
    const { id, create_at_ms: ts } = input;
    const idRule = idDomainRule(id);
    if (idRule !== undefined) throw new InvalidArgumentError(`line ${lineNo}: ${idRule}`);
    if ((id as number) <= this.lastId) {
      throw new InvalidArgumentError(`line ${lineNo}: id must be above the previous line's ${this.lastId}, got ${describeValue(id)}`);
    }
    // Times may step back (a clock corrected while the model was written, contract 20): ids alone give the order.
    const tsRule = createAtDomainRule(ts);
    if (tsRule !== undefined) throw new InvalidArgumentError(`line ${lineNo}: ${tsRule.replace('create_at', 'create_at_ms')}`);
    for (const key in input) {
      if (key === 'id' || key === 'create_at_ms') continue;
      const attribute = this.byName.get(key);
      if (attribute === undefined) throw new InvalidArgumentError(`line ${lineNo}: unknown attribute '${key}'`);
      const problem = storedValueProblem(attribute, input[key]);
      if (problem !== undefined) throw new InvalidArgumentError(`line ${lineNo}: ${problem}`);
    }
    this.lastId = id as number;
    return { id: id as number, tsMs: ts as number, record: input };
  }
}

/**
 * What a stored value of the attribute may be: its type, or null (never received). Bounds are not
 * checked: they apply to new writes, and the record was valid when it was written.
 */
function storedValueProblem(attribute: Attribute, value: unknown): string | undefined {
  if (value === null) return undefined;
  const { name, type } = attribute;
  switch (type) {
    case 'INTEGER':
      return typeof value === 'number' && Number.isSafeInteger(value) ? undefined : `attribute '${name}' expects INTEGER, got ${describeValue(value)}`;
    case 'FLOAT':
      return typeof value === 'number' && Number.isFinite(value) ? undefined : `attribute '${name}' expects FLOAT, got ${describeValue(value)}`;
    case 'BOOL':
      return typeof value === 'boolean' ? undefined : `attribute '${name}' expects BOOL, got ${describeValue(value)}`;
    case 'STRING':
      return typeof value === 'string' ? undefined : `attribute '${name}' expects STRING, got ${describeValue(value)}`;
    case 'GEO':
      return typeof value === 'string' && isGeo(value) ? undefined : `attribute '${name}' expects GEO "lat,lng", got ${describeValue(value)}`;
  }
}

function parseJson(line: string, lineNo: number): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch (err) {
    throw new InvalidArgumentError(`line ${lineNo}: not valid JSON (${(err as Error).message})`);
  }
}

/** Prefixes a validation message with where the value sits. */
function withWhere<T>(where: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof InvalidArgumentError) throw new InvalidArgumentError(`${where}${err.message}`);
    throw err;
  }
}
