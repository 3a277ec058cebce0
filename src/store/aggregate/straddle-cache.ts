/**
 * Decoded columns of the summary blocks that straddled a bucket edge, kept for the next aggregation.
 * Buckets are aligned to the epoch, so a chart refreshing the same interval meets the same edges in the
 * same blocks: the refresh then reads and decodes nothing. A block's records never change once
 * summarised (ids below the newest record are final), so an entry stays valid while its block's last
 * covered id is the same. An entry serves the columns it was decoded for; asking for others decodes the
 * block again and the entry keeps both decodings (parts). One cache for the process, bounded in blocks
 * and in bytes (a block of a wide model holds 64 values of every asked column), least recently used first out.
 *
 * A block is kept only when it is read a second time for the same interval (`admit`): a new interval reads
 * a thousand blocks it may never meet again, and keeping each one (a slab's share, an entry, an eviction
 * later, and old-generation garbage once evicted) was about a tenth of its time; a chart that refreshes
 * meets its blocks again on its second call and reads nothing from its third on.
 */
import type { SegmentSummary } from './segment-summary.js';
import type { BlockColumns } from './block-columns.js';
import { assert } from '../base/constants.js';

/** The decodings of one block for one last id and record count, each holding some of the columns. */
type DecodedBlock = BlockColumns[];

/** ~64 records each, in Float64Arrays of the asked columns: about 3 KiB a block for four columns. */
export const STRADDLE_CACHE_BLOCKS = 2048;
/** What an eviction leaves: a new interval of 1,000 buckets adds about 1,000 blocks, so it evicts once. */
const STRADDLE_CACHE_KEPT_BLOCKS = 1536;
/**
 * The values the cache may hold: the blocks of a 1,000-bucket chart of four attributes take about 2.5 MiB.
 * Counted only in blocks, 2,048 blocks of 1,024 asked columns would have held 1 GiB.
 */
export const STRADDLE_CACHE_BYTES_MAX = 8 * 1024 * 1024;
const STRADDLE_CACHE_KEPT_BYTES = (STRADDLE_CACHE_BYTES_MAX / 4) * 3;
/** A block larger than this is not kept: it would push out many blocks of narrower charts. */
const STRADDLE_CACHE_BLOCK_BYTES_MAX = STRADDLE_CACHE_BYTES_MAX / 16;
/** Blocks remembered as read once (admit); past this many, the record starts over. */
export const STRADDLE_SEEN_BLOCKS_MAX = 4 * STRADDLE_CACHE_BLOCKS;

/**
 * The cache's blocks take their values from slabs of this many doubles (256 KiB, about 100 blocks of four
 * columns): a Float64Array of its own costs a block an ArrayBuffer (2.8 µs on the slow machine of
 * docs/performance.md, 5% of a new interval) and garbage collection of external memory.
 */
const SLAB_DOUBLES = 32 * 1024;

/** A slab counts in the cache's bytes, whole, while a part of a cached block lies in it. */
interface Slab {
  readonly values: Float64Array;
  used: number;
  parts: number;
}

function ownBytes(part: BlockColumns): number {
  return part.values.byteLength;
}

export class StraddleCache {
  /** Weak: the cache must not keep a summary its model dropped (close, clear, retention) in memory. */
  private readonly byKey = new WeakMap<SegmentSummary, Map<number, DecodedBlock>>();
  /** Insertion order = recency; the value is the owning map and block number, to evict it. */
  private readonly order = new Map<DecodedBlock, [Map<number, DecodedBlock>, number]>();
  /** Bytes of the values of the blocks in `order`: the slabs they lie in, whole, and the parts of their own. */
  private valueBytes = 0;
  /** Where allocate() takes from. */
  private slab: Slab | undefined;
  /** Weak: a slab no cached part lies in goes with its last view. */
  private readonly slabOf = new WeakMap<ArrayBufferLike, Slab>();
  /** Blocks read once and not kept, per summary (weak, as byKey), each with the tag it was read under; `seenBlocks` in all. */
  private seen = new WeakMap<SegmentSummary, Map<number, number>>();
  private seenBlocks = 0;

