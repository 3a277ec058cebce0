/**
 * One request's exchange, written against the transport's request and response (wire.ts), so routes never
 * see a uWS or node:http object. It keeps the rules both transports need: `onAborted` is attached before
 * anything asynchronous, streamed bodies respect backpressure both ways, and nothing is written after an
 * abort or after the answer ended. (uWS's own traps, such as `cork` and neutered body buffers, are
 * uws-transport.ts's.)
 */
import type { Logger } from 'pino';
import { InvalidArgumentError } from '../../errors.js';
import type { ClientAddress } from './client-address.js';
import { errorAnswer, JSON_HEADERS, type RawReply, type StreamReply, type StreamSink } from './reply.js';
import { EMPTY_BODY, RequestCtx } from './request.js';
import type { HeaderPairs, TransportRequest, TransportResponse } from './wire.js';

/** Headers that must not come twice with different values: which one counts would depend on who reads. */
const SINGLE_HEADERS = new Set(['authorization', 'x-api-secret', 'content-length', 'transfer-encoding', 'host', 'content-type']);

/** Upload bytes buffered before reading is paused (bodyChunks). */
const BODY_BUFFER_BYTES = 1024 * 1024;

/** Methods counted under their own name in the request counts; any other is `OTHER`. */
const COUNTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);

const HEAD_ONLY = { head: true } as const;

/** Called once per exchange with its answer's status, or `aborted` when the client left first. */
export type Tally = (ex: Exchange, status: number | 'aborted') => void;

/**
 * Copies the request out of `req` (which is valid only until the transport's callback returns). A header
 * sent twice with different values where that matters is reported by `check()` (after the exchange
 * exists, so the 400 is answered and counted like any other).
 */
export function copyRequest(req: TransportRequest, res: TransportResponse, clientAddress: ClientAddress | undefined): { ctx: RequestCtx; check(): void } {
  const headers: Record<string, string> = {};
  let conflict: string | undefined;
  req.forEachHeader((key, value) => {
    if (headers[key] !== undefined && headers[key] !== value && SINGLE_HEADERS.has(key)) conflict ??= key;
    // Several X-Forwarded-For headers are one list (RFC 9110 5.3); every other header: the last counts.
    headers[key] = key === 'x-forwarded-for' && headers[key] !== undefined ? `${headers[key]}, ${value}` : value;
  });
  const ctx = new RequestCtx(req.method, req.path, req.rawQuery, headers, () => res.remoteAddress(), clientAddress);
  return {
    ctx,
    check() {
      if (conflict !== undefined) throw new InvalidArgumentError(`the request has two ${conflict} headers with different values`);
    },
  };
}

/** One request's response, tracking whether it may still be written. */
export class Exchange {
  private isAborted = false;
  private isFinished = false;
  /** The request was counted in the router's request counts. */
  counted = false;
  /** The route pattern for metrics: a route's path, `/api/*` (no such route), `static` or `none`. */
  label = 'none';
  /** The method as counted: its name, or `OTHER`. */
  readonly countedMethod: string;
  private hooked = false;
  private onAbort: (() => void) | undefined;

  constructor(
    private readonly res: TransportResponse,
    readonly ctx: RequestCtx,
    private readonly tally: Tally,
    private readonly pending: PendingAnswers,
    private readonly logger: Logger,
  ) {
    this.countedMethod = COUNTED_METHODS.has(ctx.method) ? ctx.method : 'OTHER';
  }

  /** Must run before the transport's request callback returns whenever the answer comes later. */
  hookAbort(): void {
    if (this.hooked) return;
    this.hooked = true;
    this.pending.add(this);
    this.res.onAborted(() => {
      this.isAborted = true;
      this.pending.delete(this);
      this.tally(this, 'aborted');
      this.onAbort?.();
    });
  }

  get open(): boolean {
    return !this.isAborted && !this.isFinished;
  }

  private finish(): void {
    this.isFinished = true;
    this.pending.delete(this);
  }

  /**
   * Collects the body up to `limitBytes`, then calls `done` with it; past the limit `tooLarge` runs
   * instead (once) and the rest is dropped. With the length declared (`declaredBytes`, at most the
   * limit) the chunks are copied straight into one buffer of that size: no second copy to join them.
   */
  readBody(limitBytes: number, done: (body: Buffer) => void, tooLarge: () => void, declaredBytes?: number): void {
    this.hookAbort();
    let body: Buffer = declaredBytes === undefined ? Buffer.alloc(0) : Buffer.allocUnsafe(declaredBytes);
    let size = 0;
    this.res.onData((chunk, isLast) => {
      if (!this.open) return;
      if (size + chunk.byteLength > limitBytes) {
        size = limitBytes + 1;
        tooLarge();
        return;
      }
      if (size + chunk.byteLength > body.length) body = grown(body, size, size + chunk.byteLength);
      chunk.copy(body, size);
      size += chunk.byteLength;
      if (isLast) done(size === body.length ? body : body.subarray(0, size));
    });
  }

