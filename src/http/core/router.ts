/**
 * The route table: finds the route for a request (404 under `/api/`, 405 with `Allow`, CORS preflights,
 * everything else to the static fallback), runs its guard before the body is read, then its handler, and
 * counts the answers for /metrics. The transport (transport.ts) hands it each request; writing answers
 * is exchange.ts's job, reading bodies body.ts's, and what an answer or an error looks like reply.ts's.
 *
 * Routes are declared one way, in groups that state their path prefix and guard once (fastify's plugin
 * prefix plus an onRequest hook):
 *
 *   router.group({ prefix: '/api/v1/schema', guard: admin }, (g) => {
 *     g.get('/list', () => registry.list().map(modelView));
 *   });
 *
 * A group cannot be declared without a guard; a route open to anyone uses PUBLIC, so that is a choice
 * written down, not a line forgotten. `routes()` lists every route with its guard (test/http/routes.test.ts
 * checks that table).
 */
import type { Logger } from 'pino';
import { MethodNotAllowedError, NotFoundError, UriTooLongError } from '../../errors.js';
import { checkHost } from './allowed-hosts.js';
import { readBody } from './body.js';
import type { ClientAddress } from './client-address.js';
import { copyRequest, Exchange, PendingAnswers, type Tally } from './exchange.js';
import { CORS_PREFLIGHT, envelope, JsonReply, RawReply, StreamReply } from './reply.js';
import type { RequestCtx } from './request.js';
import type { TransportRequest, TransportResponse } from './wire.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'DELETE';

/** Who may call a route: runs synchronously before the body is read, and throws to refuse. */
export interface Guard {
  /** The credential it asks for, as the route table shows it: `admin token`, `data secret`, `public`. */
  readonly who: string;
  check(ctx: RequestCtx): void;
}

/** Open to anyone. */
export const PUBLIC: Guard = { who: 'public', check() {} };

/** Returns data (sent in the envelope), a JsonReply, RawReply or StreamReply, or a promise of one; or throws. */
export type Handler = (ctx: RequestCtx) => unknown;

export interface GroupOptions {
  /** Put in front of every path of the group: `/api/v1/schema` + `/list`. `''` for top-level paths. */
  prefix: string;
  guard: Guard;
  /** Cross-origin reads: adds `Access-Control-Allow-Origin: *` and answers OPTIONS preflights. */
  cors?: boolean;
}

export interface RouteOptions {
  /** Uploads of any size (restore, import): the handler reads `ctx.bodyStream` instead of `ctx.body`, no body limit. */
  streamBody?: boolean;
}

/** Declares the routes of one group; each path is relative to the group's prefix. */
export interface RouteGroup {
  get(path: string, handler: Handler): void;
  post(path: string, handler: Handler, options?: RouteOptions): void;
  put(path: string, handler: Handler): void;
  delete(path: string, handler: Handler): void;
}

interface Route {
  method: Method;
  path: string;
  guard: Guard;
  cors: boolean;
  handler: Handler;
  streamBody?: boolean;
}

/** A row of the route table, for /metrics labels, fuzzing and the guard test. */
export interface RouteInfo {
  method: Method;
  path: string;
  /** The guard's `who`. */
  guard: string;
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
  /**
   * Route pattern -> method -> status -> requests answered. Bounded: routes x methods x statuses. Nested
   * rather than one joined key: counting happens on every request, and a joined key is a new string each time.
   */
  private readonly counts = new Map<string, Map<string, Map<number | 'aborted', number>>>();
  private readonly tally: Tally = (ex, status) => {
    if (ex.counted) return;
    ex.counted = true;
    let byMethod = this.counts.get(ex.label);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.counts.set(ex.label, byMethod);
    }
    let byStatus = byMethod.get(ex.countedMethod);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(ex.countedMethod, byStatus);
    }
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
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
    for (const [route, byMethod] of this.counts) {
      for (const [method, byStatus] of byMethod) {
        for (const [status, count] of byStatus) out.push({ route, method, status: String(status), count });
      }
    }
    return out;
  }

  /** Every registered route with its guard. */
  routes(): RouteInfo[] {
    const out: RouteInfo[] = [];
    for (const byMethod of this.table.values()) {
      for (const route of byMethod.values()) out.push({ method: route.method, path: route.path, guard: route.guard.who });
    }
    return out;
  }

  /** Declares routes sharing a path prefix, a guard and the CORS choice. */
  group(options: GroupOptions, declare: (group: RouteGroup) => void): this {
    const { prefix, guard, cors = false } = options;
    if (prefix !== '' && (!prefix.startsWith('/') || prefix.endsWith('/'))) {
      throw new Error(`route group prefix must be '' or start with / and not end with one, got ${JSON.stringify(prefix)}`);
    }
    const add = (method: Method) => (path: string, handler: Handler, routeOptions: RouteOptions = {}) => {
      if (!path.startsWith('/')) throw new Error(`route path must start with /, got ${JSON.stringify(path)} in group ${JSON.stringify(prefix)}`);
      this.add({ method, path: prefix + path, guard, cors, handler, streamBody: routeOptions.streamBody === true });
    };
    declare({ get: add('GET'), post: add('POST'), put: add('PUT'), delete: add('DELETE') });
    return this;
  }

  private add(route: Route): void {
    let byMethod = this.table.get(route.path);
    if (byMethod === undefined) {
      byMethod = new Map();
      this.table.set(route.path, byMethod);
    }
    if (byMethod.has(route.method)) throw new Error(`route defined twice: ${route.method} ${route.path}`);
    byMethod.set(route.method, route);
  }

  /** Every request the transport receives; `req` is read before this returns. */
  handle(req: TransportRequest, res: TransportResponse): void {
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
      route.guard.check(ctx);
      if (ctx.method === 'GET' || ctx.method === 'HEAD') return this.run(ex, route);
      if (route.streamBody === true) {
        ctx.bodyStream = ex.bodyChunks();
        return this.run(ex, route);
      }
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
        ctx.cors = route.cors;
        return route;
      }
      const allowed = [...byMethod.keys()];
      if (ctx.method === 'OPTIONS' && [...byMethod.values()].some((r) => r.cors)) {
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
    return { method: 'GET', path, guard: PUBLIC, cors: false, handler: this.options.fallback };
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
  if (value instanceof JsonReply) return ex.writeJson(200, value.body);
  ex.writeJson(200, envelope(value));
}
