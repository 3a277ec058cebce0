/**
 * End-to-end records/s of the rule runtime: NDJSON-like pushes of the RHILEX sample payload -> the
 * sample rule in the worker pool -> the store (sync = interval). Run: npx tsc -p tsconfig.json &&
 * node bench/scripts-throughput.mjs [workers] [seconds]
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ModelRegistry } from '../dist/models/registry.js';
import { ScriptEngine } from '../dist/scripts/engine.js';
import { Store } from '../dist/store/index.js';

const workers = Number(process.argv[2] ?? 0);
const seconds = Number(process.argv[3] ?? 5);
const dir = await mkdtemp(join(tmpdir(), 'bench-scripts-'));
const store = await Store.open({
  rootDir: join(dir, 'store'), durability: 'interval', syncIntervalMs: 100, segmentBytesMax: 64 << 20,
  segmentAgeMsMax: 3_600_000, retention: { maxRecords: 0, maxBytes: 0, maxAgeMs: 0 },
});
const registry = await ModelRegistry.open({ dataDir: dir, store });
const model = await registry.create({ name: 'water' });
for (const name of ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value']) {
  await registry.createAttribute({ schemaId: model.uuid, name, type: 'FLOAT' });
}
await registry.publish(model.uuid);
const engine = await ScriptEngine.open({
  dataDir: dir, registry: registry,
  config: { workers, timeoutMs: 200, hardTimeoutMs: 2000, memoryMb: 32, queueMax: 20_000 },
});
const script = (await readFile(new URL('../fixtures/lua/rhilex-sample.lua', import.meta.url), 'utf8')).replaceAll('SCHEMAZ848ZRDG', model.uuid);
const { inend } = await engine.createInend({ name: 'bench', type: 'HTTP' });
await engine.createRule({ name: 'sample', fromSource: [inend.uuid], actions: script });
const payload = JSON.stringify(['t1', 't2', 't3', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'].map((tag, i) => ({ tag, value: 20 + i * 0.5 })));
const lines = Array.from({ length: 1000 }, () => payload);

let stored = 0;
const deadline = Date.now() + seconds * 1000;
const started = performance.now();
async function client() {
  while (Date.now() < deadline) {
    try {
      const result = await engine.push(inend.uuid, lines);
      stored += result.accepted;
    } catch {
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}
await Promise.all(Array.from({ length: 8 }, client));
const elapsed = (performance.now() - started) / 1000;
console.log(JSON.stringify({ workers: workers || 'default', seconds: elapsed.toFixed(2), records: stored, recordsPerS: Math.round(stored / elapsed) }));
await engine.close();
await store.close();
await rm(dir, { recursive: true, force: true });
