/**
 * Builds the uWS app, registers every route and listens. `port: 0` picks a free port (tests).
 */
import { ListenError } from '../errors.js';
import { Audit, warnIfPlainNonLoopback } from './audit.js';
import { adminGuard, dataSecretGuard, type FailureLimiter, pushTokenGuard, SecretSet } from './auth.js';
import { ClientAddress } from './client-address.js';
import { ConnectionGate } from './connections.js';
import { addDatacenterRoutes } from './datacenter-routes.js';
import { addBackupRoutes } from './backup-routes.js';
import type { HttpDeps } from './deps.js';
import type { Metrics } from './metrics.js';
import { addMonitorRoutes } from './monitor-routes.js';
import { addUplinkRoutes } from './uplink-routes.js';
import { addQueryRoutes } from './query-routes.js';
import { addHmiRoutes } from './hmi-routes.js';
import { LiveHub } from './live.js';
import { addLiveRoutes } from './live-routes.js';
import { attachLiveWs } from './live-ws.js';
import { type RouteInfo, Router } from './router.js';
import { addSchemaRoutes } from './schema-routes.js';
import { addScriptRoutes } from './script-routes.js';
import { findPublicDir, staticHandler } from './static.js';
import { AuthThrottle } from './throttle.js';
import { loadTls, type TlsSetup } from './tls.js';
import uWS, { listenExclusive, type TemplatedApp, type us_listen_socket } from './uws.js';

export interface HttpServer {
  host: string;
  port: number;
  /** `https` when tls_cert_file and tls_key_file are set. */
  scheme: 'http' | 'https';
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
  // First: a wrong certificate or key stops the start before anything listens.
  const tls = await loadTls(config.http);
  const publicDir = findPublicDir();
  if (publicDir === undefined) logger.warn('UI directory src/ui/public not found: non-API paths answer 404');

  const router = new Router({
    logger,
    urlBytesMax: config.http.urlBytesMax,
    bodyBytesMax: config.http.bodyBytesMax,
    fallback: staticHandler(publicDir),
    allowedHosts: new Set(config.http.allowedHosts),
    clientAddress: config.http.trustedProxies.length > 0 ? new ClientAddress(config.http.trustedProxies) : undefined,
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
      const [{ createMetrics }, { registerUplinkMetrics }] = await Promise.all([import('./metrics.js'), import('./uplink-metrics.js')]);
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

  const app = createApp(tls);
  connections.attach(app);
  attachLiveWs(app, {
    guard: dataSecret,
    registry,
    hub: live,
    logger,
    allowedHosts: new Set(config.http.allowedHosts),
    clientAddress: config.http.trustedProxies.length > 0 ? new ClientAddress(config.http.trustedProxies) : undefined,
  });
  router.attach(app);
  const host = config.http.host;
  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    listenExclusive(app, host, config.http.port, (socket) => {
      if (socket === false) reject(new ListenError(`cannot listen on ${host}:${config.http.port}: the port is in use or the address is not available`));
      else resolve(socket);
    });
  });
  const port = uWS.us_socket_local_port(listenSocket);
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
    uWS.us_listen_socket_close(listenSocket);
  };
  return {
    host,
    port,
    scheme: tls === undefined ? 'http' : 'https',
    routes: router.routes(),
    stopListening,
    close(graceMs = CLOSE_GRACE_MS) {
      closing ??= (async () => {
        stopListening();
        audit.flush();
        live.close(); // streams never end by themselves
        await router.settled(graceMs);
        // Also ends idle keep-alive connections so the event loop can empty.
        (app as { close?: () => void }).close?.();
      })();
      return closing;
    },
  };
}

function createApp(tls: TlsSetup | undefined): TemplatedApp {
  if (tls === undefined) return uWS.App();
  try {
    return uWS.SSLApp(tls.options);
  } catch (err) {
    // loadTls accepted the files, so this is something OpenSSL in uWS refuses that node:crypto does not.
    throw new ListenError(
      `uWebSockets.js could not set up TLS with tls_cert_file ${tls.options.cert_file_name as string} and tls_key_file ${tls.options.key_file_name as string}: ${(err as Error).message}`,
    );
  }
}

/** host:port as in a URL: an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
