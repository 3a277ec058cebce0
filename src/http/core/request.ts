/**
 * What a guard or handler may know about a request: copied out of the transport's request (exchange.ts)
 * before any of them runs, so nothing here can touch a uWS or node:http object that is no longer valid.
 */
import type { ClientAddress } from './client-address.js';
import { parseQueryString, type QueryParams } from './params.js';

export const EMPTY_BODY = Buffer.alloc(0);

export class RequestCtx {
  /** Set by the router once the body has been read (POST, PUT, DELETE); empty before and for GET. */
  body: Buffer = EMPTY_BODY;
  /** Routes declared with `streamBody`: the body as it arrives (`body` stays empty). */
  bodyStream: AsyncIterable<Uint8Array> | undefined;
  /** Set by the router for routes that answer cross-origin requests. */
  cors = false;
  private parsedQuery: QueryParams | undefined;
  private remote: string | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly rawQuery: string,
    readonly headers: Readonly<Record<string, string>>,
    /** Reads the peer address from the connection; throws once the client has gone. */
    private readonly peerAddress: () => string,
    /** `trusted_proxies`: who may name the client in X-Forwarded-For; without it the peer is the client. */
    private readonly clientAddress?: ClientAddress,
  ) {}

  /** Parsed on first use; malformed percent-encoding throws a 400. */
  get query(): QueryParams {
    if (this.parsedQuery === undefined) this.parsedQuery = parseQueryString(this.rawQuery);
    return this.parsedQuery;
  }

  /**
   * The client address as the transport reports it (`127.0.0.1`, `::1`; IPv4-mapped IPv6 is shown as IPv4), or,
   * when that peer is one of `trusted_proxies`, the client it names in X-Forwarded-For.
   * Read on first use; '' when unknown (the client has gone).
   */
  get remoteAddress(): string {
    if (this.remote === undefined) {
      let text = '';
      try {
        text = this.peerAddress();
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

  /** The client said a body follows (a length other than 0, or chunked). */
  get announcesBody(): boolean {
    const length = this.header('content-length');
    return (length !== undefined && length !== '0') || this.header('transfer-encoding') !== undefined;
  }
}
