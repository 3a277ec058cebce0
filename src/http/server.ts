/**
 * Registers every route, starts the configured transport (transport.ts) and listens. `port: 0` picks a
 * free port (tests).
 */
import { Audit, warnIfPlainNonLoopback } from './guards/audit.js';
import { adminGuard, dataSecretGuard, type FailureLimiter, pushTokenGuard, SecretSet } from './guards/auth.js';
import { ClientAddress } from './core/client-address.js';
import { ConnectionGate } from './guards/connections.js';
import { addDatacenterRoutes } from './routes/datacenter-routes.js';
import { addBackupRoutes } from './routes/backup-routes.js';
import type { HttpDeps } from './core/deps.js';
import type { Metrics } from './routes/metrics.js';
import { addMonitorRoutes } from './routes/monitor-routes.js';
import { addUplinkRoutes } from './routes/uplink-routes.js';
import { addQueryRoutes } from './routes/query-routes.js';
import { addHmiRoutes } from './routes/hmi-routes.js';
import { LiveHub } from './live/live.js';
import { addLiveRoutes } from './live/live-routes.js';
import { type RouteInfo, Router } from './core/router.js';
import { addSchemaRoutes } from './routes/schema-routes.js';
import { addScriptRoutes } from './routes/script-routes.js';
import { findPublicDir, staticHandler } from './routes/static.js';
import { AuthThrottle } from './guards/throttle.js';
import { loadTls, type TlsSetup } from './transport/tls.js';
import { loadTransport } from './transport/transport.js';
import type { TransportName } from './transport/transport-contract.js';

export interface HttpServer {
  host: string;
  port: number;
  /** `https` when tls_cert_file and tls_key_file are set. */
  scheme: 'http' | 'https';
  /** The HTTP library serving: `[plugin.http_server] transport`, `auto` resolved. */
  transport: TransportName;
  /** Every route with the credential its guard asks for. */
  routes: readonly RouteInfo[];
  /** Stops accepting connections; requests on open ones are still answered. */
  stopListening(): void;
  /**
   * Stops listening, waits up to `graceMs` for answers still being produced (pushes waiting for the
   * store, exports), then closes every connection.
   */
  close(graceMs?: number): Promise<void>;
}

const CLOSE_GRACE_MS = 5000;

export const SERVICE_VERSION = '0.1.0';

export async function startHttpServer(deps: HttpDeps): Promise<HttpServer> {
  const { config, registry, engine, logger } = deps;
  // First: a transport that cannot load, or a wrong certificate or key, stops the start before anything listens.
  const transport = await loadTransport(config.http.transport, logger);
  const tls = await loadTls(config.http);
  const publicDir = findPublicDir();
  if (publicDir === undefined) logger.warn('UI directory src/ui/public not found: non-API paths answer 404');

  const clientAddress = config.http.trustedProxies.length > 0 ? new ClientAddress(config.http.trustedProxies) : undefined;
  const router = new Router({
    logger,
    urlBytesMax: config.http.urlBytesMax,
    bodyBytesMax: config.http.bodyBytesMax,
    fallback: staticHandler(publicDir),
    allowedHosts: new Set(config.http.allowedHosts),
    clientAddress,
  });
  const throttle = new AuthThrottle(config.http.authFailuresPerMinute);
  const audit = new Audit(logger);
  // Audited before the throttle, which throws 429 when the address is over the limit.
  const failures: FailureLimiter = {
    failed(ctx, kind) {
      audit.authFailed(ctx, kind);
      throttle.failed(ctx, kind);
    },
  };
  const connections = new ConnectionGate(config.http.maxConnections);
  const admin = adminGuard(new SecretSet([config.main.adminToken]), failures);
  const dataSecret = dataSecretGuard(new SecretSet(config.main.secrets), failures);
  addQueryRoutes(router, registry, dataSecret);
  addHmiRoutes(router, registry, dataSecret);
  const live = new LiveHub();
  addLiveRoutes(router, registry, dataSecret, live);
  addSchemaRoutes(router, registry, admin, audit);
  addDatacenterRoutes(router, registry, config, admin, audit);
  addBackupRoutes(router, deps.transfers, admin, audit);
  addScriptRoutes(router, engine, { admin, pushToken: pushTokenGuard(engine, failures) }, audit);
  addUplinkRoutes(router, deps.uplink, admin);
  // prom-client costs about 4 MiB of a small gateway's memory: it is loaded at the first scrape.
  let metrics: Promise<Metrics> | undefined;
  const loadMetrics = (): Promise<Metrics> =>
    (metrics ??= (async () => {
      const [{ createMetrics }, { registerUplinkMetrics }] = await Promise.all([import('./routes/metrics.js'), import('./routes/uplink-metrics.js')]);
      const created = createMetrics({ registry, engine, router, connections, throttle });
      if (deps.uplink !== undefined) registerUplinkMetrics(created.registry, deps.uplink);
      return created;
    })());
  addMonitorRoutes(router, {
    registry,
    engine,
    metrics: loadMetrics,
    monitor: adminGuard(new SecretSet([config.main.adminToken, config.main.metricsToken]), failures, 'metrics or admin token'),
    version: SERVICE_VERSION,
  });

  const server = transport.createServer({
    tls,
    onRequest: (req, res) => router.handle(req, res),
    connections,
    liveWs: { guard: dataSecret, registry, hub: live, logger, allowedHosts: new Set(config.http.allowedHosts), clientAddress },
  });
  const host = config.http.host;
  const port = await server.listen(host, config.http.port);
  if (tls !== undefined) {
    const cert = tls.certificate;
    logger.info({ subject: cert.subject, issuer: cert.issuer, validTo: cert.validTo }, `serving HTTPS with the certificate for ${cert.subject.replaceAll('\n', ', ')}, valid until ${cert.validTo}`);
    if (Date.parse(cert.validTo) < Date.now()) logger.warn(`the certificate in ${config.http.tlsCertFile} expired on ${cert.validTo}: clients will refuse it`);
  }
  warnIfPlainNonLoopback(host, port, tls !== undefined, logger);
  let listening = true;
  let closing: Promise<void> | undefined;
  const stopListening = (): void => {
    if (!listening) return;
    listening = false;
    server.stopListening();
  };
  return {
    host,
    port,
    scheme: tls === undefined ? 'http' : 'https',
    transport: transport.name,
    routes: router.routes(),
    stopListening,
    close(graceMs = CLOSE_GRACE_MS) {
      closing ??= (async () => {
        stopListening();
        audit.flush();
        live.close(); // streams never end by themselves
        await router.settled(graceMs);
        server.closeConnections();
      })();
      return closing;
    },
  };
}
