/**
 * Loads uWebSockets.js once; only uws-transport.ts imports this, and only when that transport is chosen
 * (transport.ts), so a binary that does not load here fails that import and nothing else. uWS answers
 * requests whose header block (request line included) is larger than UWS_HTTP_MAX_HEADERS_SIZE (default
 * 4 KiB) with its own HTML 431 page before any route runs, and it reads the variable once, when the native
 * library loads. We raise it to HEADER_BYTES_MAX so that our own URL limit (`[http] url_bytes_max`,
 * answered with a JSON 414) is the one clients see. An operator's own value wins.
 */
import type * as UWS from 'uWebSockets.js';
import { HEADER_BYTES_MAX } from '../core/wire.js';

if (process.env.UWS_HTTP_MAX_HEADERS_SIZE === undefined) {
  process.env.UWS_HTTP_MAX_HEADERS_SIZE = String(HEADER_BYTES_MAX);
}

const uWS: typeof UWS = await import('uWebSockets.js');

// Without this every answer carries `uWebSockets: 20`, naming the server library and its major version
// to anyone. `_cfg('silent')` is the runtime switch for uWS's compile-time UWS_HTTPRESPONSE_NO_WRITEMARK
// (undeclared in the typings). It does not reach the HTML pages uWS writes itself for requests it
// refuses before any route runs (HTTP/1.0, header block over the limit, unparsable): see docs/security.md.
(uWS as unknown as { _cfg(key: string): void })._cfg('silent');

export default uWS;
export type { AppOptions, HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';

type ListenCallback = (socket: UWS.us_listen_socket | false) => void;
/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT (a non-exported enum member in the typings). */
const LISTEN_EXCLUSIVE_PORT = 1;

/**
 * Listens on host:port without SO_REUSEPORT: uWS shares a port between processes unless told not to, so
 * a second instance would silently split the traffic with the first. The native listen takes
 * (host, port, options, cb); the shipped typings declare only (port, options, cb).
 */
export function listenExclusive(app: UWS.TemplatedApp, host: string, port: number, cb: ListenCallback): void {
  const listen = app.listen as unknown as (host: string, port: number, options: number, cb: ListenCallback) => UWS.TemplatedApp;
  listen.call(app, host, port, LISTEN_EXCLUSIVE_PORT, cb);
}
