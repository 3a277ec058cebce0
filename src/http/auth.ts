/**
 * Secrets and tokens, compared in constant time: both sides are hashed with SHA-256 (equal lengths, and
 * the length of a secret does not leak) and compared with timingSafeEqual against every configured value,
 * without an early exit.
 */
import { AuthError } from '../errors.js';
import { digestsEqual, sha256 } from '../util/digest.js';
import type { RequestCtx } from './request.js';
import type { CredentialKind } from './throttle.js';

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
 * Hears of every wrong credential, after it was checked (see throttle.ts and audit.ts). `failed` throws
 * 429 while the request's address is over the limit for that kind of credential; when it returns, the
 * caller answers 401. Missing credentials are not reported: they guess nothing.
 */
export interface FailureLimiter {
  failed(ctx: { readonly remoteAddress: string }, kind: CredentialKind): void;
}

/** The credential is checked first: a right one passes whatever else came from its address. */
export function checkSecret(secrets: SecretSet, ctx: RequestCtx, limiter?: FailureLimiter): void {
  const given = requestSecret(ctx);
  if (given === undefined) {
    throw new AuthError("missing secret: give the query parameter 'secrets' (or 'secret', or the header X-Api-Secret)");
  }
  if (!secrets.matches(given)) {
    limiter?.failed(ctx, 'data-secret');
    throw new AuthError('wrong secret');
  }
}

/**
 * A guard accepting any of `tokens` as `Authorization: Bearer`; `what` names the credential in messages.
 * Failures count as `admin-token` guesses: every token accepted here also opens /metrics or more.
 */
export function adminGuard(tokens: SecretSet, limiter?: FailureLimiter, what = 'admin token'): (ctx: RequestCtx) => void {
  return (ctx) => {
    const token = bearerToken(ctx);
    if (token === undefined) throw new AuthError(`missing ${what}: send the header Authorization: Bearer <${what.replaceAll(' ', '_')}>`);
    if (!tokens.matches(token)) {
      limiter?.failed(ctx, 'admin-token');
      throw new AuthError(`wrong ${what}`);
    }
  };
}
