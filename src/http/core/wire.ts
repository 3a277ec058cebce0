/**
 * A request and its answer as an HTTP transport (transport.ts) hands them to the router: what exchange.ts
 * needs of a connection and no more, so that no route or guard sees a uWS or node:http object.
 */

/**
 * Largest request header block (request line included) either transport accepts; beyond it the answer
 * is 431. Above the largest `[plugin.http_server] url_bytes_max`, so that our own JSON 414 is what a long
 * URL gets.
 */
export const HEADER_BYTES_MAX = 81_920;

/** Most header lines a request may have (uWS's UWS_HTTP_MAX_HEADERS_COUNT default); beyond it, 431. */
export const HEADER_LINES_MAX = 100;

/**
 * Seconds a connection may stay silent (no request, between keep-alive requests, while headers or a body
 * trickle in) before it is closed: fixed at 10 in uWS, and the node transport does the same.
 */
export const IDLE_TIMEOUT_S = 10;

/** Frozen pairs are the same on every answer that uses them: a transport may encode them once. */
export type HeaderPairs = ReadonlyArray<readonly [string, string]>;

/** A request as it arrived; valid only until the request callback returns (copy what you need). */
export interface TransportRequest {
  /** Upper case. */
  readonly method: string;
  /** The path as sent, without the query; not percent-decoded. */
  readonly path: string;
  /** What follows `?`; '' when none. */
  readonly rawQuery: string;
  /** Every header line in order, names in lower case; a header sent twice is visited twice. */
  forEachHeader(visit: (name: string, value: string) => void): void;
}

/**
 * The answer side of one request. Nothing may be called after `end`, `endStream` or `close`, nor after
 * the `onAborted` callback ran (exchange.ts makes sure).
 */
export interface TransportResponse {
  /** The peer's address as text; throws or returns '' once the client has gone. */
  remoteAddress(): string;
  /** `cb` runs once if the client goes away before the answer ended. Register before any await. */
  onAborted(cb: () => void): void;
  /**
   * The body as it comes; the last chunk has `isLast` (it may be empty). A chunk is valid only during the
   * call (uWS reuses its memory): copy what is kept.
   */
  onData(cb: (chunk: Buffer, isLast: boolean) => void): void;
  /** Stop and restart reading the body (uploads larger than memory). */
  pause(): void;
  resume(): void;
  /**
   * A whole answer with its Content-Length. `head`: the headers and the length of `body`, no body (HEAD).
   * `close`: end the connection after it (a body was left unread).
   */
  end(status: number, headers: HeaderPairs, body: string | Uint8Array, options?: { head?: boolean; close?: boolean }): void;
  /** Starts an answer of unknown length (chunked); the head goes out with the first `write` or `endStream`. */
  startStream(status: number, headers: HeaderPairs): void;
  /** false: the chunk is queued, but wait for `onWritable` before writing more. */
  write(chunk: string | Uint8Array): boolean;
  onWritable(cb: () => void): void;
  endStream(): void;
  /** Cuts the connection: a stream that failed after it began ends as a truncated transfer. */
  close(): void;
}
