/**
 * The route guards, one per credential: the admin token (and the metrics token), the data secret and an
 * input's push token. Each checks the credential first, then reports a wrong one to the FailureLimiter
 * (throttle and audit), so a right credential passes whatever else came from its address. Secrets and
 * tokens are compared in constant time: both sides are hashed with SHA-256 (equal lengths, and the length
 * of a secret does not leak) and compared with timingSafeEqual against every configured value, without
 * an early exit.
 */
import { AuthError, NotFoundError } from '../errors.js';
import { digestsEqual, sha256 } from '../util/digest.js';
import type { EngineView } from './deps.js';
import { required } from './params.js';
import type { RequestCtx } from './request.js';
import type { Guard } from './router.js';
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

/** The query endpoints' guard: one of the data secrets, in the query or in X-Api-Secret. */
export function dataSecretGuard(secrets: SecretSet, limiter: FailureLimiter): Guard {
  return {
    who: 'data secret',
    check(ctx) {
      const given = requestSecret(ctx);
      if (given === undefined) {
        throw new AuthError("missing secret: give the query parameter 'secrets' (or 'secret', or the header X-Api-Secret)");
      }
      if (!secrets.matches(given)) {
        limiter.failed(ctx, 'data-secret');
        throw new AuthError('wrong secret');
      }
    },
  };
}

/**
 * Accepts any of `tokens` as `Authorization: Bearer`; `who` names the credential in messages.
 * Failures count as `admin-token` guesses: every token accepted here also opens /metrics or more.
 */
export function adminGuard(tokens: SecretSet, limiter: FailureLimiter, who = 'admin token'): Guard {
  return {
    who,
    check(ctx) {
      const token = bearerToken(ctx);
      if (token === undefined) throw new AuthError(`missing ${who}: send the header Authorization: Bearer <${who.replaceAll(' ', '_')}>`);
      if (!tokens.matches(token)) {
        limiter.failed(ctx, 'admin-token');
        throw new AuthError(`wrong ${who}`);
      }
    },
  };
}

/**
 * The push endpoint's guard: the token of the input named by `uuid`. It runs before the body is read, so
 * a wrong-token body costs nothing and each failure meets the throttle at once. An unknown input answers
 * like a wrong token, so input ids cannot be probed.
 */
export function pushTokenGuard(engine: Pick<EngineView, 'authenticatePush'>, limiter: FailureLimiter): Guard {
  return {
    who: 'push token',
    check(ctx) {
      const token = bearerToken(ctx);
      if (token === undefined) {
        throw new AuthError("missing push token: send the header Authorization: Bearer <the input's token>");
      }
      const uuid = required(ctx.query, 'uuid');
      try {
        engine.authenticatePush(uuid, token);
      } catch (err) {
        if (!(err instanceof AuthError || err instanceof NotFoundError)) throw err;
        limiter.failed(ctx, 'push-token');
        throw new AuthError(`wrong push token for input ${uuid} (or no such input)`);
      }
    },
  };
}

/**
 * Open to anyone, but a bearer token, when one is sent, must pass `guard` (a wrong one is a 401 and
 * counts as a guess). Other schemes, such as a proxy's Basic auth passed through, count as none.
 */
export function publicUnlessBearer(guard: Guard): Guard {
  return {
    who: `public; ${guard.who} when a bearer token is sent`,
    check(ctx) {
      if (bearerToken(ctx) !== undefined) guard.check(ctx);
    },
  };
}
