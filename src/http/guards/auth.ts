/**
 * The route guards, one per credential: the admin token (and the metrics token), the data secret and an
 * input's push token. Each checks the credential first, then reports a wrong one to the FailureLimiter
 * (throttle and audit), so a right credential passes whatever else came from its address. Secrets and
 * tokens are compared in constant time (SecretSet): against every configured value, without an early exit,
 * and over a fixed number of code units, so neither a value nor its length leaks.
 */
import { AuthError, NotFoundError } from '../../errors.js';
import type { EngineView } from '../core/deps.js';
import { required } from '../core/params.js';
import type { RequestCtx } from '../core/request.js';
import type { Guard } from '../core/router.js';
import type { CredentialKind } from './throttle.js';

/**
 * Code units compared per configured value: the longest value rounded up to a multiple of this, so the
 * time of a check depends on that block count only (as SHA-256's on its 64-byte blocks), not on any length.
 */
const COMPARED_UNITS_BLOCK = 64;

/**
 * The configured values of one credential, compared in constant time. The data secret is checked on
 * every HMI poll, so this compares UTF-16 code units in JavaScript instead of hashing: SHA-256 of the
 * candidate was about 15 % of a queryLastData answer. What keeps it constant-time: every value is kept
 * zero-padded to the same `unitsCompared`; each check copies up to that many units of the candidate,
 * zero-padded as well, and compares all of them with every value, XOR-ing and OR-ing without a branch on
 * their contents; the length difference is OR-ed into the same result. Only the candidate's own length
 * and representation change the time (as they changed a hash's), and the client chose both. (A cache of
 * candidates seen, or any lookup by string, would compare with an early exit.)
 */
export class SecretSet {
  private readonly padded: Uint16Array[];
  private readonly lengths: number[];
  private readonly unitsCompared: number;
  /** The candidate's units, zero-padded: reused, checks never overlap (one thread, no await). */
  private readonly probe: Uint16Array;

  /** Empty strings are dropped: an empty value never disables the check. */
  constructor(values: readonly string[]) {
    const kept = values.filter((v) => v.length > 0);
    const longest = kept.reduce((max, v) => Math.max(max, v.length), 0);
    this.unitsCompared = Math.max(1, Math.ceil(longest / COMPARED_UNITS_BLOCK)) * COMPARED_UNITS_BLOCK;
    this.lengths = kept.map((v) => v.length);
    this.padded = kept.map((v) => {
      const units = new Uint16Array(this.unitsCompared);
      for (let i = 0; i < v.length; i++) units[i] = v.charCodeAt(i);
      return units;
    });
    this.probe = new Uint16Array(this.unitsCompared);
  }

  matches(candidate: string | undefined): boolean {
    if (candidate === undefined || candidate.length === 0) return false;
    const length = candidate.length;
    const units = this.unitsCompared;
    const probe = this.probe;
    const copied = Math.min(length, units);
    for (let i = 0; i < copied; i++) probe[i] = candidate.charCodeAt(i);
    probe.fill(0, copied);
    let matched = 0;
    for (let k = 0; k < this.padded.length; k++) {
      const known = this.padded[k];
      let diff = length ^ this.lengths[k];
      for (let i = 0; i < units; i++) diff |= known[i] ^ probe[i];
      // 1 when diff is 0, without a branch (diff < 2^31: lengths are bounded by the request size).
      matched |= ((diff | -diff) >>> 31) ^ 1;
    }
    return matched === 1;
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
