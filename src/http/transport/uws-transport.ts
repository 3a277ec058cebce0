/**
 * The uWebSockets.js transport: the one place that touches uWS request, response and socket objects, so
 * it owns uWS's crash traps (ecosystem.md 2.3). `req` is read before the handler returns (it is invalid
 * after that); every write goes through `cork` with the status first; body chunks are views that the
 * exchange copies during the callback (uWS neuters their ArrayBuffer after it); HEAD answers are ended by hand. exchange.ts makes sure nothing
 * touches a response after an abort or after it ended.
 */
import { ListenError } from '../../errors.js';
import { REFUSAL } from '../guards/connections.js';
import { acceptLiveWsUpgrade, LIVE_WS_PATH, type LiveWsOptions, LiveWsSession, WS_BACKPRESSURE_BYTES, WS_IDLE_TIMEOUT_S, WS_MESSAGE_BYTES_MAX } from '../live/live-ws.js';
import { statusLine } from '../core/reply.js';
import type { TlsSetup } from './tls.js';
import { hostPort, type HttpTransport, type TransportServer, type TransportServerOptions } from './transport-contract.js';
import uWS, { type HttpRequest, type HttpResponse, listenExclusive, type TemplatedApp, type us_listen_socket } from './uws.js';
import type { HeaderPairs, TransportRequest, TransportResponse } from '../core/wire.js';

const EMPTY = Buffer.alloc(0);

/**
 * Frozen header pairs (the kept ones: RawReply.headerPairs) as bytes, encoded once: uWS converts every
 * string it is given to UTF-8 in a fresh allocation, and a polled answer would pay that for each header.
 */
const encodedHeaders = new WeakMap<HeaderPairs, ReadonlyArray<readonly [Buffer, Buffer]>>();

function headerBytes(headers: HeaderPairs): ReadonlyArray<readonly [string | Buffer, string | Buffer]> {
  if (!Object.isFrozen(headers)) return headers;
  let encoded = encodedHeaders.get(headers);
  if (encoded === undefined) {
    encoded = headers.map(([key, value]) => [Buffer.from(key), Buffer.from(value)] as const);
    encodedHeaders.set(headers, encoded);
  }
  return encoded;
}

class UwsRequest implements TransportRequest {
  constructor(
    private readonly req: HttpRequest,
    /** Set when the uWS route already tells the method (GET): no call into uWS and no upper-casing. */
    private readonly knownMethod?: string,
  ) {}

  get method(): string {
    return this.knownMethod ?? this.req.getMethod().toUpperCase();
  }

  get path(): string {
    return this.req.getUrl();
  }

  get rawQuery(): string {
    return this.req.getQuery() ?? '';
  }

  forEachHeader(visit: (name: string, value: string) => void): void {
    this.req.forEach(visit);
  }
}

class UwsResponse implements TransportResponse {
  /** A streamed answer's status and headers, written with its first chunk (in the same cork). */
  private head: { status: number; headers: HeaderPairs } | undefined;

  constructor(private readonly res: HttpResponse) {}

  remoteAddress(): string {
    return Buffer.from(this.res.getRemoteAddressAsText()).toString();
  }

  onAborted(cb: () => void): void {
    this.res.onAborted(cb);
  }

  onData(cb: (chunk: Buffer, isLast: boolean) => void): void {
    // A view, not a copy: uWS neuters the ArrayBuffer after this callback, and the callee copies what it keeps.
    this.res.onData((chunk, isLast) => cb(chunk.byteLength === 0 ? EMPTY : Buffer.from(chunk), isLast));
  }

  pause(): void {
    this.res.pause();
  }

  resume(): void {
    this.res.resume();
  }

  end(status: number, headers: HeaderPairs, body: string | Uint8Array, options?: { head?: boolean; close?: boolean }): void {
    const res = this.res;
    res.cork(() => {
      // uWS writes `200 OK` when no status is written: one call less on every successful answer.
      if (status !== 200) res.writeStatus(statusLine(status));
      const pairs = headerBytes(headers);
      for (let i = 0; i < pairs.length; i++) res.writeHeader(pairs[i][0], pairs[i][1]);
      // uWS does not strip bodies from answers to HEAD: a body there would be read as the next response.
      // In this uWS build `endWithoutBody(length)` (with an argument) sends nothing at all and leaves the
      // request hanging, so the length is written by hand and `endWithoutBody()` has no argument.
      if (options?.head === true) {
        res.writeHeader('Content-Length', String(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength));
        res.endWithoutBody();
      } else res.end(body, options?.close === true);
    });
  }

