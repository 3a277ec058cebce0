/**
 * The route table: finds the route for a request (404 under `/api/`, 405 with `Allow`, CORS preflights,
 * everything else to the static fallback), runs its guard before the body is read, then its handler, and
 * counts the answers for /metrics. Talking to uWS is exchange.ts's job, reading bodies body.ts's, and
 * what an answer or an error looks like reply.ts's.
 */
import type { Logger } from 'pino';
import { MethodNotAllowedError, NotFoundError, UriTooLongError } from '../errors.js';
import { checkHost } from './allowed-hosts.js';
import { readBody } from './body.js';
import type { ClientAddress } from './client-address.js';
import { copyRequest, Exchange, PendingAnswers, type Tally } from './exchange.js';
import { CORS_PREFLIGHT, envelope, RawReply, StreamReply } from './reply.js';
import type { RequestCtx } from './request.js';
import type { HttpRequest, HttpResponse, TemplatedApp } from './uws.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

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

export interface RequestCount {
  route: string;
  method: string;
  /** An HTTP status, or `aborted` when the client went away before the answer. */
  status: string;
  count: number;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof value === 'object' && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

export class Router {
  private readonly table = new Map<string, Map<string, Route>>();
  /** `route \0 method \0 status` -> requests answered. Bounded: routes x methods x statuses. */
  private readonly counts = new Map<string, number>();
  private readonly tally: Tally = (ex, status) => {
    if (ex.counted) return;
    ex.counted = true;
    const key = `${ex.label}\u0000${ex.countedMethod}\u0000${status}`;
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
    const { ctx, check } = copyRequest(req, res, this.options.clientAddress);
    const ex = new Exchange(res, ctx, this.tally, this.pending, this.options.logger);
    try {
      const urlBytes = Buffer.byteLength(ctx.path) + (ctx.rawQuery.length > 0 ? ctx.rawQuery.length + 1 : 0);
      if (urlBytes > this.options.urlBytesMax) {
        throw new UriTooLongError(`request URL is ${urlBytes} bytes, more than the limit of ${this.options.urlBytesMax}`);
      }
      check();
      // Before routing and every guard: a rebound page must not reach a credential check.
      if (this.options.allowedHosts !== undefined && this.options.allowedHosts.size > 0) checkHost(ctx.header('host'), this.options.allowedHosts);
      const route = this.resolve(ex);
      if (route === undefined) return ex.writeRaw(CORS_PREFLIGHT);
      route.guard?.(ctx);
      if (ctx.method === 'GET' || ctx.method === 'HEAD') return this.run(ex, route);
      readBody(ex, this.options.bodyBytesMax, () => this.run(ex, route));
    } catch (err) {
      ex.writeError(err);
    }
  }

  /** The route for the request; undefined means "answer a CORS preflight". Throws 404/405. */
  private resolve(ex: Exchange): Route | undefined {
    const ctx = ex.ctx;
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

  private run(ex: Exchange, route: Route): void {
    let result: unknown;
    try {
      result = route.handler(ex.ctx);
    } catch (err) {
      ex.writeError(err);
      return;
    }
    if (isPromiseLike(result)) {
      ex.hookAbort();
      result.then(
        (value) => reply(ex, value),
        (err: unknown) => ex.writeError(err),
      );
    } else {
      reply(ex, result);
    }
  }
}

function reply(ex: Exchange, value: unknown): void {
  if (value instanceof RawReply) return ex.writeRaw(value);
  if (value instanceof StreamReply) return ex.writeStream(value);
  ex.writeJson(200, envelope(value));
}
