/**
 * What `serve` loads (issue 15, memory on small gateways): the NATS client (about 10 MiB) only when the
 * uplink ships, prom-client only at the first scrape of /metrics, nothing of the offline commands. A
 * real process, with a module hook that lists every module it resolves.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { startService } from '../reliability/support/service.mjs';

const HOOK = fileURLToPath(new URL('../support/record-imports.mjs', import.meta.url));

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const ADMIN = 'lazy-imports-admin-0123456789abcdef';

/**
 * Starts `serve` with `extraIni`, waits until it listens, runs `whileUp` (given its base URL and the modules
 * resolved so far), stops it; the modules it resolved.
 */
async function modulesOfServe(extraIni: string, whileUp?: (base: string, modules: () => Promise<string[]>) => Promise<void>): Promise<string[]> {
  dir = await mkdtemp(join(tmpdir(), 'edc-lazy-'));
  const ini = join(dir, 'gw.ini');
  const log = join(dir, 'imports.log');
  await writeFile(ini, `[main]\ndata_dir = ${join(dir, 'data')}\nadmin_token = ${ADMIN}\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n${extraIni}`);
  const svc = await startService(ini, { nodeArgs: ['--import', HOOK], env: { IMPORTS_LOG: log } });
  const modules = async (): Promise<string[]> => (await readFile(log, 'utf8')).split('\n').filter((l) => l.length > 0);
  try {
    await whileUp?.(svc.base, modules);
  } finally {
    await svc.kill('SIGTERM');
  }
  return modules();
}

const PISCINA = /\/node_modules\/piscina\//;

describe('serve loads what it uses', () => {
  it('no NATS client and no offline command while the uplink is off (the default)', async () => {
    const modules = await modulesOfServe('');
    expect(modules.some((m) => m.endsWith('/dist/server.js')), 'the hook saw the service').toBe(true);
    expect(modules.filter((m) => /@nats-io|\/uplink\/(uplink|nats-link)\.js$/.test(m))).toEqual([]);
    expect(modules.filter((m) => /cli-transfers|cli-progress/.test(m))).toEqual([]);
    // aedes and mqtt.js load with the first MQTT input (src/inputs/input-table.ts), not before.
    expect(modules.filter((m) => /\/node_modules\/(aedes|mqtt|mqtt-packet)\/|\/inputs\/(mqtt-broker|mqtt-client|udp-server)\.js$/.test(m))).toEqual([]);
    // prom-client (about 4 MiB) waits for the first scrape of /metrics (test/reliability/observability.test.ts scrapes it).
    expect(modules.filter((m) => /prom-client|\/http\/(metrics|uplink-metrics)\.js$/.test(m))).toEqual([]);
    // piscina (about 0.7 MiB) loads with the pool's first task (src/util/lazy-piscina.ts), not before.
    expect(modules.filter((m) => PISCINA.test(m))).toEqual([]);
  }, 30_000);

  it('piscina with the first task of the pool (a rule check), which then runs', async () => {
    await modulesOfServe('', async (base, modules) => {
      expect((await modules()).filter((m) => PISCINA.test(m)), 'not before the first task').toEqual([]);
      const res = await fetch(`${base}/api/v1/rules/validate`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ actions: 'Actions = { function(args) return true, args end }', success: '', failed: '' }),
      });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      expect(JSON.parse(text).data).toMatchObject({ ok: true });
      expect((await modules()).some((m) => PISCINA.test(m))).toBe(true);
    });
  }, 30_000);

  it('the NATS client once the uplink ships', async () => {
    const modules = await modulesOfServe('[uplink]\nengine = nats\nservers = nats://127.0.0.1:1\ngateway_id = lazy\n');
    expect(modules.some((m) => m.includes('@nats-io/transport-node'))).toBe(true);
  }, 30_000);
});