  /**
   * The body as chunks pulled by the consumer, for uploads of any size (restore, import): reading is
   * paused while more than BODY_BUFFER_BYTES wait, so memory stays constant. Ends with an error when the client
   * goes away.
   */
  bodyChunks(): AsyncIterable<Uint8Array> {
    this.hookAbort();
    const queue: Buffer[] = [];
    let queued = 0;
    let last = false;
    let paused = false;
    let wake: (() => void) | undefined;
    const notify = (): void => {
      const fn = wake;
      wake = undefined;
      fn?.();
    };
    const previousAbort = this.onAbort;
    this.onAbort = () => {
      previousAbort?.();
      notify();
    };
    this.res.onData((chunk, isLast) => {
      if (!this.open) return;
      if (chunk.byteLength > 0) {
        queue.push(Buffer.from(chunk)); // a copy: the chunk is only valid during this callback
        queued += chunk.byteLength;
      }
      last = isLast;
      if (!last && queued > BODY_BUFFER_BYTES && !paused) {
        paused = true;
        this.res.pause();
      }
      notify();
    });
    const ex = this;
    return {
      async *[Symbol.asyncIterator]() {
        for (;;) {
          const next = queue.shift();
          if (next !== undefined) {
            queued -= next.length;
            if (paused && queued <= BODY_BUFFER_BYTES / 2 && ex.open) {
              paused = false;
              ex.res.resume();
            }
            yield next;
            continue;
          }
          if (last) return;
          if (!ex.open) throw new InvalidArgumentError('the client went away before the request body ended');
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
    };
  }

  /** A JSON answer; `close` ends the connection after it (an unread body would stay on it). */
  writeJson(status: number, body: string | Uint8Array, extra?: Readonly<Record<string, string>>, close = false): void {
    if (!this.open) return;
    this.finish();
    this.tally(this, status);
    const headers: Array<readonly [string, string]> = [...JSON_HEADERS];
    if (this.ctx.cors) headers.push(['Access-Control-Allow-Origin', '*']);
    if (extra !== undefined) for (const key in extra) headers.push([key, extra[key]]);
    this.res.end(status, headers, body, { head: this.ctx.method === 'HEAD', close });
  }

  writeRaw(reply: RawReply): void {
    if (!this.open) return;
    this.finish();
    this.tally(this, reply.status);
    const head = reply.headOnly || this.ctx.method === 'HEAD';
    this.res.end(reply.status, reply.headerPairs(this.ctx.cors), reply.body, head ? HEAD_ONLY : undefined);
  }

  /** The envelope for `err`; closes the connection when the request's body was left unread. */
  writeError(err: unknown): void {
    if (!this.open) return;
    const { status, body, headers } = errorAnswer(err, this.ctx, this.logger);
    const ctx = this.ctx;
    const close = status === 413 || (ctx.body === EMPTY_BODY && ctx.method !== 'GET' && ctx.announcesBody);
    this.writeJson(status, body, headers, close);
  }

  /** Writes the producer's chunks as they come; a failure before the first chunk is an error answer. */
  writeStream(reply: StreamReply): void {
    if (!this.open) return;
    this.hookAbort();
    const res = this.res;
    let headWritten = false;
    let resume: (() => void) | undefined;
    const wake = (): void => {
      const fn = resume;
      resume = undefined;
      fn?.();
    };
    this.onAbort = wake;
    res.onWritable(wake);
    const writeHead = (): void => {
      headWritten = true;
      this.tally(this, 200);
      res.startStream(200, streamHeaders(reply, this.ctx.cors));
    };
    const ex = this;
    const sink: StreamSink = {
      get aborted() {
        return !ex.open;
      },
      write(chunk: string | Uint8Array): boolean {
        if (!ex.open) return false;
        if (!headWritten) writeHead();
        return res.write(chunk);
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
        if (!this.open) return;
        this.finish();
        if (!headWritten) writeHead();
        res.endStream();
      },
      (err: unknown) => {
        if (!this.open) return;
        if (!headWritten) return this.writeError(err);
        // Too late for a status: cut the connection so the client sees a truncated transfer.
        this.logger.error({ err, path: this.ctx.path }, 'stream failed after the response started');
        this.finish();
        res.close();
      },
    );
  }
}

function streamHeaders(reply: StreamReply, cors: boolean): HeaderPairs {
  const headers: Array<readonly [string, string]> = [
    ['X-Content-Type-Options', 'nosniff'],
    ['Cache-Control', 'no-store'],
  ];
  if (cors) headers.push(['Access-Control-Allow-Origin', '*']);
  for (const key in reply.headers) headers.push([key, reply.headers[key]]);
  return headers;
}

/** Answers that come later than the transport's request callback, so a shutdown can wait for them. */
export class PendingAnswers {
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

/** A buffer holding the first `used` bytes of `b`, with room for `bytes` (twice as much, or at least that). */
function grown(b: Buffer, used: number, bytes: number): Buffer {
  const g = Buffer.allocUnsafe(Math.max(bytes, 2 * b.length));
  b.copy(g, 0, 0, used);
  return g;
}
