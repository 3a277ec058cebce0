import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelRegistry } from '../../src/models/registry.js';
import { ScriptEngine } from '../../src/scripts/engine.js';
import type { Config } from '../../src/config/types.js';
import { type FileIo, Store } from '../../src/store/index.js';
import type { Durability, RecordView } from '../../src/store/base/types.js';

export const SAMPLE_MODEL_ATTRIBUTES = [
  { name: 'temp', type: 'FLOAT' },
  { name: 'resistivity', type: 'FLOAT' },
  { name: 'conductivity', type: 'FLOAT' },
  { name: 'dissolved_oxygen', type: 'FLOAT' },
  { name: 'ph_value', type: 'FLOAT' },
] as const;

export function sampleScript(modelUuid: string): Promise<string> {
  return readFile(new URL('../../fixtures/lua/rhilex-sample.lua', import.meta.url), 'utf8').then((text) =>
    text.replaceAll('SCHEMAZ848ZRDG', modelUuid),
  );
}

export function modbusPayload(values: Record<string, number>): string {
  return JSON.stringify(Object.entries(values).map(([tag, value]) => ({ tag, value })));
}

export const SCRIPT_LIMITS: Config['scripts'] = { workers: 2, workerIdleS: 60, timeoutMs: 200, hardTimeoutMs: 1500, memoryMb: 16, queueMax: 10_000 };

export interface Harness {
  dir: string;
  store: Store;
  registry: ModelRegistry;
  engine: ScriptEngine;
  /** Creates and publishes a model; attributes are `{name, type, rule?}` bodies. */
  model(attributes: ReadonlyArray<Record<string, unknown>>): Promise<string>;
  records(modelUuid: string): Promise<RecordView[]>;
  close(): Promise<void>;
}

export async function openHarness(
  limits: Partial<Config['scripts']> = {},
  opts: { durability?: Durability; log?: (level: string, obj: object, msg: string) => void; fileIo?: FileIo } = {},
): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'edge-scripts-'));
  const store = await Store.open({
    rootDir: join(dir, 'store'),
    durability: opts.durability ?? 'none',
    syncIntervalMs: 50,
    segmentBytesMax: 8 * 1024 * 1024,
    segmentAgeMsMax: 3_600_000,
    retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
  }, { fileIo: opts.fileIo, readOnlyRetryMs: 20 });
  const registry = await ModelRegistry.open({ dataDir: dir, store });
  const engine = await ScriptEngine.open({ dataDir: dir, config: { ...SCRIPT_LIMITS, ...limits }, registry, log: opts.log });
  return {
    dir,
    store,
    registry,
    engine,
    async model(attributes) {
      const model = await registry.create({ name: `m${Math.random().toString(36).slice(2, 8)}` });
      for (const attribute of attributes) await registry.createAttribute({ schemaId: model.uuid, ...attribute });
      await registry.publish(model.uuid);
      return model.uuid;
    },
    async records(modelUuid) {
      return (await registry.log(modelUuid).page({ current: 1, size: 1000, order: 'asc' })).records;
    },
    async close() {
      await engine.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** An HTTP input read by one rule running `actions`. */
export async function inputWithRule(h: Harness, actions: string, extra: Record<string, unknown> = {}): Promise<{ inend: string; rule: string; token: string }> {
  const { inend, token } = await h.engine.createInend({ name: 'in', type: 'HTTP' });
  const rule = await h.engine.createRule({ name: 'r', fromSource: [inend.uuid], actions, ...extra });
  return { inend: inend.uuid, rule: rule.uuid, token: token! };
}
