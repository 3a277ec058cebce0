/**
 * Decoded columns of the summary blocks that straddled a bucket edge, kept for the next aggregation.
 * Buckets are aligned to the epoch, so a chart refreshing the same interval meets the same edges in the
 * same blocks: the refresh then reads and decodes nothing. A block's records never change once
 * summarised (ids below the newest record are final), so an entry stays valid while its block's last
 * covered id is the same. An entry serves the columns it was decoded for; asking for others decodes the
 * block again and the entry keeps both decodings (parts). One cache for the process, bounded in blocks,
 * least recently used first out.
 */
import type { SegmentSummary } from './segment-summary.js';
import type { BlockColumns } from './block-columns.js';
import { assert } from './constants.js';

/** The decodings of one block for one last id and record count, each holding some of the columns. */
type DecodedBlock = BlockColumns[];

/** ~64 records each, in Float64Arrays of the asked columns: about 3 KiB a block for four columns. */
export const STRADDLE_CACHE_BLOCKS = 2048;
/** What an eviction leaves: a new interval of 1,000 buckets adds about 1,000 blocks, so it evicts once. */
const STRADDLE_CACHE_KEPT_BLOCKS = 1536;

export class StraddleCache {
  /** Weak: the cache must not keep a summary its model dropped (close, clear, retention) in memory. */
  private readonly byKey = new WeakMap<SegmentSummary, Map<number, DecodedBlock>>();
  /** Insertion order = recency; the value is the owning map and block number, to evict it. */
  private readonly order = new Map<DecodedBlock, [Map<number, DecodedBlock>, number]>();

  /** The parts of the block decoded up to `lastId` that hold every one of `columns` between them. */
  get(summary: SegmentSummary, block: number, lastId: number, columns: readonly number[]): readonly BlockColumns[] | undefined {
    const e = this.byKey.get(summary)?.get(block);
    if (e === undefined || e[0].lastId !== lastId || !columns.every((c) => e.some((part) => part.columns.includes(c)))) return undefined;
    const where = this.order.get(e);
    if (where) {
      this.order.delete(e);
      this.order.set(e, where);
    }
    return e;
  }

  put(summary: SegmentSummary, block: number, decoded: BlockColumns): void {
    let m = this.byKey.get(summary);
    if (!m) this.byKey.set(summary, (m = new Map()));
    const old = m.get(block);
    const e: DecodedBlock = [decoded];
    if (old) {
      this.order.delete(old);
      const same = old[0].lastId === decoded.lastId && old[0].count === decoded.count;
      if (same) for (const part of old) if (part.columns.some((c) => !decoded.columns.includes(c))) e.push(part);
      // A block is decoded again only for a column its entry lacks, so each part brought at least one.
      assert(e.length <= 1 + new Set(e.flatMap((part) => part.columns)).size, 'a straddle cache entry holds a part per column at most');
    }
    m.set(block, e);
    this.order.set(e, [m, block]);
    if (this.order.size > STRADDLE_CACHE_BLOCKS) this.evictOldest(this.order.size - STRADDLE_CACHE_KEPT_BLOCKS);
  }

  /**
   * Drops the `count` least recently used blocks in one pass. One at a time, each eviction walked from the
   * start of `order`, over the holes its earlier deletes left there (a V8 Map keeps them until it rehashes):
   * that walk was 6% of a new aggregation interval.
   */
  private evictOldest(count: number): void {
    let left = count;
    for (const [oldest, [owner, k]] of this.order) {
      if (left-- === 0) break;
      this.order.delete(oldest);
      if (owner.get(k) === oldest) owner.delete(k);
    }
  }
}

export const straddleCache = new StraddleCache();
