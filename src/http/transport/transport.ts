/**
 * The HTTP transport: the one seam between the routes and an HTTP server library. Two implement it,
 * uws-transport.ts (uWebSockets.js, measured at about three times node:http's request rate)
 * and node-transport.ts (node:http / node:https, for platforms without a uWS binary: musl, Node 24+).
 * `[plugin.http_server] transport` picks one; both are imported only when chosen, so a uWS binary that
 * is missing or does not load never stops a start that does not need it.
 */
import type { Logger } from 'pino';
import type { HttpTransportChoice } from '../../config/types.js';
import { ListenError } from '../../errors.js';
import type { HttpTransport } from './transport-contract.js';

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
