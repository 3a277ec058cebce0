/**
 * `[plugin.http_server] max_connections`: counts open client connections with uWS's `app.filter`
 * hook (called with +1 when a socket opens and -1 when it closes). A connection that would exceed the
 * limit is answered at once, before it sends anything, with a 503 envelope, `Retry-After` and
 * `Connection: close`, and closed; connections already open are not affected.
 */
import { JSON_HEADERS } from './reply.js';
import type { HttpResponse, TemplatedApp } from './uws.js';

const REFUSAL = JSON.stringify({ code: 503, msg: 'too many open connections: retry later', data: null });

export class ConnectionGate {
  open = 0;
  peak = 0;
  refused = 0;

  constructor(readonly max: number) {}

  attach(app: TemplatedApp): void {
    app.filter((res, delta) => this.onFilter(res, delta));
  }

  onFilter(res: HttpResponse, delta: number): void {
    this.open += delta;
    if (delta <= 0) return;
    if (this.open > this.peak) this.peak = this.open;
    if (this.max === 0 || this.open <= this.max) return;
    this.refused++;
    try {
      res.cork(() => {
        res.writeStatus('503 Service Unavailable');
        for (const [key, value] of JSON_HEADERS) res.writeHeader(key, value);
        res.writeHeader('Retry-After', '1');
        res.end(REFUSAL, true);
      });
    } catch {
      // The socket went away under us: nothing to answer.
    }
  }
}
