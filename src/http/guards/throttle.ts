/**
 * Slows down guessing without letting anyone lock a valid credential out (OWASP ASVS 2.2.1; reasoning in
 * docs/security.md, "Lockout"). The credential is always checked first: a valid one passes whatever its
 * address has done, and costs nothing here. Only wrong credentials reach this table, counted per client
 * address (as uWS reports it) AND per credential kind, in a token bucket of `perMinute` tokens that
 * refills at `perMinute` per minute. While a bucket has less than one token, wrong credentials of that
 * kind from that address are answered 429 with `Retry-After` instead of 401, and each one still takes a
 * token: a client that ignores `Retry-After` pushes its own window further out, up to
 * `THROTTLE_WINDOW_MAX_S`.
 *
 * A hostile web page that makes the administrator's browser send wrong secrets therefore slows only
 * wrong secrets from that address; the administrator's right token and the HMIs' right secrets still
 * pass, also behind a reverse proxy where every client shares one address.
 *
 * The table is bounded: entries that have refilled are dropped when seen, and beyond `maxEntries` the
 * least recently failing (address, kind) is forgotten (an attacker with very many addresses can
 * therefore escape the limit, but cannot grow memory).
 */
import { TooManyRequestsError } from '../../errors.js';

/** Which credential a request presented: each kind has its own bucket per address. */
/** `mqtt-password`: a login to an input's built-in MQTT broker (audited, not throttled here). */
export type CredentialKind = 'admin-token' | 'data-secret' | 'push-token' | 'mqtt-password';

interface Bucket {
  tokens: number;
  atMs: number;
}

export const THROTTLE_TABLE_MAX = 10_000;
/** Longest `Retry-After` a client that keeps sending wrong credentials while throttled can run up. */
export const THROTTLE_WINDOW_MAX_S = 900;

export class AuthThrottle {
  private readonly table = new Map<string, Bucket>();
  /** Wrong credentials seen (each one is checked, also while its address is throttled). */
  failures = 0;
  /** Wrong credentials answered 429 instead of 401. */
  refused = 0;

  constructor(
    readonly perMinute: number,
    readonly maxEntries = THROTTLE_TABLE_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /** (address, kind) pairs currently tracked. */
  get size(): number {
    return this.table.size;
  }

  /** Seconds until a wrong `kind` credential from `address` is answered 401 again; 0 when it is now. */
  retryAfterS(address: string, kind: CredentialKind): number {
    if (!this.enabled) return 0;
    const key = keyOf(address, kind);
    const bucket = this.table.get(key);
    if (bucket === undefined) return 0;
    this.refill(bucket);
    if (bucket.tokens >= this.perMinute) this.table.delete(key);
    return this.waitS(bucket);
  }

  /** FailureLimiter: one wrong credential of `kind` from the request's address. */
  failed(ctx: { readonly remoteAddress: string }, kind: CredentialKind): void {
    this.fail(ctx.remoteAddress, kind);
  }

  /**
   * Counts one wrong credential. Throws 429 with Retry-After when the (address, kind) was already over
   * the limit; returns (the caller answers 401) otherwise.
   */
  fail(address: string, kind: CredentialKind): void {
    this.failures++;
    if (!this.enabled) return;
    const key = keyOf(address, kind);
    let bucket = this.table.get(key);
    if (bucket === undefined) {
      bucket = { tokens: this.perMinute, atMs: this.now() };
    } else {
      this.refill(bucket);
      this.table.delete(key); // re-inserted below: the Map's order is the order of the last failure
    }
    const wasOver = bucket.tokens < 1;
    const floor = 1 - (THROTTLE_WINDOW_MAX_S * this.perMinute) / 60;
    bucket.tokens = Math.max(floor, bucket.tokens - 1);
    this.table.set(key, bucket);
    while (this.table.size > this.maxEntries) {
      const oldest = this.table.keys().next().value as string;
      this.table.delete(oldest);
    }
    if (wasOver) {
      this.refused++;
      const wait = this.waitS(bucket);
      throw new TooManyRequestsError(`too many wrong credentials (${kind}) from this address: retry in ${wait} s`, wait);
    }
  }

  private waitS(bucket: Bucket): number {
    if (bucket.tokens >= 1) return 0;
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.perMinute));
  }

  private refill(bucket: Bucket): void {
    const now = this.now();
    const elapsed = now - bucket.atMs;
    if (elapsed <= 0) return;
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (elapsed * this.perMinute) / 60_000);
    bucket.atMs = now;
  }
}

function keyOf(address: string, kind: CredentialKind): string {
  return `${kind} ${address}`;
}
