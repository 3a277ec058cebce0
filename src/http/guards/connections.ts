/**
 * `[plugin.http_server] max_connections`: counts open client connections, told by the transport when one
 * opens and when it closes. A connection that would exceed the limit is answered at once, before it
 * sends anything, with REFUSAL (a 503 envelope, `Retry-After` and `Connection: close`), and closed;
 * connections already open are not affected.
 */
import { JSON_HEADERS } from '../core/reply.js';
import type { HeaderPairs } from '../core/wire.js';

/** What a refused connection gets; the transport writes it and closes the connection. */
export const REFUSAL = {
  status: 503,
  headers: [...JSON_HEADERS, ['Retry-After', '1']] as HeaderPairs,
  body: JSON.stringify({ code: 503, msg: 'too many open connections: retry later', data: null }),
};

export class ConnectionGate {
  open = 0;
  peak = 0;
  refused = 0;

  constructor(readonly max: number) {}

  /** A connection opened; false when it is over the limit (the caller answers REFUSAL and closes it). */
  opened(): boolean {
    this.open++;
    if (this.open > this.peak) this.peak = this.open;
    if (this.max === 0 || this.open <= this.max) return true;
    this.refused++;
    return false;
  }

  /** Every opened connection, refused ones included, is closed once. */
  closed(): void {
    this.open--;
  }
}
