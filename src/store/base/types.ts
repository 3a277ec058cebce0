/**
 * The public shape of the storage engine. Everything outside src/store/ depends on these types only,
 * plus `Store.open` from src/store/store.ts.
 */
import type { LatencySnapshot } from './latency.js';

/** When a write counts as durable. See docs/storage-format.md. */
export type Durability = 'none' | 'interval' | 'always';

export interface StoreOptions {
  /** Root directory; each model lives in `<rootDir>/<modelId>/`. Created when missing. */
  rootDir: string;
  durability: Durability;
  /** fdatasync period for `interval`. */
  syncIntervalMs: number;
  /** A segment is sealed and a new one started once it reaches this size. */
  segmentBytesMax: number;
  /** ... or once its first record is this old. */
  segmentAgeMsMax: number;
  /** Retention applied to models opened without their own limits. */
  retention: RetentionLimits;
  /** Age retention waits while the wall clock jumped more than this since the last check (default 300 s). */
  clockJumpMaxMs?: number;
  /**
   * Idle read-only fds of sealed segments kept open, over all models (default 64). A sealed segment holds
   * no fd otherwise: a read opens it, and the least recently read idle one is closed to make room.
   */
  sealedFdsMax?: number;
  /** Below this much free space on the filesystem, writes are refused until space returns (default 0: off). */
  diskReserveBytes?: number;
  /** Sealed segments are rewritten compressed in the background (compactor.ts; default true). */
  compactSealed?: boolean;
}

/** Whole sealed segments are removed from the head while any limit is exceeded. 0 = no limit. */
export interface RetentionLimits {
  maxRecords: number;
  maxBytes: number;
  maxAgeMs: number;
}

export interface ModelSpec {
  /** Attribute names in model order (a record's keys); each reads its stored column (field-layout.ts). */
  fields: readonly string[];
  /** The fields' types in the same order (the registry's attribute types): a field reads the stored column of its name and type. */
  types?: readonly string[];
  /** What each field reads in records written before its column existed (the attribute's default value). */
  defaults?: readonly unknown[];
  retention?: RetentionLimits;
}

/**
 * A record as reads return it: `id`, `create_at` (milliseconds since the epoch, UTC), then the
 * attributes in model order. A `select` keeps only the named keys, in that same canonical order.
 */
export type RecordView = { id?: number; create_at?: number } & Record<string, unknown>;

export type PageOrder = 'asc' | 'desc';

export interface PageQuery {
  /** 1-based page number. */
  current: number;
  /** 1..PAGE_SIZE_MAX */
  size: number;
  order: PageOrder;
  /** Field names to keep (`id`, `create_at` or attributes); undefined keeps all. */
  select?: readonly string[];
  /** Only records with create_at >= fromMs (ms since the epoch); paging and total count those. */
  fromMs?: number;
  /** Only records with create_at < toMs. */
  toMs?: number;
}

export interface PageResult {
  total: number;
  records: RecordView[];
}

/** A page as JSON text (ModelLog.pageJson). */
export interface PageJson {
  total: number;
  /** The JSON array of the page's records, as JSON.stringify prints them with create_at formatted. */
  json: Buffer;
}

export interface ExportRange {
  fromId?: number;
  toId?: number;
  select?: readonly string[];
}

export type ModelLogState = 'ok' | 'read-only';

/** What recovery found and did when a model was opened. Logged, and exposed for tests and metrics. */
export interface RecoveryReport {
  modelId: string;
  /** true when the clean-shutdown path adopted the manifest without scanning. */
  clean: boolean;
  scannedBytes: number;
  /** Bytes cut from the end of the active segment (torn or garbage tail). */
  truncatedBytes: number;
  /** Id ranges lost to corruption inside older data, inclusive. */
  lostRanges: Array<{ fromId: number; toId: number }>;
  /** Index files that were missing or corrupt and were rebuilt. */
  rebuiltIndexes: number;
  durationMs: number;
}

/** Losses nobody has acknowledged yet (ModelLog.findings), kept across restarts in the model's FINDINGS. */
export interface RecoveryFindings {
  /** Bytes of torn or unsynced tails cut at open, summed over the opens since the last acknowledgement. */
  truncatedBytes: number;
  /** Id ranges lost to corruption, inclusive. */
  lostRanges: Array<{ fromId: number; toId: number }>;
  /** Ids in `lostRanges`. */
  lostIds: number;
  /** When the oldest unacknowledged finding was made (ms since the epoch). */
  sinceMs: number;
}

export interface ModelLogStats {
  state: ModelLogState;
  total: number;
  firstId: number;
  /** Id of the newest record (firstId - 1 when there is none). */
  lastId: number;
  /** create_at of the oldest record (ms since the epoch); absent when there is none. */
  oldestTs?: number;
  /** The id the next save gets: ids are never handed out twice, so it may lie past ids lost at the tail. */
  nextId: number;
  segments: number;
  bytes: number;
  /** Writes accepted but not yet covered by an fdatasync. */
  pendingSyncBytes: number;
  /** Unacknowledged findings (see RecoveryFindings): bytes of tails cut, ids lost. */
  recoveryTruncatedBytes: number;
  recoveryLostIds: number;
  lastError?: string;
  /** While read-only: since when (ms since the epoch). */
  readOnlySinceMs?: number;
  /** Durations of the fdatasyncs of segment files since the model was opened (see latency.ts). */
  fsync?: LatencySnapshot;
  /** Memory the aggregation summaries of the current segments hold (their arrays; 0 before the first aggregation). */
  summaryBytes: number;
}
