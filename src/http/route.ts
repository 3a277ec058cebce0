/**
 * The one place that talks to uWS request/response objects. It owns the uWS crash traps
 * (ecosystem.md 2.3): everything is read from `req` synchronously before any handler runs, `onAborted`
 * is attached before anything asynchronous, every write goes through `cork` with `writeStatus` first,
 * streamed bodies respect backpressure, and nothing touches `res` after an abort or after it ended.
 * Handlers return plain data (wrapped in the success envelope), a RawReply or a StreamReply, or throw;
 * any EdgeError becomes `{code: status, msg: message, data: null}` with that HTTP status, anything else
 * a logged 500 `internal error`.
 */
import type { Logger } from 'pino';
import {
  EdgeError,
  InvalidArgumentError,
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  UriTooLongError,
} from '../errors.js';
import { checkHost } from './allowed-hosts.js';
import type { ClientAddress } from './client-address.js';
import { parseQueryString, type QueryParams } from './params.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

const STATUS_TEXT: Record<number, string> = {
  200: 'OK', 204: 'No Content', 304: 'Not Modified', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict', 413: 'Payload Too Large', 414: 'URI Too Long',
  415: 'Unsupported Media Type', 421: 'Misdirected Request', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
};

export function statusLine(status: number): string {
  return `${status} ${STATUS_TEXT[status] ?? 'Status'}`;
}

/** Everything a handler may know about the request, copied out of uWS before the handler runs. */
export class RequestCtx {
  body: Buffer = EMPTY;
  /** Set by the router for routes that answer cross-origin requests. */
  cors = false;
  private parsedQuery: QueryParams | undefined;
  private remote: string | undefined;
  /** Reads the peer address from the uWS response (set by the router). */
  remoteSource: (() => string) | undefined;
  /** `trusted_proxies`: who may name the client in X-Forwarded-For (set by the router). */
  clientAddress: ClientAddress | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {}

  /** Parsed on first use; malformed percent-encoding throws a 400. */
  get query(): QueryParams {
    if (this.parsedQuery === undefined) this.parsedQuery = parseQueryString(this.rawQuery);
    return this.parsedQuery;
  }

  /**
   * The client address as uWS reports it (`127.0.0.1`, `::1`; IPv4-mapped IPv6 is shown as IPv4), or,
   * when that peer is one of `trusted_proxies`, the client it names in X-Forwarded-For.
   * Read on first use; '' when unknown (the client has gone).
   */
  get remoteAddress(): string {
    if (this.remote === undefined) {
      let text = '';
      try {
        text = this.remoteSource?.() ?? '';
      } catch {
        // the response was aborted: the address is no longer available
      }
      const peer = text.startsWith('::ffff:') && text.includes('.') ? text.slice(7) : text;
      this.remote = this.clientAddress?.resolve(peer, this.headers['x-forwarded-for']) ?? peer;
    }
    return this.remote;
  }

  /** Lower-case name. Empty values count as absent. */
  header(name: string): string | undefined {
    const value = this.headers[name];
    return value === undefined || value.length === 0 ? undefined : value;
  }
}

const EMPTY = Buffer.alloc(0);
/** Headers that must not come twice with different values: which one counts would depend on who reads. */
const SINGLE_HEADERS = new Set(['authorization', 'x-api-secret', 'content-length', 'transfer-encoding', 'host', 'content-type']);

/** A complete non-envelope answer (static files, preflight). */
export class RawReply {
  constructor(
    readonly status: number,
    readonly headers: Readonly<Record<string, string>>,
    readonly body: string | Uint8Array,
    /** HEAD: send the headers and the length of `body`, not the body. */
    readonly headOnly = false,
  ) {}
}

/** What a streaming producer writes to. */
export interface StreamSink {
  /** false: the chunk is buffered but the client is slow; `await drain()` before writing more. */
  write(chunk: string): boolean;
  /** Resolves when the socket can take more, or at once when the client has gone. */
  drain(): Promise<void>;
  readonly aborted: boolean;
}

