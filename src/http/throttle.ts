/**
 * Slows down guessing: wrong secrets and tokens are counted per client address (as uWS reports it) in a
 * token bucket of `perMinute` tokens that refills at `perMinute` per minute. Each wrong credential takes
 * a token; while an address has less than one token left, every request of it that needs a credential
 * is refused with 429 and `Retry-After` before its credential is looked at. Correct credentials take
 * nothing, so a busy client that authenticates correctly is never slowed down by its own traffic.
 *
 * Trade-off: while an address is over the limit, correct clients behind the same address (a NAT, a
 * proxy, or every test on 127.0.0.1) are refused too; checking the credential first and letting correct
 * ones through would let an attacker keep guessing at full speed, since a right guess would still pass.
 *
 * The table is bounded: entries that have refilled are dropped when seen, and beyond `maxEntries`
 * addresses the least recently failing one is forgotten (an attacker with very many addresses can
 * therefore escape the limit, but cannot grow memory).
 */
import { TooManyRequestsError } from '../errors.js';

interface Bucket {
  tokens: number;
  atMs: number;
}

export const THROTTLE_TABLE_MAX = 10_000;

export class AuthThrottle {
  private readonly table = new Map<string, Bucket>();
  /** Wrong credentials seen (also while throttled: those are refused before being checked). */
  failures = 0;
  /** Requests refused with 429. */
  refused = 0;

  constructor(
    readonly perMinute: number,
    readonly maxEntries = THROTTLE_TABLE_MAX,
    private readonly now: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.perMinute > 0;
  }

  /** Addresses currently tracked. */
  get size(): number {
    return this.table.size;
  }

  /** Seconds until `address` may present a credential again; 0 when it may now. */
  retryAfterS(address: string): number {
    if (!this.enabled) return 0;
    const bucket = this.table.get(address);
    if (bucket === undefined) return 0;
    this.refill(bucket);
    if (bucket.tokens >= 1) {
      if (bucket.tokens >= this.perMinute) this.table.delete(address);
      return 0;
    }
    return Math.max(1, Math.ceil(((1 - bucket.tokens) * 60) / this.perMinute));
  }

  /** FailureLimiter: the address is only read when some address is being tracked (hot path). */
  guard(ctx: { readonly remoteAddress: string }): void {
    if (this.table.size > 0) this.check(ctx.remoteAddress);
  }

  failed(ctx: { readonly remoteAddress: string }): void {
    this.fail(ctx.remoteAddress);
  }

  /** Throws 429 with Retry-After while the address is over the limit. */
  check(address: string): void {
    const wait = this.retryAfterS(address);
    if (wait > 0) {
      this.refused++;
      throw new TooManyRequestsError(`too many wrong credentials from this address: retry in ${wait} s`, wait);
    }
  }

  /** A wrong credential from `address`. */
  fail(address: string): void {
    this.failures++;
    if (!this.enabled) return;
    let bucket = this.table.get(address);
    if (bucket === undefined) {
      bucket = { tokens: this.perMinute, atMs: this.now() };
    } else {
      this.refill(bucket);
      this.table.delete(address); // re-inserted below: the Map's order is the order of the last failure
    }
    bucket.tokens -= 1;
    this.table.set(address, bucket);
    while (this.table.size > this.maxEntries) {
      const oldest = this.table.keys().next().value as string;
      this.table.delete(oldest);
    }
  }

  private refill(bucket: Bucket): void {
    const now = this.now();
    const elapsed = now - bucket.atMs;
    if (elapsed <= 0) return;
    bucket.tokens = Math.min(this.perMinute, bucket.tokens + (elapsed * this.perMinute) / 60_000);
    bucket.atMs = now;
  }
}
