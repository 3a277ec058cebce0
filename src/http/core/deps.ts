/**
 * What the HTTP layer uses of the rest of the service: narrow views (`Pick`) of the real classes. The
 * compiler checks every route against the real signatures, so a change there fails to compile here, and
 * the folder still depends only on the methods it calls.
 */
import type { Logger } from 'pino';
import type { Config } from '../../config/types.js';
import type { ModelRegistry } from '../../models/registry.js';
import type { ScriptEngine } from '../../scripts/engine.js';
import type { ModelLog } from '../../store/index.js';
import type { ModelTransfers } from '../../models/backup.js';
import type { Uplink } from '../../uplink/uplink.js';

/** A published model's log, as the read, export, clear and recovery routes use it. */
export type LogView = Pick<ModelLog, 'page' | 'pageJson' | 'aggregate' | 'latest' | 'iterate' | 'clear' | 'stats' | 'findings' | 'acknowledgeFindings'>;

export type RegistryView = Pick<
  ModelRegistry,
  | 'list'
  | 'models'
  | 'get'
  | 'create'
  | 'update'
  | 'delete'
  | 'publish'
  | 'fix'
  | 'createAttribute'
  | 'updateAttribute'
  | 'deleteAttribute'
  | 'getAttribute'
  | 'listAttributes'
  | 'templates'
  | 'templateFields'
  | 'applyTemplate'
  | 'setRetention'
  | 'retentionOf'
  | 'diskSpace'
> & {
  /** Synchronous; NotFoundError / StateError (409) when not published. */
  log(uuid: string): LogView;
};

export type EngineView = Pick<
  ScriptEngine,
  | 'listRules'
  | 'getRule'
  | 'createRule'
  | 'updateRule'
  | 'deleteRule'
  | 'validate'
  | 'dryRun'
  | 'ruleStats'
  | 'listInends'
  | 'getInend'
  | 'createInend'
  | 'updateInend'
  | 'deleteInend'
  | 'rotateToken'
  | 'inendStats'
  | 'authenticatePush'
  | 'push'
  | 'faults'
  | 'ruleOverruns'
  | 'queueDepth'
  | 'networkInputs'
>;

export interface HttpDeps {
  config: Config;
  registry: RegistryView;
  /** Backup, restore and import (src/models/backup.ts). */
  transfers: TransfersView;
  engine: EngineView;
  /** The fleet uplink, when `[uplink] engine` is not off. */
  uplink?: UplinkView | undefined;
  logger: Logger;
}

export type UplinkView = Pick<Uplink, 'status'>;

export type TransfersView = Pick<ModelTransfers, 'backup' | 'restore' | 'importData'>;
