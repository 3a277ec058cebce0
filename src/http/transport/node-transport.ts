/**
 * The node:http transport (node:https with TLS), for platforms where no uWS binary loads (musl, Node 24+).
 * It serves the same routes with the same answers: header lines are read raw (node's `req.headers` keeps
 * the first of some repeated headers, which would hide a conflict from exchange.ts), answers carry their
 * Content-Length, `close` answers end the connection, requests node's parser refuses get a JSON envelope
 * instead of node's bare 400, and the live WebSocket is answered 501 (live-ws.ts).
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ListenError } from '../../errors.js';
import { splitAbsoluteForm } from '../core/allowed-hosts.js';
import { REFUSAL } from '../guards/connections.js';
import { isLiveWsUpgrade, refuseLiveWs } from '../live/live-ws.js';
import { JSON_HEADERS, statusLine } from '../core/reply.js';
import { hostPort, type HttpTransport, type TransportServer, type TransportServerOptions } from './transport-contract.js';
import { HEADER_BYTES_MAX, HEADER_LINES_MAX, type HeaderPairs, IDLE_TIMEOUT_S, type TransportRequest, type TransportResponse } from '../core/wire.js';

const EMPTY = Buffer.alloc(0);
/**
 * A connection we answer before any request (a refusal, a 408 or 400 from the parser) is destroyed this
 * long after its answer: time for the client to read it, but no longer, whether or not it closes its side.
 */
const CLOSE_LINGER_MS = 1000;

class NodeRequest implements TransportRequest {
  readonly method: string;
  readonly path: string;
  readonly rawQuery: string;
  /** The authority of an absolute-form target, which stands in for the Host header. */
  private readonly targetHost: string | undefined;

  constructor(private readonly req: IncomingMessage) {
    this.method = req.method ?? 'GET';
    let url = req.url ?? '/';
    // node accepts absolute-form targets (uWS answers them 505); origin-form ones start with '/'.
    const absolute = url.startsWith('/') ? undefined : splitAbsoluteForm(url);
    if (absolute !== undefined) url = absolute.originForm;
    this.targetHost = absolute?.authority;
    const query = url.indexOf('?');
    this.path = query < 0 ? url : url.slice(0, query);
    this.rawQuery = query < 0 ? '' : url.slice(query + 1);
  }

  forEachHeader(visit: (name: string, value: string) => void): void {
    const raw = this.req.rawHeaders;
    const target = this.targetHost;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      if (target === undefined || name !== 'host') visit(name, raw[i + 1]);
    }
    if (target !== undefined) visit('host', target);
  }
}

class NodeResponse implements TransportResponse {
  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
  ) {}

  remoteAddress(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  onAborted(cb: () => void): void {
    let called = false;
    const aborted = (): void => {
      if (called || this.res.writableEnded) return;
      called = true;
      cb();
    };
    this.res.once('close', aborted);
    // Gone before the route ran (a pipelined request behind a closed connection): 'close' came already.
    if (this.req.socket.destroyed) process.nextTick(aborted);
  }

  onData(cb: (chunk: Buffer, isLast: boolean) => void): void {
    // A body that stops arriving closes the connection, as in uWS (node's socketOnTimeout destroys it).
    const socket = this.req.socket;
    socket.setTimeout(IDLE_TIMEOUT_S * 1000);
    this.req.on('data', (chunk: Buffer) => cb(chunk, false));
    this.req.once('end', () => {
      socket.setTimeout(0);
      cb(EMPTY, true);
    });
    // An upload cut short: onAborted tells the exchange.
    this.req.on('error', () => {});
  }

  /** While we hold the body back, its silence is ours, not the client's: no idle timeout. */
  pause(): void {
    this.req.pause();
    this.req.socket.setTimeout(0);
  }

  resume(): void {
    this.req.socket.setTimeout(IDLE_TIMEOUT_S * 1000);
    this.req.resume();
  }

  end(status: number, headers: HeaderPairs, body: string | Uint8Array, options: { head?: boolean; close?: boolean } = {}): void {
    const res = this.res;
    for (const [key, value] of headers) res.setHeader(key, value);
    res.setHeader('Content-Length', typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength);
    if (options.close === true) res.setHeader('Connection', 'close');
    res.writeHead(status);
    if (options.head === true) res.end();
    else res.end(body);
  }

  startStream(status: number, headers: HeaderPairs): void {
    for (const [key, value] of headers) this.res.setHeader(key, value);
    this.res.writeHead(status);
  }

  write(chunk: string | Uint8Array): boolean {
    return this.res.write(chunk);
  }

  onWritable(cb: () => void): void {
    this.res.on('drain', cb);
  }

  endStream(): void {
    this.res.end();
  }

  close(): void {
    this.res.destroy();
  }
}

/**
 * A whole HTTP/1.1 answer as bytes, for sockets that have no ServerResponse (refused, unparsable);
 * `head`: without the body (the request was HEAD).
 */
