export * from './types.js';
export { Store, type StoreHooks } from './store.js';
export { ModelLog } from './model-log.js';
export { type FileIo, nodeFileIo } from './file-io.js';
export { crc32c } from './crc32c.js';
export {
  DEFAULT_STORE_OPTIONS,
  PAGE_SIZE_MAX,
  RECORD_BYTES_MAX,
  SEGMENT_BYTES_DEFAULT,
  SYNC_INTERVAL_MS_DEFAULT,
  WRITE_QUEUE_BYTES_MAX,
  storeOptions,
} from './constants.js';
export { FSYNC_BUCKETS_S, LatencyHistogram, type LatencySnapshot } from './latency.js';
export { type RetentionFloor } from './retention.js';
export { CREATE_AT_MAX_MS, CREATE_AT_MIN_MS, ID_MAX, createAtDomainRule, idDomainRule, isCreateAtInDomain, isIdInDomain } from './domain.js';