/** A 200 answer of unknown length, written chunk by chunk (chunked transfer encoding). */
export class StreamReply {
  constructor(
    readonly headers: Readonly<Record<string, string>>,
    readonly produce: (sink: StreamSink) => Promise<void>,
  ) {}
}

export interface Route {
  method: Method;
  path: string;
  /** Runs synchronously before the body is read (authentication). */
  guard?: (ctx: RequestCtx) => void;
  /** Adds `Access-Control-Allow-Origin: *` and answers OPTIONS preflights. */
  cors?: boolean;
  handler: (ctx: RequestCtx) => unknown;
}

export interface RouterOptions {
  logger: Logger;
  urlBytesMax: number;
  bodyBytesMax: number;
  /** Paths outside the route table and outside `/api/`: GET and HEAD only. */
  fallback: (ctx: RequestCtx) => unknown;
  /** `allowed_hosts`: when not empty, every request must name one of them in `Host` (else 421). */
  allowedHosts?: ReadonlySet<string>;
  /** `trusted_proxies`; without it the peer is the client. */
  clientAddress?: ClientAddress;
}

/** One request's response, tracking whether it may still be written. */
class Exchange {
  private isAborted = false;
  private isFinished = false;
  /** The request was counted in the router's request counts. */
  counted = false;
  /** The route pattern for metrics: a route's path, `/api/*` (no such route), `static` or `none`. */
  label = 'none';
  private hooked = false;
  onAbort: (() => void) | undefined;

  constructor(
    readonly res: HttpResponse,
    readonly method: string,
    private readonly tally: (ex: Exchange, status: number | 'aborted') => void,
    private readonly pending: PendingAnswers,
  ) {}

  /** Must run before the uWS handler returns whenever the answer comes later. */
  hookAbort(): void {
    if (this.hooked) return;
    this.hooked = true;
    this.pending.add(this);
    this.res.onAborted(() => {
      this.aborted = true;
      this.tally(this, 'aborted');
      this.onAbort?.();
    });
  }

  get aborted(): boolean {
    return this.isAborted;
  }

  set aborted(value: true) {
    this.isAborted = value;
    this.pending.delete(this);
  }

  get finished(): boolean {
    return this.isFinished;
  }

  set finished(value: true) {
    this.isFinished = value;
    this.pending.delete(this);
  }

  get open(): boolean {
    return !this.isAborted && !this.isFinished;
  }
}

/** Answers that come later than the uWS handler's return, so a shutdown can wait for them. */
class PendingAnswers {
  private readonly open = new Set<Exchange>();
  private waiters: Array<() => void> = [];

  add(ex: Exchange): void {
    this.open.add(ex);
  }

  delete(ex: Exchange): void {
    if (!this.open.delete(ex) || this.open.size > 0) return;
    for (const resolve of this.waiters.splice(0)) resolve();
  }

  /** Resolves when none is pending, or after `timeoutMs`; true when none is pending. */
  async settled(timeoutMs: number): Promise<boolean> {
    if (this.open.size === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<true>((resolve) => this.waiters.push(() => resolve(true)));
    const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const result = await Promise.race([idle, late]);
    clearTimeout(timer);
    return result;
  }
}

/** The headers of every JSON answer (also the connection gate's 503). */
export const JSON_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Type', 'application/json; charset=utf-8'],
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
];

const CORS_PREFLIGHT: Readonly<Record<string, string>> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'GET, OPTIONS',
  'Access-Control-Allow-Headers': 'X-Api-Secret, Content-Type',
  'Access-Control-Max-Age': '600',
};

export function envelope(data: unknown): string {
  return JSON.stringify({ code: 200, msg: 'Success', data: data === undefined ? null : data });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

/** Methods counted under their own name in the request counts; any other is `OTHER`. */
const COUNTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);

export interface RequestCount {
  route: string;
  method: string;
  /** An HTTP status, or `aborted` when the client went away before the answer. */
  status: string;
  count: number;
}

