/**
 * Builds the uWS app, registers every route and listens. `port: 0` picks a free port (tests).
 */
import { ListenError } from '../errors.js';
import { Audit, warnIfPlainNonLoopback } from './audit.js';
import { adminGuard, bearerToken, type FailureLimiter, SecretSet } from './auth.js';
import { ClientAddress } from './client-address.js';
import { ConnectionGate } from './connections.js';
import { addDatacenterRoutes } from './datacenter-routes.js';
import type { EngineApi, HttpDeps, RegistryApi } from './deps.js';
import { createMetrics } from './metrics.js';
import { addQueryRoutes } from './query-routes.js';
import { RawReply } from './reply.js';
import { Router } from './router.js';
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
  /** Every route: method and path (fuzzing, documentation). */
  routes: ReadonlyArray<{ method: string; path: string }>;
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
  const startedAt = Date.now();
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
  addQueryRoutes(router, registry, new SecretSet(config.main.secrets), failures);
  addSchemaRoutes(router, registry, admin, audit);
  addDatacenterRoutes(router, registry, config, admin, audit);
  addScriptRoutes(router, engine, admin, audit, failures);
  const metrics = createMetrics({ registry, engine, router, connections, throttle });
  // The admin token, or the separate [main] metrics_token when one is configured.
  const monitor = adminGuard(new SecretSet([config.main.adminToken, config.main.metricsToken]), failures, 'metrics or admin token');
  router.add({
    method: 'GET',
    path: '/metrics',
    guard: monitor,
    handler: async () =>
      new RawReply(
        200,
        { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' },
        await metrics.text(),
      ),
  });
  router.add({
    method: 'GET',
    path: '/healthz',
    // Open to monitors without a credential. The version, which tells an attacker which known flaws to
    // try, only goes to a caller that presents the metrics or admin token, checked and throttled as on
    // /metrics: a wrong one is a 401, so this is no quiet oracle for guessing tokens. Other schemes
    // (a proxy's Basic auth passed through) get the anonymous answer.
    guard: (ctx) => {
      if (bearerToken(ctx) !== undefined) monitor(ctx);
    },
    handler: (ctx) => ({
      ...health(registry, engine),
      ...(bearerToken(ctx) === undefined ? {} : { version: SERVICE_VERSION }),
      uptimeS: Math.floor((Date.now() - startedAt) / 1000),
      models: registry.list().length,
      scripts: engine === undefined ? 'off' : 'on',
    }),
  });

  const app = createApp(tls);
  connections.attach(app);
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

/** 127.0.0.0/8, ::1 and localhost; 0.0.0.0 and :: are every interface, so not loopback. */
/** host:port as in a URL: an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * `degraded` (still HTTP 200: the service answers) while a model is read-only or closed, or rules fail
 * for a worker fault (contract 19); each reason names what is affected.
 */
function health(registry: RegistryApi, engine: EngineApi | undefined): { status: 'ok' | 'degraded'; reasons?: string[] } {
  const reasons: string[] = [];
  for (const model of registry.list()) {
    if (!model.published) continue;
    try {
      const stats = registry.log(model.uuid).stats();
      if (stats.state === 'read-only') reasons.push(`model ${model.name} (${model.uuid}) is read-only: ${stats.lastError ?? 'I/O error'}`);
    } catch (err) {
      reasons.push((err as Error).message);
    }
  }
  reasons.push(...(engine?.faults() ?? []));
  return reasons.length === 0 ? { status: 'ok' } : { status: 'degraded', reasons };
}