  get bytes(): number {
    return this.valueBytes;
  }

  /**
   * Whether the block about to be read should be kept: true when it was read before under the same `tag`
   * (the aggregation's interval: a refreshing chart meets the same edges, while other intervals cross the
   * same block only now and then), since the record of blocks read once last started over; else false, and
   * it is remembered as read under `tag`.
   */
  admit(summary: SegmentSummary, block: number, tag: number): boolean {
    let blocks = this.seen.get(summary);
    const before = blocks?.get(block);
    if (before === tag) {
      blocks?.delete(block);
      this.seenBlocks--;
      return true;
    }
    if (before === undefined && this.seenBlocks >= STRADDLE_SEEN_BLOCKS_MAX) {
      this.seen = new WeakMap();
      this.seenBlocks = 0;
      blocks = undefined;
    }
    if (blocks === undefined) this.seen.set(summary, (blocks = new Map()));
    if (before === undefined) this.seenBlocks++;
    blocks.set(block, tag);
    return false;
  }

  /** Room for a block's values (zeros): a view of the current slab, or an array of its own for a wide block. */
  allocate(doubles: number): Float64Array {
    if (doubles > SLAB_DOUBLES / 16) return new Float64Array(doubles);
    if (this.slab === undefined || this.slab.used + doubles > SLAB_DOUBLES) {
      this.slab = { values: new Float64Array(SLAB_DOUBLES), used: 0, parts: 0 };
      this.slabOf.set(this.slab.values.buffer, this.slab);
    }
    const s = this.slab;
    s.used += doubles;
    return s.values.subarray(s.used - doubles, s.used);
  }

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
      this.forget(old);
      m.delete(block);
      const same = old[0].lastId === decoded.lastId && old[0].count === decoded.count;
      if (same) for (const part of old) if (part.columns.some((c) => !decoded.columns.includes(c))) e.push(part);
      // A block is decoded again only for a column its entry lacks, so each part brought at least one.
      assert(e.length <= 1 + new Set(e.flatMap((part) => part.columns)).size, 'a straddle cache entry holds a part per column at most');
    }
    if (e.reduce((n, part) => n + ownBytes(part), 0) > STRADDLE_CACHE_BLOCK_BYTES_MAX) return;
    m.set(block, e);
    this.order.set(e, [m, block]);
    for (const part of e) this.valueBytes += this.hold(part, 1);
    if (this.order.size > STRADDLE_CACHE_BLOCKS || this.valueBytes > STRADDLE_CACHE_BYTES_MAX) this.evictOldest();
  }

  private forget(e: DecodedBlock): void {
    if (!this.order.delete(e)) return;
    for (const part of e) this.valueBytes -= this.hold(part, -1);
  }

  /** Counts a part in (+1) or out (-1); returns the bytes that adds to, or takes from, valueBytes. */
  private hold(part: BlockColumns, by: 1 | -1): number {
    const slab = this.slabOf.get(part.values.buffer);
    if (slab === undefined) return ownBytes(part);
    slab.parts += by;
    assert(slab.parts >= 0, 'a slab holds no fewer parts than none');
    return (by === 1 ? slab.parts === 1 : slab.parts === 0) ? slab.values.byteLength : 0;
  }

  /**
   * Drops the least recently used blocks in one pass, down to the kept blocks and bytes. One at a time, each
   * eviction walked from the start of `order`, over the holes its earlier deletes left there (a V8 Map keeps
   * them until it rehashes): that walk was 6% of a new aggregation interval.
   */
  private evictOldest(): void {
    for (const [oldest, [owner, k]] of this.order) {
      if (this.order.size <= STRADDLE_CACHE_KEPT_BLOCKS && this.valueBytes <= STRADDLE_CACHE_KEPT_BYTES) break;
      this.forget(oldest);
      if (owner.get(k) === oldest) owner.delete(k);
    }
  }
}

export const straddleCache = new StraddleCache();