export class Router {
  private readonly table = new Map<string, Map<string, Route>>();
  /** `route \0 method \0 status` -> requests answered. Bounded: routes x methods x statuses. */
  private readonly counts = new Map<string, number>();
  private readonly tally = (ex: Exchange, status: number | 'aborted'): void => {
    if (ex.counted) return;
    ex.counted = true;
    const key = `${ex.label}\u0000${ex.method}\u0000${status}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  };

  private readonly pending = new PendingAnswers();

  constructor(private readonly options: RouterOptions) {}

  /** Resolves once every request answered asynchronously got its answer, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<boolean> {
    return this.pending.settled(timeoutMs);
  }

  /** Requests answered so far, by route pattern, method and status (for /metrics). */
  requestCounts(): RequestCount[] {
    const out: RequestCount[] = [];
    for (const [key, count] of this.counts) {
      const [route, method, status] = key.split('\u0000');
      out.push({ route, method, status, count });
    }
    return out;
  }

  /** Every registered route: method and path (fuzzing, documentation). */
  routes(): Array<{ method: Method; path: string }> {
    const out: Array<{ method: Method; path: string }> = [];
    for (const [path, byMethod] of this.table) for (const method of byMethod.keys()) out.push({ method: method as Method, path });
    return out;
  }

  add(route: Route): this {
    let byMethod = this.table.get(route.path);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.table.set(route.path, byMethod);
    }
    if (byMethod.has(route.method)) throw new Error(`route defined twice: ${route.method} ${route.path}`);
    byMethod.set(route.method, route);
    return this;
  }

  attach(app: TemplatedApp): void {
    app.any('/*', (res, req) => this.handle(res, req));
  }

  private handle(res: HttpResponse, req: HttpRequest): void {
    // 1. Copy everything out of `req`: it is invalid once this function returns.
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const headers: Record<string, string> = {};
    let conflict: string | undefined;
    req.forEach((key, value) => {
      if (headers[key] !== undefined && headers[key] !== value && SINGLE_HEADERS.has(key)) conflict ??= key;
      // Several X-Forwarded-For headers are one list (RFC 9110 5.3); every other header: the last counts.
      headers[key] = key === 'x-forwarded-for' && headers[key] !== undefined ? `${headers[key]}, ${value}` : value;
    });
    const ex = new Exchange(res, COUNTED_METHODS.has(method) ? method : 'OTHER', this.tally, this.pending);
    const ctx = new RequestCtx(method, path, rawQuery, headers);
    ctx.remoteSource = () => Buffer.from(res.getRemoteAddressAsText()).toString();
    ctx.clientAddress = this.options.clientAddress;
    try {
      const urlBytes = Buffer.byteLength(path) + (rawQuery.length > 0 ? rawQuery.length + 1 : 0);
      if (urlBytes > this.options.urlBytesMax) {
        throw new UriTooLongError(`request URL is ${urlBytes} bytes, more than the limit of ${this.options.urlBytesMax}`);
      }
      if (conflict !== undefined) throw new InvalidArgumentError(`the request has two ${conflict} headers with different values`);
      // Before routing and every guard: a rebound page must not reach a credential check.
      if (this.options.allowedHosts !== undefined && this.options.allowedHosts.size > 0) checkHost(ctx.header('host'), this.options.allowedHosts);
      const route = this.resolve(ctx, ex);
      if (route === undefined) return this.writeRaw(ex, ctx, new RawReply(204, CORS_PREFLIGHT, ''));
      route.guard?.(ctx);
      if (method === 'GET' || method === 'HEAD') return this.run(ex, ctx, route);
      this.readBody(ex, ctx, route);
    } catch (err) {
      this.fail(ex, ctx, err);
    }
  }

  /** The route for the request; undefined means "answer a CORS preflight". Throws 404/405. */
  private resolve(ctx: RequestCtx, ex: Exchange): Route | undefined {
    let path = ctx.path;
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    const byMethod = this.table.get(path);
    if (byMethod !== undefined) {
      ex.label = path;
      const route = byMethod.get(ctx.method);
      if (route !== undefined) {
        ctx.cors = route.cors === true;
        return route;
      }
      const allowed = [...byMethod.keys()];
      if (ctx.method === 'OPTIONS' && [...byMethod.values()].some((r) => r.cors === true)) {
        ctx.cors = true;
        return undefined;
      }
      throw new MethodNotAllowedError(`method ${ctx.method} is not allowed on ${path}; use ${allowed.join(' or ')}`, allowed);
    }
    if (path === '/api' || path.startsWith('/api/')) {
      ex.label = '/api/*';
      throw new NotFoundError(`no such route: ${path}`);
    }
    ex.label = 'static';
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new MethodNotAllowedError(`method ${ctx.method} is not allowed on ${path}; use GET or HEAD`, ['GET', 'HEAD']);
    }
    return { method: 'GET', path, handler: this.options.fallback };
  }

  private readBody(ex: Exchange, ctx: RequestCtx, route: Route): void {
    const limit = this.options.bodyBytesMax;
    const declared = ctx.header('content-length');
    if (declared !== undefined && /^[0-9]+$/.test(declared) && Number(declared) > limit) {
      throw new PayloadTooLargeError(`request body is ${declared} bytes, more than the limit of ${limit}`);
    }
    ex.hookAbort();
    const chunks: Buffer[] = [];
    let size = 0;
    ex.res.onData((chunk, isLast) => {
      if (!ex.open) return;
      size += chunk.byteLength;
      if (size > limit) {
        chunks.length = 0;
        this.fail(ex, ctx, new PayloadTooLargeError(`request body is more than the limit of ${limit} bytes`));
        return;
      }
      // uWS neuters the ArrayBuffer after this callback: copy it.
      if (chunk.byteLength > 0) chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast) {
        ctx.body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
        this.run(ex, ctx, route);
      }
    });
  }

  private run(ex: Exchange, ctx: RequestCtx, route: Route): void {
    let result: unknown;
    try {
      result = route.handler(ctx);
    } catch (err) {
      this.fail(ex, ctx, err);
      return;
    }
    if (isPromiseLike(result)) {
      ex.hookAbort();
      result.then(
        (value) => this.reply(ex, ctx, value),
        (err: unknown) => this.fail(ex, ctx, err),
      );
    } else {
      this.reply(ex, ctx, result);
    }
  }

  private reply(ex: Exchange, ctx: RequestCtx, value: unknown): void {
    if (value instanceof RawReply) return this.writeRaw(ex, ctx, value);
    if (value instanceof StreamReply) return this.stream(ex, ctx, value);
    this.writeJson(ex, ctx, 200, envelope(value));
  }

  private writeJson(ex: Exchange, ctx: RequestCtx, status: number, body: string, extra?: Record<string, string>, close = false): void {
    if (!ex.open) return;
    ex.finished = true;
    this.tally(ex, status);
    const res = ex.res;
    res.cork(() => {
      res.writeStatus(statusLine(status));
      for (const [key, value] of JSON_HEADERS) res.writeHeader(key, value);
      if (ctx.cors) res.writeHeader('Access-Control-Allow-Origin', '*');
      if (extra !== undefined) for (const key in extra) res.writeHeader(key, extra[key]);
      // uWS does not strip bodies from answers to HEAD: a body there would be read as the next response.
      if (ctx.method === 'HEAD') endHead(res, Buffer.byteLength(body));
      else res.end(body, close);
    });
  }

  private writeRaw(ex: Exchange, ctx: RequestCtx, reply: RawReply): void {
    if (!ex.open) return;
    ex.finished = true;
    this.tally(ex, reply.status);
    const res = ex.res;
    res.cork(() => {
      res.writeStatus(statusLine(reply.status));
      if (ctx.cors && reply.headers['Access-Control-Allow-Origin'] === undefined) {
        res.writeHeader('Access-Control-Allow-Origin', '*');
      }
      for (const key in reply.headers) res.writeHeader(key, reply.headers[key]);
      if (reply.headOnly || ctx.method === 'HEAD') {
        endHead(res, typeof reply.body === 'string' ? Buffer.byteLength(reply.body) : reply.body.byteLength);
      } else res.end(reply.body);
    });
  }

  private stream(ex: Exchange, ctx: RequestCtx, reply: StreamReply): void {
    if (!ex.open) return;
    ex.hookAbort();
    const res = ex.res;
    let headWritten = false;
    let resume: (() => void) | undefined;
    const wake = (): void => {
      const fn = resume;
      resume = undefined;
      fn?.();
    };
    ex.onAbort = wake;
    res.onWritable(() => {
      wake();
      return true;
    });
    const writeHead = (): void => {
      headWritten = true;
      this.tally(ex, 200);
      res.writeStatus('200 OK');
      res.writeHeader('X-Content-Type-Options', 'nosniff');
      res.writeHeader('Cache-Control', 'no-store');
      for (const key in reply.headers) res.writeHeader(key, reply.headers[key]);
    };
    const sink: StreamSink = {
      get aborted() {
        return !ex.open;
      },
      write(chunk: string): boolean {
        if (!ex.open) return false;
        let ok = true;
        res.cork(() => {
          if (!headWritten) writeHead();
          ok = res.write(chunk);
        });
        return ok;
      },
      drain(): Promise<void> {
        if (!ex.open) return Promise.resolve();
        return new Promise<void>((resolve) => {
          resume = resolve;
        });
      },
    };
    reply.produce(sink).then(
      () => {
        if (!ex.open) return;
        ex.finished = true;
        res.cork(() => {
          if (!headWritten) writeHead();
          res.end();
        });
      },
      (err: unknown) => {
        if (!ex.open) return;
        if (!headWritten) return this.fail(ex, ctx, err);
        // Too late for a status: cut the connection so the client sees a truncated transfer.
        this.options.logger.error({ err, path: ctx.path }, 'stream failed after the response started');
        ex.finished = true;
        res.close();
      },
    );
  }

  private fail(ex: Exchange, ctx: RequestCtx, err: unknown): void {
    if (!ex.open) return;
    let status = 500;
    let msg = 'internal error';
    let data: unknown = null;
    const extra: Record<string, string> = {};
    if (err instanceof EdgeError) {
      status = err.status;
      msg = err.message;
      data = err.data;
      Object.assign(extra, err.headers());
      if (status >= 500) this.options.logger.warn({ path: ctx.path, code: err.code }, err.message);
      else if (this.options.logger.isLevelEnabled('debug')) {
        this.options.logger.debug({ method: ctx.method, path: ctx.path, status }, err.message);
      }
    } else {
      this.options.logger.error({ err, method: ctx.method, path: ctx.path }, 'request handler failed');
    }
    // An unread request body would otherwise stay on the connection.
    const close = status === 413 || (ctx.body === EMPTY && ctx.method !== 'GET' && hasBody(ctx));
    this.writeJson(ex, ctx, status, JSON.stringify({ code: status, msg, data }), extra, close);
  }
}

/**
 * Ends an answer to HEAD: the length the body would have, no body. In this uWS build
 * `endWithoutBody(length)` (with an argument) sends nothing at all and leaves the request hanging, so
 * the header is written by hand and `endWithoutBody()` is called without arguments.
 */
function endHead(res: HttpResponse, length: number): void {
  res.writeHeader('Content-Length', String(length));
  res.endWithoutBody();
}

function hasBody(ctx: RequestCtx): boolean {
  const length = ctx.header('content-length');
  return (length !== undefined && length !== '0') || ctx.header('transfer-encoding') !== undefined;
}

/** Stateless between calls: a non-streaming decode() resets it, also after an error. */
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** The request body as text; 400 `<what> is not valid UTF-8` otherwise. */
export function utf8Body(ctx: RequestCtx, what: string): string {
  try {
    return UTF8.decode(ctx.body);
  } catch {
    throw new InvalidArgumentError(`${what} is not valid UTF-8`);
  }
}

/** Throws 400 unless the body is a JSON object; returns it. */
export function jsonBody(ctx: RequestCtx): Record<string, unknown> {
  if (ctx.body.length === 0) throw new InvalidArgumentError('request body must be a JSON object, got an empty body');
  const text = utf8Body(ctx, 'request body');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InvalidArgumentError(`request body is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError('request body must be a JSON object');
  }
  return value as Record<string, unknown>;
}
