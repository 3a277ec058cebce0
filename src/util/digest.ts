import { hash, timingSafeEqual } from 'node:crypto';

/**
 * Secrets and tokens are compared as SHA-256 digests: both sides have the same length whatever was
 * sent, so timingSafeEqual applies and the comparison time reveals neither the value nor its length.
 */
export function sha256(text: string): Buffer {
  // One-shot: every guarded request hashes its credential, and this skips the Hash object.
  return hash('sha256', text, 'buffer');
}

/** Constant-time equality of two digests; false when either is missing or the lengths differ. */
export function digestsEqual(a: Buffer, b: Buffer | undefined): boolean {
  return b !== undefined && a.length === b.length && timingSafeEqual(a, b);
}
