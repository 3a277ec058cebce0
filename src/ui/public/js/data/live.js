// Server-Sent Events read with fetch and a stream reader. EventSource cannot send a header, and the data
// secret never goes into a URL (docs/security.md "Secrets in URLs"), so the stream is parsed here.
import { apiUrl, ApiError } from '../core/api.js';

export const RETRY_FIRST_MS = 1000;
export const RETRY_MAX_MS = 30_000;
/** The server sends a comment every 15 s: this long without a byte means the connection is dead. */
const IDLE_MS = 45_000;
/** Answers that a retry cannot change: the parameters or the model are wrong. */
export const FATAL = new Set([400, 404, 405, 409, 414]);

/**
 * Open a stream and keep it open: reconnect with doubling back-off (1 s to 30 s) after an error, a 401
 * (asking for a fresh secret once) or a silent connection.
 * @param {{
 *   path: string,
 *   params: () => object,                       called on every (re)connect, e.g. for after=
 *   headers: (fresh: boolean) => Promise<object>, fresh after a 401
 *   onResponse?: (res: Response) => void,
 *   onEvent: (ev: {event: string, id: string, data: string}) => void,
 *   onStatus: (s: {state: 'connecting'|'open'|'retrying'|'failed', retryInMs?: number, error?: ApiError}) => void,
 * }} opts
 * @returns {{ close(): void }}
 */
export function openEventStream(opts) {
  let closed = false;
  let abort = null;
  let retryTimer = 0;
  let idleTimer = 0;
  let delayMs = RETRY_FIRST_MS;
  let freshSecret = false;

  const retry = (error, waitMs = delayMs) => {
    if (closed) return;
    opts.onStatus({ state: 'retrying', retryInMs: waitMs, error });
    retryTimer = setTimeout(connect, waitMs);
    delayMs = Math.min(RETRY_MAX_MS, delayMs * 2);
  };

  async function connect() {
    if (closed) return;
    abort = new AbortController();
    const controller = abort;
    const resetIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => controller.abort(new ApiError(0, 'the stream went silent', opts.path)), IDLE_MS);
    };
    opts.onStatus({ state: 'connecting' });
    let res;
    try {
      const headers = { Accept: 'text/event-stream', ...(await opts.headers(freshSecret)) };
      resetIdle();
      res = await fetch(apiUrl(opts.path, opts.params()), { headers, signal: controller.signal, cache: 'no-store' });
    } catch (e) {
      clearTimeout(idleTimer);
      if (closed) return;
      retry(e instanceof ApiError ? e : new ApiError(0, `Cannot reach the gateway (${(e && e.message) || 'network error'})`, opts.path));
      return;
    }
    if (opts.onResponse) opts.onResponse(res);
    if (!res.ok) {
      clearTimeout(idleTimer);
      const error = new ApiError(res.status, await messageFrom(res), opts.path);
      if (FATAL.has(res.status)) { opts.onStatus({ state: 'failed', error }); return; }
      if (res.status === 401 && !freshSecret) { freshSecret = true; connect(); return; }
      const after = Number(res.headers.get('Retry-After'));
      retry(error, Number.isFinite(after) && after > 0 ? Math.max(delayMs, after * 1000) : delayMs);
      return;
    }
    freshSecret = false;
    delayMs = RETRY_FIRST_MS;
    opts.onStatus({ state: 'open' });
    const parser = eventParser(opts.onEvent);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        resetIdle();
        parser(value);
      }
      clearTimeout(idleTimer);
      retry(new ApiError(0, 'the gateway closed the stream', opts.path));
    } catch (e) {
      clearTimeout(idleTimer);
      if (closed) return;
      const reason = controller.signal.reason instanceof ApiError ? controller.signal.reason : null;
      retry(reason || new ApiError(0, `The stream broke (${(e && e.message) || 'network error'})`, opts.path));
    }
  }

  connect();
  return {
    close() {
      closed = true;
      clearTimeout(retryTimer);
      clearTimeout(idleTimer);
      if (abort) abort.abort();
    },
  };
}

async function messageFrom(res) {
  try {
    const text = await res.text();
    try { return JSON.parse(text).msg || text; } catch { return text.slice(0, 300) || `${res.status}`; }
  } catch { return `${res.status} ${res.statusText}`; }
}

/**
 * The text/event-stream format: lines of `field: value`, an event ends at a blank line, `:` starts a
 * comment. Chunks may split lines anywhere.
 */
export function eventParser(onEvent) {
  let rest = '';
  let event = '';
  let id = '';
  let data = [];
  return (chunk) => {
    let text = rest + chunk;
    // A CR at the end may be the first half of a CRLF that the next chunk completes.
    const heldCr = text.endsWith('\r') ? '\r' : '';
    if (heldCr) text = text.slice(0, -1);
    const lines = text.split(/\r\n|\r|\n/);
    rest = lines.pop() + heldCr;
    for (const line of lines) {
      if (line === '') {
        if (data.length) onEvent({ event: event || 'message', id, data: data.join('\n') });
        event = ''; data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') id = value;
    }
  };
}
