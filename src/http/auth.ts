/**
 * Secrets and tokens, compared in constant time: both sides are hashed with SHA-256 (equal lengths, and
 * the length of a secret does not leak) and compared with timingSafeEqual against every configured value,
 * without an early exit.
 */
import { AuthError } from '../errors.js';
import { digestsEqual, sha256 } from '../util/digest.js';
import type { RequestCtx } from './route.js';

export class SecretSet {
  private readonly digests: Buffer[];

  /** Empty strings are dropped: an empty value never disables the check. */
  constructor(values: readonly string[]) {
    this.digests = values.filter((v) => v.length > 0).map(sha256);
  }

  matches(candidate: string | undefined): boolean {
    const probe = sha256(candidate ?? '');
    let ok = false;
    for (const known of this.digests) {
      if (digestsEqual(probe, known)) ok = true;
    }
    return ok && candidate !== undefined && candidate.length > 0;
  }
}

/** The bearer credential of an `Authorization: Bearer <token>` header (scheme case-insensitive). */
export function bearerToken(ctx: RequestCtx): string | undefined {
  const header = ctx.header('authorization');
  if (header === undefined) return undefined;
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header);
  return match === null ? undefined : match[1];
}

/**
 * The query-endpoint secret: `secrets` (the specification's name), else `secret` (RHILEX's), else the
 * header `X-Api-Secret`. The first one present is the one checked.
 */
export function requestSecret(ctx: RequestCtx): string | undefined {
  const query = ctx.query;
  const fromQuery = query.get('secrets')?.[0] ?? query.get('secret')?.[0];
  if (fromQuery !== undefined && fromQuery.length > 0) return fromQuery;
  return ctx.header('x-api-secret');
}

/**
 * Wrong credentials per client address (see throttle.ts). `check` throws 429 while the address is over
 * the limit; `fail` counts one wrong credential. Missing credentials are not counted: they guess nothing.
 */
export interface FailureLimiter {
  /** Throws 429 while the request's address is over the limit. */
  guard(ctx: { readonly remoteAddress: string }): void;
  /** Counts one wrong credential for the request's address. */
  failed(ctx: { readonly remoteAddress: string }): void;
}

export function checkSecret(secrets: SecretSet, ctx: RequestCtx, limiter?: FailureLimiter): void {
  limiter?.guard(ctx);
  const given = requestSecret(ctx);
  if (given === undefined) {
    throw new AuthError("missing secret: give the query parameter 'secrets' (or 'secret', or the header X-Api-Secret)");
  }
  if (!secrets.matches(given)) {
    limiter?.failed(ctx);
    throw new AuthError('wrong secret');
  }
}

/** A guard accepting any of `tokens` as `Authorization: Bearer`; `what` names the credential in messages. */
export function adminGuard(tokens: SecretSet, limiter?: FailureLimiter, what = 'admin token'): (ctx: RequestCtx) => void {
  return (ctx) => {
    limiter?.guard(ctx);
    const token = bearerToken(ctx);
    if (token === undefined) throw new AuthError(`missing ${what}: send the header Authorization: Bearer <${what.replaceAll(' ', '_')}>`);
    if (!tokens.matches(token)) {
      limiter?.failed(ctx);
      throw new AuthError(`wrong ${what}`);
    }
  };
}
