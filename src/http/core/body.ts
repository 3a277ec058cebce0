/**
 * Request bodies: read off the connection under `[plugin.http_server] body_bytes_max`, then decoded as
 * UTF-8 text or a JSON object with a 400 that says what was wrong.
 */
import { InvalidArgumentError, PayloadTooLargeError } from '../../errors.js';
import type { Exchange } from './exchange.js';
import type { RequestCtx } from './request.js';

/**
 * Reads the body into `ex.ctx.body` and then calls `done`. A declared length over the limit is a 413
 * before anything is read; a body that grows past it is a 413 as soon as it does.
 */
export function readBody(ex: Exchange, limitBytes: number, done: () => void): void {
  const declared = ex.ctx.header('content-length');
  const declaredBytes = declared !== undefined && /^[0-9]+$/.test(declared) ? Number(declared) : undefined;
  if (declaredBytes !== undefined && declaredBytes > limitBytes) {
    throw new PayloadTooLargeError(`request body is ${declared} bytes, more than the limit of ${limitBytes}`);
  }
  ex.readBody(
    limitBytes,
    (body) => {
      ex.ctx.body = body;
      done();
    },
    () => ex.writeError(new PayloadTooLargeError(`request body is more than the limit of ${limitBytes} bytes`)),
    declaredBytes,
  );
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
