import type { RetentionLimits, StoreOptions } from './types.js';
import { InvalidArgumentError } from '../../errors.js';

export const KIB = 1024;
export const MIB = 1024 * KIB;

export const PAGE_SIZE_MAX = 1000;
/** Stored bytes one page may read (and hold decoded): wide records make a page smaller, never a gigabyte. */
export const PAGE_BYTES_MAX = 8 * MIB;
/** One encoded record (msgpack of the value array). */
export const RECORD_BYTES_MAX = 1 * MIB;
export const SEGMENT_BYTES_DEFAULT = 32 * MIB;
/** Offsets are u32 in the index files; keep well below that. */
export const SEGMENT_BYTES_MAX_LIMIT = 1024 * MIB;
export const SEGMENT_BYTES_MIN_LIMIT = 256;
export const SEGMENT_AGE_MS_DEFAULT = 24 * 60 * 60 * 1000;
export const SYNC_INTERVAL_MS_DEFAULT = 1000;
/** Write buffer chunk; one async write per chunk. */
export const WRITE_CHUNK_BYTES = 64 * KIB;
/** A chunk starts in the rest of the previous chunk's buffer only when at least this much is left. */
export const WRITE_CHUNK_MIN_BYTES = 8 * KIB;
/** A sparse-index group larger than this (records near the 1 MiB limit) is compacted as it is, in slices this big. */
export const CHUNK_CODEC_BYTES_MAX = 256 * KIB;
/** Bytes accepted but not yet handed to the kernel; beyond this, writes are refused (UnavailableError). */
export const WRITE_QUEUE_BYTES_MAX = 64 * MIB;
/**
 * Under `always`, a write that reaches the end of the active segment's file also writes this many zeros
 * after its data, so the fdatasyncs of the writes that follow overwrite allocated blocks and do not commit
 * a size change to the ext4 journal (docs/performance.md "sync = always"). Never past segmentBytesMax.
 */
export const PREALLOCATE_BYTES = 1 * MIB;
/** Bytes of a segment written but not yet fdatasync'ed that are also kept in memory (see WriteBuffer: unsynced); beyond this an fdatasync is due. */
export const UNSYNCED_BYTES_MAX = 16 * MIB;
/** Flush delay when durability is not `always` (NATS coalesces for up to 8 ms). */
export const FLUSH_DELAY_MS = 4;
export const CHECKPOINT_INTERVAL_MS = 30_000;
export const RETENTION_CHECK_INTERVAL_MS = 60_000;
/** A wall clock that moved this much more than the monotonic clock between two retention checks is not trusted for age retention. */
export const CLOCK_JUMP_MAX_MS_DEFAULT = 300_000;
/** How often a read-only model retries its pending writes. */
export const READ_ONLY_RETRY_MS_DEFAULT = 1000;
/** Idle fds of sealed segments the store keeps open, over all models (StoreOptions.sealedFdsMax). */
export const SEALED_FDS_MAX_DEFAULT = 64;
/** Sealed segments index every 64th id. */
export const SPARSE_STRIDE = 64;
/** The header every segment file starts with (segment.ts). */
export const SEGMENT_HEADER_BYTES = 32;
/** Distinct `select` projections of the newest record kept between two writes; bounds what a client can make us cache. */
export const LATEST_PROJECTIONS_MAX = 64;
/** Records decoded per chunk by the export iterator. */
export const ITERATE_CHUNK_RECORDS = 1000;
/** Records one read of lines (ModelLog.lines) prints: the uplink's largest batch. */
export const LINES_RECORDS_MAX = 1000;
/**
 * Stored columns of one model (FIELDS), hidden ones included: a record's value array has a place for each
 * column up to the last one it may hold a value in. Hidden columns no record holds a value in do not stay
 * (field-layout.ts), so the limit counts only columns that may hold values.
 */
export const MODEL_FIELDS_MAX = 1024;

export const RETENTION_NONE: RetentionLimits = Object.freeze({ maxRecords: 0, maxBytes: 0, maxAgeMs: 0 });

export const DEFAULT_STORE_OPTIONS: Readonly<Omit<StoreOptions, 'rootDir'>> = Object.freeze({
  durability: 'interval',
  syncIntervalMs: SYNC_INTERVAL_MS_DEFAULT,
  segmentBytesMax: SEGMENT_BYTES_DEFAULT,
  segmentAgeMsMax: SEGMENT_AGE_MS_DEFAULT,
  retention: RETENTION_NONE,
});

/** Full options from a partial set: defaults for everything but rootDir. */
export function storeOptions(partial: Partial<StoreOptions> & { rootDir: string }): StoreOptions {
  return { ...DEFAULT_STORE_OPTIONS, ...partial };
}

export function validateStoreOptions(o: StoreOptions): void {
  if (typeof o.rootDir !== 'string' || o.rootDir.length === 0) throw new InvalidArgumentError('rootDir is required');
  if (!['none', 'interval', 'always'].includes(o.durability)) {
    throw new InvalidArgumentError(`durability must be none, interval or always, got ${String(o.durability)}`);
  }
  checkInt('syncIntervalMs', o.syncIntervalMs, 1, 3_600_000);
  checkInt('segmentBytesMax', o.segmentBytesMax, SEGMENT_BYTES_MIN_LIMIT, SEGMENT_BYTES_MAX_LIMIT);
  checkInt('segmentAgeMsMax', o.segmentAgeMsMax, 1, Number.MAX_SAFE_INTEGER);
  validateRetention(o.retention);
  if (o.clockJumpMaxMs !== undefined) checkInt('clockJumpMaxMs', o.clockJumpMaxMs, 1000, 86_400_000);
  if (o.sealedFdsMax !== undefined) checkInt('sealedFdsMax', o.sealedFdsMax, 1, 1_000_000);
  if (o.diskReserveBytes !== undefined) checkInt('diskReserveBytes', o.diskReserveBytes, 0, Number.MAX_SAFE_INTEGER);
}

export function validateRetention(r: RetentionLimits): void {
  checkInt('retention.maxRecords', r.maxRecords, 0, Number.MAX_SAFE_INTEGER);
  checkInt('retention.maxBytes', r.maxBytes, 0, Number.MAX_SAFE_INTEGER);
  checkInt('retention.maxAgeMs', r.maxAgeMs, 0, Number.MAX_SAFE_INTEGER);
}

function checkInt(name: string, v: number, min: number, max: number): void {
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new InvalidArgumentError(`${name} must be an integer in [${min}, ${max}], got ${String(v)}`);
  }
}

/** A model id becomes a directory name: keep it boring. */
export function validateModelId(modelId: string): void {
  if (typeof modelId !== 'string' || !/^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$/.test(modelId)) {
    throw new InvalidArgumentError(`model id must match [A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}, got ${String(modelId)}`);
  }
}

export function assert(cond: unknown, what: string): asserts cond {
  if (!cond) throw new Error(`store invariant violated: ${what}`);
}
