/**
 * What the HTTP layer needs from the rest of the service, written as structural interfaces so that this
 * folder depends on shapes, not on implementations. The real ModelRegistry, ModelLog and ScriptEngine
 * satisfy them; src/server.ts is where that is checked by the compiler.
 *
 * Bodies are typed `any` on purpose: the HTTP layer only checks that a body is a JSON object, and the
 * registry or engine validates every field and throws an EdgeError naming it.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { DataModel } from '../models/types.js';
import type { PushResult } from '../scripts/types.js';
import type { ExportRange, ModelLogStats, PageQuery, PageResult, RecordView, RecoveryFindings } from '../store/types.js';

export type Awaitable<T> = T | Promise<T>;

export interface LogApi {
  page(query: PageQuery): Promise<PageResult>;
  /** Synchronous: served from memory. */
  latest(select?: readonly string[]): RecordView | undefined;
  iterate(range?: ExportRange): AsyncIterableIterator<RecordView>;
  clear(): Promise<void>;
  stats(): ModelLogStats;
  findings(): RecoveryFindings | undefined;
  acknowledgeFindings(): Promise<void>;
}

export interface RegistryApi {
  /** Synchronous: the registry keeps its metadata in memory. */
  list(): readonly DataModel[];
  /** Synchronous; NotFoundError for an unknown uuid. */
  get(uuid: string): DataModel;
  /** Synchronous; NotFoundError / StateError (409) when not published. */
  log(uuid: string): LogApi;
  create(body: any): Promise<{ uuid: string }>;
  update(body: any): Promise<unknown>;
  delete(uuid: string): Promise<unknown>;
  publish(uuid: string): Promise<unknown>;
  fix(uuid: string, confirm: boolean): Promise<unknown>;
  createAttribute(body: any): Promise<{ uuid: string }>;
  updateAttribute(body: any): Promise<unknown>;
  deleteAttribute(uuid: string): Promise<unknown>;
  getAttribute(uuid: string): Awaitable<unknown>;
  listAttributes(schemaUuid: string): Awaitable<readonly unknown[]>;
  templates(): Awaitable<unknown>;
  templateFields(templateId: string): Awaitable<unknown>;
  applyTemplate(schemaUuid: string, templateId: string): Promise<unknown>;
}

export type { PushResult };

export interface EngineApi {
  listRules(): Awaitable<unknown>;
  getRule(uuid: string): Awaitable<unknown>;
  createRule(body: any): Promise<{ uuid: string }>;
  updateRule(body: any): Awaitable<unknown>;
  deleteRule(uuid: string): Awaitable<unknown>;
  validate(body: any): Awaitable<unknown>;
  ruleStats(uuid: string): Awaitable<unknown>;
  listInends(): Awaitable<unknown>;
  getInend(uuid: string): Awaitable<unknown>;
  createInend(body: any): Promise<{ inend: { uuid: string }; token?: string }>;
  updateInend(body: any): Awaitable<unknown>;
  deleteInend(uuid: string): Awaitable<unknown>;
  /** Throws AuthError (wrong token) or NotFoundError (no such input); synchronous, so it runs before the body is read. */
  authenticatePush(inendUuid: string, token: string): void;
  push(inendUuid: string, payloads: string[], options?: { waitDurable?: boolean }): Promise<PushResult>;
  /** Why rules fail for reasons of ours (worker faults), for /healthz. */
  faults(): string[];
  /** Payloads waiting for the input (metrics); optional. */
  queueDepth?(inendUuid: string): number;
}

export interface HttpDeps {
  config: Config;
  registry: RegistryApi;
  engine?: EngineApi;
  logger: Logger;
}
