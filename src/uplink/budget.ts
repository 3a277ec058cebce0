/**
 * Bytes of message bodies in flight over every model of the uplink: the shipper's memory stays bounded
 * however large the backlog, and a slow hub slows reading, never writing.
 */
export const INFLIGHT_BYTES_MAX = 4 * 1024 * 1024;

export class InflightBudget {
  used = 0;

  constructor(readonly maxBytes = INFLIGHT_BYTES_MAX) {}

  hasRoom(): boolean {
    return this.used < this.maxBytes;
  }

  take(bytes: number): void {
    this.used += bytes;
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }
}
