/**
 * The rule list: input checks, rules.json, and the version each rule is compiled under. A version
 * changes on every update, so workers recompile a replaced rule on its next payload while payloads
 * already handed to a worker finish under the version they were sent with.
 */
import { join } from 'node:path';
import { InvalidArgumentError, NotFoundError } from '../errors.js';
import { newUniqueId } from '../models/ids.js';
import { SerialQueue } from '../util/atomic-file.js';
import { mustBe } from '../util/messages.js';
import { optionalText, readList, requireBody, requireName, requireUuid, writeList } from './metadata-file.js';
import type { RuleScripts } from './shared/protocol.js';
import type { Rule } from './shared/types.js';

export const RULES_FILE = 'rules.json';
const SCRIPT_CHARS_MAX = 256 * 1024;
const DESCRIPTION_CHARS_MAX = 2000;

export type RuleFields = Omit<Rule, 'uuid' | 'createdAtMs'>;

/**
 * Checks a create body (every field) or an update body (absent fields keep `current`'s value).
 * `inendExists` resolves fromSource entries.
 */
export function parseRuleFields(input: unknown, inendExists: (uuid: string) => boolean, current?: Rule): RuleFields {
  const body = requireBody(input);
  const pick = <K extends keyof RuleFields>(key: K, parse: (v: unknown) => RuleFields[K]): RuleFields[K] =>
    current !== undefined && body[key] === undefined ? current[key] : parse(body[key]);
  return {
    name: pick('name', (v) => requireName(v)),
    description: pick('description', (v) => optionalText(v, 'description', DESCRIPTION_CHARS_MAX)),
    fromSource: pick('fromSource', (v) => parseFromSource(v, inendExists)),
    actions: pick('actions', parseActions),
    success: pick('success', (v) => parseCallback(v, 'success')),
    failed: pick('failed', (v) => parseCallback(v, 'failed')),
  };
}

export function parseActions(value: unknown): string {
  const text = optionalText(value, 'actions', SCRIPT_CHARS_MAX);
  if (text.trim() === '') throw new InvalidArgumentError('actions must be a non-empty Lua script defining Actions (or function Main(arg), a RHILEX applet)');
  return text;
}

/** The Success or Failed script; absent means empty. */
export function parseCallback(value: unknown, field: 'success' | 'failed'): string {
  return optionalText(value, field, SCRIPT_CHARS_MAX);
}

function parseFromSource(value: unknown, inendExists: (uuid: string) => boolean): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidArgumentError(mustBe('fromSource', 'an array of input uuids', value));
  const seen = new Set<string>();
  value.forEach((uuid, i) => {
    if (typeof uuid !== 'string' || uuid === '') throw new InvalidArgumentError(mustBe(`fromSource[${i}]`, 'an input uuid', uuid));
    if (!inendExists(uuid)) throw new InvalidArgumentError(`fromSource[${i}] refers to unknown input ${uuid}`);
    if (seen.has(uuid)) throw new InvalidArgumentError(`fromSource[${i}] repeats input ${uuid}`);
    seen.add(uuid);
  });
  return [...seen];
}

export class RuleBook {
  private rules: Rule[] = [];
  private readonly versions = new Map<string, number>();
  private nextVersion = 1;
  private readonly writes = new SerialQueue();
  /** Bumped on every change; workers prune compiled rules when it moves. */
  epoch = 0;

  private constructor(private readonly path: string) {}

  static async open(dataDir: string): Promise<RuleBook> {
    const book = new RuleBook(join(dataDir, RULES_FILE));
    book.rules = await readList<Rule>(book.path, 'rules');
    for (const rule of book.rules) book.versions.set(rule.uuid, book.nextVersion++);
    return book;
  }

  list(): Rule[] {
    return this.rules.map(copyRule);
  }

  get(uuid: unknown): Rule {
    return copyRule(this.find(requireUuid(uuid)));
  }

  has(uuid: string): boolean {
    return this.rules.some((r) => r.uuid === uuid);
  }

  /** The rules reading an input, in creation order, as workers compile them. */
  scriptsFor(inendUuid: string): RuleScripts[] {
    return this.readers(inendUuid).map((r) => ({ uuid: r.uuid, version: this.versions.get(r.uuid) ?? 0, actions: r.actions, success: r.success, failed: r.failed }));
  }

  nameOf(uuid: string): string | undefined {
    return this.rules.find((r) => r.uuid === uuid)?.name;
  }

  ids(): string[] {
    return this.rules.map((r) => r.uuid);
  }

  readers(inendUuid: string): Rule[] {
    return this.rules.filter((r) => r.fromSource.includes(inendUuid));
  }

  /** `build` runs inside the write queue, so it sees every earlier change. */
  create(build: () => RuleFields | Promise<RuleFields>): Promise<Rule> {
    return this.writes.run(async () => {
      const fields = await build();
      const rule: Rule = { uuid: newUniqueId('RULE', (id) => this.has(id)), ...fields, createdAtMs: Date.now() };
      await this.commit([...this.rules, rule]);
      return copyRule(rule);
    });
  }

  update(uuid: unknown, build: (current: Rule) => RuleFields | Promise<RuleFields>): Promise<Rule> {
    return this.writes.run(async () => {
      const current = this.find(requireUuid(uuid));
      const rule: Rule = { ...current, ...(await build(copyRule(current))) };
      await this.commit(this.rules.map((r) => (r.uuid === rule.uuid ? rule : r)));
      return copyRule(rule);
    });
  }

  delete(uuid: unknown): Promise<void> {
    return this.writes.run(async () => {
      const rule = this.find(requireUuid(uuid));
      await this.commit(this.rules.filter((r) => r !== rule));
    });
  }

  private find(uuid: string): Rule {
    const rule = this.rules.find((r) => r.uuid === uuid);
    if (!rule) throw new NotFoundError(`rule ${uuid} not found`);
    return rule;
  }

  private async commit(rules: Rule[]): Promise<void> {
    await writeList(this.path, 'rules', rules, this.rules);
    const before = new Map(this.rules.map((r) => [r.uuid, r]));
    this.rules = rules;
    for (const rule of rules) if (before.get(rule.uuid) !== rule) this.versions.set(rule.uuid, this.nextVersion++);
    for (const uuid of before.keys()) if (!this.has(uuid)) this.versions.delete(uuid);
    this.epoch++;
  }
}

function copyRule(rule: Rule): Rule {
  return { ...rule, fromSource: [...rule.fromSource] };
}