  startStream(status: number, headers: HeaderPairs): void {
    this.head = { status, headers };
  }

  write(chunk: string | Uint8Array): boolean {
    let ok = true;
    this.res.cork(() => {
      this.writeHead();
      ok = this.res.write(chunk);
    });
    return ok;
  }

  onWritable(cb: () => void): void {
    this.res.onWritable(() => {
      cb();
      return true;
    });
  }

  endStream(): void {
    this.res.cork(() => {
      this.writeHead();
      this.res.end();
    });
  }

  close(): void {
    this.res.close();
  }

  private writeHead(): void {
    if (this.head === undefined) return;
    this.res.writeStatus(statusLine(this.head.status));
    for (const [key, value] of this.head.headers) this.res.writeHeader(key, value);
    this.head = undefined;
  }
}

function createApp(tls: TlsSetup | undefined): TemplatedApp {
  if (tls === undefined) return uWS.App();
  try {
    return uWS.SSLApp({ cert_file_name: tls.certFile, key_file_name: tls.keyFile, ...(tls.passphrase === undefined ? {} : { passphrase: tls.passphrase }) });
  } catch (err) {
    // loadTls accepted the files, so this is something OpenSSL in uWS refuses that node:crypto does not.
    throw new ListenError(`uWebSockets.js could not set up TLS with tls_cert_file ${tls.certFile} and tls_key_file ${tls.keyFile}: ${(err as Error).message}`);
  }
}

/** uWS's `app.filter` is called with +1 when a socket opens and -1 when it closes. */
function attachConnectionGate(app: TemplatedApp, o: TransportServerOptions): void {
  app.filter((res, delta) => {
    if (delta < 0) return o.connections.closed();
    if (o.connections.opened()) return;
    try {
      new UwsResponse(res).end(REFUSAL.status, REFUSAL.headers, REFUSAL.body, { close: true });
    } catch {
      // The socket went away under us: nothing to answer.
    }
  });
}

function attachLiveWs(app: TemplatedApp, liveWs: LiveWsOptions): void {
  app.ws<{ session: LiveWsSession | undefined }>(LIVE_WS_PATH, {
    maxPayloadLength: WS_MESSAGE_BYTES_MAX,
    maxBackpressure: WS_BACKPRESSURE_BYTES,
    idleTimeout: WS_IDLE_TIMEOUT_S,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      if (!acceptLiveWsUpgrade(new UwsRequest(req), new UwsResponse(res), liveWs)) return;
      res.upgrade({ session: undefined }, key, protocol, extensions, context);
    },
    open(ws) {
      ws.getUserData().session = new LiveWsSession(liveWs, (texts) => {
        let ok = true;
        ws.cork(() => {
          for (const text of texts) if (ws.send(text, false) !== 1) ok = false;
        });
        return ok;
      });
    },
    message(ws, message) {
      ws.getUserData().session?.message(Buffer.from(message).toString('utf8'));
    },
    drain(ws) {
      if (ws.getBufferedAmount() < WS_BACKPRESSURE_BYTES / 2) ws.getUserData().session?.drained();
    },
    close(ws) {
      ws.getUserData().session?.close();
    },
  });
}

export const uwsTransport: HttpTransport = {
  name: 'uws',
  createServer(o: TransportServerOptions): TransportServer {
    const app = createApp(o.tls);
    attachConnectionGate(app, o);
    if (o.liveWs !== undefined) attachLiveWs(app, o.liveWs);
    // GET has its own uWS route only so that its requests come with the method known (polls are GETs).
    app.get('/*', (res, req) => o.onRequest(new UwsRequest(req, 'GET'), new UwsResponse(res)));
    app.any('/*', (res, req) => o.onRequest(new UwsRequest(req), new UwsResponse(res)));
    let socket: us_listen_socket | undefined;
    return {
      listen(host, port) {
        return new Promise<number>((resolve, reject) => {
          listenExclusive(app, host, port, (listening) => {
            if (listening === false) {
              reject(new ListenError(`cannot listen on ${hostPort(host, port)}: the port is in use or the address is not available`));
              return;
            }
            socket = listening;
            resolve(uWS.us_socket_local_port(listening));
          });
        });
      },
      stopListening() {
        if (socket === undefined) return;
        uWS.us_listen_socket_close(socket);
        socket = undefined;
      },
      closeConnections() {
        // Also ends idle keep-alive connections so the event loop can empty.
        (app as { close?: () => void }).close?.();
      },
    };
  },
};
