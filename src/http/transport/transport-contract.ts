/**
 * What a transport is to the rest of the HTTP layer: the server it makes, the options it takes, and how a
 * listening address is written. uws-transport.ts and node-transport.ts implement it; transport.ts picks one.
 */
import type { ConnectionGate } from '../guards/connections.js';
import type { LiveWsOptions } from '../live/live-ws.js';
import type { TlsSetup } from './tls.js';
import type { TransportRequest, TransportResponse } from '../core/wire.js';

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

/** host:port as in a URL: an IPv6 address in brackets. */
export function hostPort(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}
