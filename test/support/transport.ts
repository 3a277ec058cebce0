/**
 * Which HTTP transport the tests run on: EDGE_DATACENTER_HTTP_TRANSPORT, the service's own override of
 * `[plugin.http_server] transport`, so that services started as child processes inherit it too.
 * `npm run test:http-node` sets it to `node`; unset, the tests run on `auto` (uWS where it loads).
 */
import { pino } from 'pino';
import type { HttpTransportChoice } from '../../src/config/types.js';
import { ConnectionGate } from '../../src/http/guards/connections.js';
import type { Router } from '../../src/http/core/router.js';
import { loadTransport } from '../../src/http/transport/transport.js';

export const TRANSPORT_ENV = 'EDGE_DATACENTER_HTTP_TRANSPORT';

export const TEST_TRANSPORT = (process.env[TRANSPORT_ENV] ?? 'auto') as HttpTransportChoice;

/** The tests of WebSocket live reads need uWS; on node:http the upgrade is answered 501 instead. */
export const ON_NODE_TRANSPORT = TEST_TRANSPORT === 'node';

/** Serves `router` alone (no live WebSocket, no connection limit) on 127.0.0.1 and a free port. */
export async function serveRouter(router: Router): Promise<{ base: string; close(): void }> {
  const transport = await loadTransport(TEST_TRANSPORT, pino({ level: 'silent' }));
  const server = transport.createServer({
    tls: undefined,
    onRequest: (req, res) => router.handle(req, res),
    connections: new ConnectionGate(0),
  });
  const port = await server.listen('127.0.0.1', 0);
  return {
    base: `http://127.0.0.1:${port}`,
    close() {
      server.stopListening();
      server.closeConnections();
    },
  };
}
