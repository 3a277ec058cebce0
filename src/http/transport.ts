/**
 * The HTTP transport: the one seam between the routes and an HTTP server library. Two implement it,
 * uws-transport.ts (uWebSockets.js, measured at about three times node:http's request rate)
 * and node-transport.ts (node:http / node:https, for platforms without a uWS binary: musl, Node 24+).
 * `[plugin.http_server] transport` picks one; both are imported only when chosen, so a uWS binary that
 * is missing or does not load never stops a start that does not need it.
 */
import type { Logger } from 'pino';
import type { HttpTransportChoice } from '../config/types.js';
import { ListenError } from '../errors.js';
import type { ConnectionGate } from './connections.js';
import type { LiveWsOptions } from './live-ws.js';
import type { TlsSetup } from './tls.js';
import type { TransportRequest, TransportResponse } from './wire.js';

export type TransportName = 'uws' | 'node';

export interface TransportServerOptions {
  /** HTTPS when set. */
  tls: TlsSetup | undefined;
  /** Every HTTP request that is not the live WebSocket. */
  onRequest(req: TransportRequest, res: TransportResponse): void;
  /** Counts open connections and refuses those over `max_connections`. */
  connections: ConnectionGate;
  /** The live WebSocket at LIVE_WS_PATH (uws), or the answer that it is not offered (node); absent: none. */
  liveWs?: LiveWsOptions;
}

export interface TransportServer {
  /** Listens on host:port without sharing the port with another process; resolves with the port. */
  listen(host: string, port: number): Promise<number>;
  /** Stops accepting connections; open ones are still served. */
  stopListening(): void;
  /** Closes every connection, idle keep-alive ones included. */
  closeConnections(): void;
}

export interface HttpTransport {
  readonly name: TransportName;
  createServer(options: TransportServerOptions): TransportServer;
}

/**
 * The transport `choice` asks for. `auto`: uWS, or node:http with one warning naming why uWS did not load.
 * `uws`: a uWS that does not load stops the start (ListenError, one line).
 */
export async function loadTransport(choice: HttpTransportChoice, logger: Logger): Promise<HttpTransport> {
  if (choice === 'node') return (await import('./node-transport.js')).nodeTransport;
  try {
    return (await import('./uws-transport.js')).uwsTransport;
  } catch (err) {
    const reason = loadFailure(err);
    if (choice === 'uws') {
      throw new ListenError(`[plugin.http_server] transport = uws, but uWebSockets.js does not load here: ${reason}. Set transport = node or auto to serve with node:http`);
    }
    logger.warn(
      { transport: 'node', reason },
      `serving HTTP with node:http (transport = node): uWebSockets.js does not load here: ${reason}. WebSocket live reads are off; SSE works`,
    );
    return (await import('./node-transport.js')).nodeTransport;
  }
}

/**
 * One line from a failed load of uWS. uws-pack's own message spans lines ("supports only Node.js versions
 * ...", blank, then the require error and its stack of requiring files).
 */
function loadFailure(err: unknown): string {
  const lines = String((err as Error)?.message ?? err)
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.length > 0);
  const stack = lines.findIndex((line) => line.startsWith('Require stack:'));
  return (stack < 0 ? lines : lines.slice(0, stack)).join(' ');
}

/** host:port as in a URL: an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
