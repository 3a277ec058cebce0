/**
 * What a handler may answer, and what an error becomes. A handler returns plain data (sent in the
 * contract's success envelope), a RawReply or a StreamReply, or throws; an EdgeError becomes
 * `{code: status, msg: message, data}` with that HTTP status and the headers it declares, anything else a
 * logged 500 `internal error` that tells the client nothing more. Writing them to uWS is exchange.ts's job.
 */
import { STATUS_CODES } from 'node:http';
import type { Logger } from 'pino';
import { EdgeError } from '../../errors.js';
import type { RequestCtx } from './request.js';
import type { HeaderPairs } from './wire.js';

/** A complete non-envelope answer (static files, preflight, /metrics, the kept answers of latest-answer.ts). */
export class RawReply {
  /** headerPairs' answers, without and with CORS: a kept answer is sent on every poll. */
  private pairs: [HeaderPairs | undefined, HeaderPairs | undefined] = [undefined, undefined];

  constructor(
    readonly status: number,
    readonly headers: Readonly<Record<string, string>>,
    readonly body: string | Uint8Array,
    /** HEAD: send the headers and the length of `body`, not the body. */
    readonly headOnly = false,
  ) {}

  /** `headers` as the transport writes them; `cors` adds `Access-Control-Allow-Origin: *` unless they name one. */
  headerPairs(cors: boolean): HeaderPairs {
    const slot = cors ? 1 : 0;
    let pairs = this.pairs[slot];
    if (pairs === undefined) {
      const list: Array<readonly [string, string]> = [];
      if (cors && this.headers['Access-Control-Allow-Origin'] === undefined) list.push(['Access-Control-Allow-Origin', '*']);
      for (const key in this.headers) list.push([key, this.headers[key]]);
      // Frozen: a transport may keep them in its own encoding (uws-transport.ts).
      pairs = Object.freeze(list);
      this.pairs[slot] = pairs;
    }
    return pairs;
  }
}

/**
 * A success envelope already printed (a history page built from the stored bytes): sent as `envelope`'s
 * text is, with the JSON headers.
 */
export class JsonReply {
  constructor(readonly body: Uint8Array) {}
}

/** What a streaming producer writes to. */
export interface StreamSink {
  /** false: the chunk is buffered but the client is slow; `await drain()` before writing more. */
  write(chunk: string | Uint8Array): boolean;
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

/** The headers of every JSON answer (also the connection gate's 503). */
export const JSON_HEADERS: ReadonlyArray<readonly [string, string]> = [
  ['Content-Type', 'application/json; charset=utf-8'],
  ['X-Content-Type-Options', 'nosniff'],
  ['Cache-Control', 'no-store'],
];

/** The answer to an OPTIONS preflight on a route that allows cross-origin reads. */
export const CORS_PREFLIGHT = new RawReply(
  204,
  {
    'Access-Control-Allow-Origin': '*',
    'Access-Control-Allow-Methods': 'GET, OPTIONS',
    'Access-Control-Allow-Headers': 'X-Api-Secret, Content-Type',
    'Access-Control-Max-Age': '600',
  },
  '',
);

export function statusLine(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? 'Status'}`;
}

export function envelope(data: unknown): string {
  return JSON.stringify({ code: 200, msg: 'Success', data: data === undefined ? null : data });
}

/** An error turned into the answer's status, envelope and extra headers. */
export interface ErrorAnswer {
  status: number;
  body: string;
  headers: Record<string, string>;
}

/** Logs as fits (5xx warn, 4xx debug, a bug error) and builds the envelope; never leaks a non-EdgeError's message. */
export function errorAnswer(err: unknown, ctx: RequestCtx, logger: Logger): ErrorAnswer {
  if (!(err instanceof EdgeError)) {
    logger.error({ err, method: ctx.method, path: ctx.path }, 'request handler failed');
    return { status: 500, body: JSON.stringify({ code: 500, msg: 'internal error', data: null }), headers: {} };
  }
  const status = err.status;
  if (status >= 500) logger.warn({ path: ctx.path, code: err.code }, err.message);
  else if (logger.isLevelEnabled('debug')) logger.debug({ method: ctx.method, path: ctx.path, status }, err.message);
  return { status, body: JSON.stringify({ code: status, msg: err.message, data: err.data ?? null }), headers: err.headers() };
}
