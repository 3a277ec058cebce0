/**
 * `GET /metrics` (the admin or metrics token) and `GET /healthz` (open to monitors; the version only for
 * the admin or metrics token, docs/security.md "Version disclosure").
 */
import type { RegistryView, EngineView } from '../core/deps.js';
import { bearerToken, publicUnlessBearer } from '../guards/auth.js';
import type { Metrics } from './metrics.js';
import { RawReply } from '../core/reply.js';
import type { Guard, Router } from '../core/router.js';

export interface MonitorSources {
  registry: RegistryView;
  engine: EngineView;
  /** Loads the metrics on the first scrape (prom-client is not loaded before). */
  metrics: () => Promise<Metrics>;
  /** The admin token, or the separate `[main] metrics_token` when one is configured. */
  monitor: Guard;
  version: string;
}

export function addMonitorRoutes(router: Router, src: MonitorSources): void {
  const { registry, engine, metrics, monitor } = src;
  const startedAt = Date.now();
  router.group({ prefix: '', guard: monitor }, (g) => {
    g.get('/metrics', async () => {
      const m = await metrics();
      return new RawReply(200, { 'Content-Type': m.contentType, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' }, await m.text());
    });
  });
  // The version tells an attacker which known flaws to try: it only goes to a caller whose token passed
  // the monitor guard, and a wrong token is a 401, so this is no quiet oracle for guessing tokens.
  router.group({ prefix: '', guard: publicUnlessBearer(monitor) }, (g) => {
    g.get('/healthz', (ctx) => ({
      ...health(registry, engine),
      ...(bearerToken(ctx) === undefined ? {} : { version: src.version, inputs: inputsView(engine) }),
      uptimeS: Math.floor((Date.now() - startedAt) / 1000),
      models: registry.list().length,
      // From when the engine was optional; monitors may still read it.
      scripts: 'on',
    }));
  });
}

/** The network inputs with their connection (the last error only here: it may name hosts and users). */
function inputsView(engine: EngineView): Array<{ uuid: string; name: string; type: string; state: string; lastError: string | null; since: string }> {
  return engine.networkInputs().map(({ uuid, name, type, stats }) => ({ uuid, name, type, ...stats.connection }));
}

/**
 * `degraded` (still HTTP 200: the service answers) while a model is read-only or closed, or rules fail
 * for a worker fault (contract 19); each reason names what is affected.
 */
function health(registry: RegistryView, engine: EngineView): { status: 'ok' | 'degraded'; reasons?: string[] } {
  const reasons: string[] = [];
  for (const model of registry.list()) {
    if (!model.published) continue;
    try {
      const stats = registry.log(model.uuid).stats();
      if (stats.state === 'read-only') {
        const since = stats.readOnlySinceMs === undefined ? '' : ` since ${new Date(stats.readOnlySinceMs).toISOString()}`;
        reasons.push(`model ${model.name} (${model.uuid}) is read-only${since}: ${stats.lastError ?? 'I/O error'}`);
      }
    } catch (err) {
      reasons.push((err as Error).message);
    }
  }
  reasons.push(...engine.faults());
  // A network input that cannot listen or lost its broker takes no data: worth a monitor's look.
  for (const { uuid, name, type, stats } of engine.networkInputs()) {
    const { state, since } = stats.connection;
    if (state === 'error' || state === 'reconnecting') reasons.push(`input ${name} (${uuid}, ${type}) is ${state} since ${since}`);
  }
  return reasons.length === 0 ? { status: 'ok' } : { status: 'degraded', reasons };
}
