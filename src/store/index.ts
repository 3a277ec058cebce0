export * from './base/types.js';
export { Store, type StoreHooks } from './store.js';
export { ModelLog } from './log/model-log.js';
export { type FileIo, nodeFileIo } from './base/file-io.js';
export { crc32c } from './format/crc32c.js';
export { decodeValues } from './read/reader.js';
export {
  DEFAULT_STORE_OPTIONS,
  PAGE_SIZE_MAX,
  RECORD_BYTES_MAX,
  SEGMENT_BYTES_DEFAULT,
  SYNC_INTERVAL_MS_DEFAULT,
  WRITE_QUEUE_BYTES_MAX,
  storeOptions,
} from './base/constants.js';
export { FSYNC_BUCKETS_S, LatencyHistogram, type LatencySnapshot } from './base/latency.js';
export { type RetentionFloor } from './retention/retention.js';
export { CREATE_AT_MAX_MS, CREATE_AT_MIN_MS, ID_MAX, createAtDomainRule, idDomainRule, isCreateAtInDomain, isIdInDomain } from './base/domain.js';