function rawAnswer(status: number, headers: HeaderPairs, body: string, head = false): string {
  const lines = headers.map(([key, value]) => `${key}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${statusLine(status)}\r\n${lines}Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`;
}

/**
 * What node's parser refused, as our error envelope (node's own answer is a bare 400 without a body).
 * node is stricter than uWS here: raw bytes over 0x7F in the URL, for one, are a 400 (docs/deploy.md).
 */
function clientErrorAnswer(err: NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer }): string {
  let status = 400;
  let msg = `the request is not valid HTTP/1.1: ${err.reason ?? err.code ?? err.message}`;
  if (err.code === 'HPE_HEADER_OVERFLOW') {
    status = 431;
    msg = `the request's header block is larger than ${HEADER_BYTES_MAX} bytes`;
  } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    status = 408;
    msg = 'the request headers did not arrive in time';
  }
  const head = err.rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
  return rawAnswer(status, JSON_HEADERS, JSON.stringify({ code: status, msg, data: null }), head);
}

/**
 * Writes `answer` and ends the connection fully. `end()` alone only sends our FIN: node:http sockets are
 * half-open (allowHalfOpen), so a client that never closes its side would keep the socket, its fd and its
 * max_connections slot. The timer is a plain one, not the socket's idle timeout, which every byte a
 * trickling client sends would push back.
 */
function answerAndClose(socket: Duplex, answer: string): void {
  socket.end(answer);
  const timer = setTimeout(() => socket.destroy(), CLOSE_LINGER_MS);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}

/** An answer before routing (not counted in the request counts, like uWS's own refusals). */
function refuse(res: TransportResponse, status: number, msg: string): void {
  res.end(status, JSON_HEADERS, JSON.stringify({ code: status, msg, data: null }), { close: true });
}

function listenFailure(err: NodeJS.ErrnoException): string {
  if (err.code === 'EADDRINUSE' || err.code === 'EADDRNOTAVAIL') return 'the port is in use or the address is not available';
  if (err.code === 'EACCES') return 'permission denied (ports below 1024 need CAP_NET_BIND_SERVICE)';
  return err.message;
}

function createNodeServer(o: TransportServerOptions): http.Server {
  const options: http.ServerOptions = {
    maxHeaderSize: HEADER_BYTES_MAX,
    keepAliveTimeout: IDLE_TIMEOUT_S * 1000,
    headersTimeout: IDLE_TIMEOUT_S * 1000,
    connectionsCheckingInterval: 2000,
    // node's default (300 s for a whole request) would cut a large restore upload; uWS has no such limit.
    requestTimeout: 0,
    // node's own answer is a bare 400; ours below is the envelope.
    requireHostHeader: false,
  };
  if (o.tls === undefined) return http.createServer(options);
  try {
    return https.createServer({ ...options, cert: o.tls.cert, key: o.tls.key, passphrase: o.tls.passphrase });
  } catch (err) {
    throw new ListenError(`node:https could not set up TLS with tls_cert_file ${o.tls.certFile} and tls_key_file ${o.tls.keyFile}: ${(err as Error).message}`);
  }
}

export const nodeTransport: HttpTransport = {
  name: 'node',
  createServer(o: TransportServerOptions): TransportServer {
    const server = createNodeServer(o);
    const refused = new WeakSet<Duplex>();
    // With TLS, a connection counts once its handshake is done (node:https's handshakeTimeout bounds
    // the others), so that the 503 can be written over TLS.
    server.on(o.tls === undefined ? 'connection' : 'secureConnection', (socket: Socket) => {
      socket.once('close', () => o.connections.closed());
      if (o.connections.opened()) return;
      refused.add(socket);
      answerAndClose(socket, rawAnswer(REFUSAL.status, REFUSAL.headers, REFUSAL.body));
    });
    server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
      // As node's own handler: no answer when the socket is gone or an answer has already begun on it.
      const current = (socket as { _httpMessage?: ServerResponse })._httpMessage;
      if (err.code === 'ECONNRESET' || !socket.writable || refused.has(socket) || current?.headersSent === true) {
        socket.destroy();
        return;
      }
      // A 408 for an idle or header-trickling client (headersTimeout), a 400 or 431 for one node cannot parse.
      answerAndClose(socket, clientErrorAnswer(err));
    });
    server.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (refused.has(req.socket)) return;
      const wireReq = new NodeRequest(req);
      const wireRes = new NodeResponse(req, res);
      // node keeps the first 2000 header lines (maxHeadersCount), which is enough to see one too many.
      if (req.rawHeaders.length > HEADER_LINES_MAX * 2) return refuse(wireRes, 431, `the request has more than ${HEADER_LINES_MAX} header lines`);
      if (req.httpVersion === '1.1' && req.headers.host === undefined) return refuse(wireRes, 400, 'the request has no Host header, which HTTP/1.1 requires');
      // node:http has no WebSocket, and without an 'upgrade' listener node hands the upgrade over as a request.
      if (o.liveWs !== undefined && isLiveWsUpgrade(wireReq.path, req.headers.upgrade)) return refuseLiveWs(wireReq, wireRes, o.liveWs);
      o.onRequest(wireReq, wireRes);
    });
    return {
      listen(host, port) {
        return new Promise<number>((resolve, reject) => {
          const failed = (err: NodeJS.ErrnoException): void => reject(new ListenError(`cannot listen on ${hostPort(host, port)}: ${listenFailure(err)}`));
          server.once('error', failed);
          // `exclusive`: not shared with cluster workers; node never sets SO_REUSEPORT, so a second
          // process on the same port fails with EADDRINUSE.
          server.listen({ host, port, exclusive: true }, () => {
            server.off('error', failed);
            resolve((server.address() as AddressInfo).port);
          });
        });
      },
      stopListening() {
        if (server.listening) server.close();
      },
      closeConnections() {
        server.closeAllConnections();
      },
    };
  },
};
