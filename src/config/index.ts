export type { Config, LogLevel } from './types.js';
export { loadConfig, type LoadConfigOptions, type LoadedConfig } from './load.js';
export { defaultConfigText } from './defaults-text.js';
export { credentialsPath, CREDENTIALS_FILE } from './credentials.js';
export { CONFIG_KEYS, LOG_LEVELS, SYNC_MODES, envName } from './keys.js';
