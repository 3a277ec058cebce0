/**
 * Every configuration key: where it lives, what it accepts and its default. One table drives parsing,
 * validation, unknown-key warnings, environment overrides and the commented default file, so they
 * cannot drift apart.
 */
import type { Config } from './types.js';

const KIB = 1024;
const MIB = 1024 * KIB;
const GIB = 1024 * MIB;

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export const SYNC_MODES = ['none', 'interval', 'always'] as const;
export const UPLINK_ENGINES = ['off', 'nats'] as const;
export const HTTP_TRANSPORTS = ['auto', 'uws', 'node'] as const;
export const ON_OFF = ['on', 'off'] as const;

/** The Config field a key fills, e.g. ['store', 'syncIntervalMs']. */
export type ConfigTarget = { [G in keyof Config]: [G, keyof Config[G]] }[keyof Config];

interface KeyBase {
  section: string;
  key: string;
  target: ConfigTarget;
  /** One or more comment lines for the default file. */
  help: string;
}

export interface IntKey extends KeyBase {
  kind: 'int';
  min: number;
  max: number;
  default: number;
}

export interface EnumKey extends KeyBase {
  kind: 'enum';
  values: readonly string[];
  default: string;
}

export interface StringKey extends KeyBase {
  kind: 'string';
  /** undefined: nothing configured (the admin token is then generated, a TLS file is not used). */
  default: string | undefined;
  /** A file or directory: a relative value is resolved against the config file's directory. */
  path?: true;
}

/** `dataschema_secrets`, `allowed_hosts`, `trusted_proxies`: every occurrence counts, each a comma list. */
export interface ListKey extends KeyBase {
  kind: 'list';
  /** Shown commented out in the default file. */
  example: string;
}

export type KeySpec = IntKey | EnumKey | StringKey | ListKey;

export const CONFIG_KEYS: readonly KeySpec[] = [
  {
    section: 'main', key: 'dataschema_secrets',
    target: ['main', 'secrets'], kind: 'list', example: 'first-secret, second-secret',
    help: 'Secrets accepted by queryDataList/queryLastData (`secrets=`). Repeat the key and/or give a comma list.\n'
      + 'None configured: a random one is generated into <data_dir>/credentials.ini.',
  },
  {
    section: 'main', key: 'data_dir',
    target: ['main', 'dataDir'], kind: 'string', default: './data', path: true,
    help: 'Models, records and generated credentials. Relative paths start at this file\'s directory.',
  },
  {
    section: 'main', key: 'admin_token',
    target: ['main', 'adminToken'], kind: 'string', default: undefined,
    help: 'Bearer token of the management API. None configured: generated into <data_dir>/credentials.ini.',
  },
  {
    section: 'main', key: 'log_level',
    target: ['main', 'logLevel'], kind: 'enum', values: LOG_LEVELS, default: 'info',
    help: 'Log verbosity.',
  },
  {
    section: 'main', key: 'metrics_token',
    target: ['main', 'metricsToken'], kind: 'string', default: undefined,
    help: 'Bearer token that opens GET /metrics only (for a Prometheus scraper); with it /healthz also shows the version.\n'
      + 'The admin token always works. Not set: only the admin token opens /metrics.',
  },
  {
    section: 'plugin.http_server', key: 'host',
    target: ['http', 'host'], kind: 'string', default: '0.0.0.0',
    help: 'Listen address. Without TLS on an address other than loopback, the start-up log warns:\n'
      + 'tokens and secrets then cross the network in clear text (docs/deploy.md).',
  },
  {
    section: 'plugin.http_server', key: 'port',
    target: ['http', 'port'], kind: 'int', min: 0, max: 65535, default: 2580,
    help: 'Listen port; 0 picks any free port.',
  },
  {
    section: 'plugin.http_server', key: 'transport',
    target: ['http', 'transport'], kind: 'enum', values: HTTP_TRANSPORTS, default: 'auto',
    help: 'HTTP server library. auto: uWebSockets.js, or node:http when no uWS binary loads on this platform\n'
      + '(musl, Node 23 and later; the start-up log says why). uws: uWebSockets.js or no start. node: node:http only\n'
      + '(WebSocket live reads need uws; SSE works on both). See docs/deploy.md.',
  },
  {
    section: 'plugin.http_server', key: 'url_bytes_max',
    target: ['http', 'urlBytesMax'], kind: 'int', min: 256, max: 64 * KIB, default: 8 * KIB,
    help: 'Longest request line (path and query) in bytes; longer requests get 414.',
  },
  {
    section: 'plugin.http_server', key: 'body_bytes_max',
    target: ['http', 'bodyBytesMax'], kind: 'int', min: KIB, max: 256 * MIB, default: 4 * MIB,
    help: 'Largest request body in bytes; larger bodies get 413.',
  },
  {
    section: 'plugin.http_server', key: 'idle_timeout_s',
    target: ['http', 'idleTimeoutS'], kind: 'int', min: 1, max: 3600, default: 60,
    help: 'Accepted for compatibility, not applied: an idle keep-alive connection closes after 10 s\n'
      + '(fixed by uWebSockets.js; the node transport keeps the same 10 s).',
  },
  {
    section: 'plugin.http_server', key: 'max_connections',
    target: ['http', 'maxConnections'], kind: 'int', min: 0, max: 1_000_000, default: 1000,
    help: 'Open client connections at most; a connection beyond it gets 503 with Retry-After and is closed.\n'
      + '0 = no limit.',
  },
  {
    section: 'plugin.http_server', key: 'auth_failures_per_minute',
    target: ['http', 'authFailuresPerMinute'], kind: 'int', min: 0, max: 1_000_000, default: 20,
    help: 'Wrong secrets or tokens allowed per client address and credential kind per minute; beyond it\n'
      + 'wrong ones get 429 with Retry-After. Right ones always pass (docs/security.md). 0 = no limit.',
  },
  {
    section: 'plugin.http_server', key: 'tls_cert_file',
    target: ['http', 'tlsCertFile'], kind: 'string', default: undefined, path: true,
    help: 'PEM certificate (chain) for HTTPS. Set together with tls_key_file; read at start only (restart to\n'
      + 'load a renewed certificate). Not set: plain HTTP.',
  },
  {
    section: 'plugin.http_server', key: 'tls_key_file',
    target: ['http', 'tlsKeyFile'], kind: 'string', default: undefined, path: true,
    help: 'PEM private key of tls_cert_file. Keep it readable by the service user only (mode 0600).',
  },
  {
    section: 'plugin.http_server', key: 'tls_key_passphrase_file',
    target: ['http', 'tlsKeyPassphraseFile'], kind: 'string', default: undefined, path: true,
    help: 'A file holding the passphrase of an encrypted tls_key_file (one line). Not set: the key is not encrypted.',
  },
  {
    section: 'plugin.http_server', key: 'allowed_hosts',
    target: ['http', 'allowedHosts'], kind: 'list', example: 'gateway.plant.local, 10.1.2.3, localhost',
    help: 'Host names and addresses clients use to reach the service (comma list, no port). A request whose\n'
      + 'Host header names another gets 421 before any credential is checked (defence against DNS\n'
      + 'rebinding). Not set: any Host is accepted.',
  },
  {
    section: 'plugin.http_server', key: 'trusted_proxies',
    target: ['http', 'trustedProxies'], kind: 'list', example: '127.0.0.1, 10.1.2.0/24',
    help: 'Reverse proxies (addresses or CIDR ranges) whose X-Forwarded-For names the client, for the throttle\n'
      + 'of failed authentication and the logs. Not set: X-Forwarded-For is ignored and the peer is the client.',
  },
  {
    section: 'store', key: 'sync',
    target: ['store', 'sync'], kind: 'enum', values: SYNC_MODES, default: 'interval',
    help: 'When a write is on disk: none (the OS decides), interval (every sync_interval_ms),\n'
      + 'always (before the write is acknowledged).',
  },
  {
    section: 'store', key: 'sync_interval_ms',
    target: ['store', 'syncIntervalMs'], kind: 'int', min: 10, max: 60_000, default: 1000,
    help: 'fdatasync period for sync = interval.',
  },
  {
    section: 'store', key: 'segment_bytes',
    target: ['store', 'segmentBytes'], kind: 'int', min: 64 * KIB, max: GIB, default: 32 * MIB,
    help: 'A segment file is sealed at this size (64 KiB..1 GiB).',
  },
  {
    section: 'store', key: 'segment_age_hours',
    target: ['store', 'segmentAgeHours'], kind: 'int', min: 1, max: 8760, default: 24,
    help: '... or once its first record is this old. Retention removes whole sealed segments.',
  },
  {
    section: 'store', key: 'retention_max_records',
    target: ['store', 'retentionMaxRecords'], kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, default: 0,
    help: 'Per model: oldest segments are removed beyond this many records. 0 = no limit.',
  },
  {
    section: 'store', key: 'retention_max_bytes',
    target: ['store', 'retentionMaxBytes'], kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, default: 0,
    help: 'Per model: oldest segments are removed beyond this many bytes. 0 = no limit.',
  },
  {
    section: 'store', key: 'retention_max_age_hours',
    target: ['store', 'retentionMaxAgeHours'], kind: 'int', min: 0, max: 876_000, default: 0,
    help: 'Per model: oldest segments are removed while they hold records older than this. 0 = no limit.',
  },
  {
    section: 'store', key: 'compact_sealed',
    target: ['store', 'compactSealed'], kind: 'enum', values: ON_OFF, default: 'on',
    help: 'on: each sealed segment is rewritten compressed in the background (about 10 B a record for\n'
      + 'sensor data instead of about 65); reads and crash safety are unchanged. off: sealed segments stay as written.',
  },
  {
    section: 'store', key: 'clock_jump_max_s',
    target: ['store', 'clockJumpMaxS'], kind: 'int', min: 1, max: 86_400, default: 300,
    help: 'Age retention waits (and logs) while the clock is behind the newest record or jumped more than this since the last check.',
  },
  {
    section: 'store', key: 'sealed_fds_max',
    target: ['store', 'sealedFdsMax'], kind: 'int', min: 1, max: 1_000_000, default: 64,
    help: 'Idle files of sealed segments kept open for reads, over all models. A read opens a sealed segment\n'
      + 'when it needs it; the least recently read idle one is closed to make room.',
  },
  {
    section: 'store', key: 'disk_reserve_bytes',
    target: ['store', 'diskReserveBytes'], kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, default: 268_435_456,
    help: 'Below this much free space on the data directory\'s filesystem, writes are refused (503) until\n'
      + 'space returns; reads go on. 0 turns it off.',
  },
  {
    section: 'scripts', key: 'workers',
    target: ['scripts', 'workers'], kind: 'int', min: 0, max: 256, default: 0,
    help: 'Lua worker threads at most; 0 = CPU cores - 1, and 1 on boards with 2 cores or under 3 GiB of memory.',
  },
  {
    section: 'scripts', key: 'worker_idle_s',
    target: ['scripts', 'workerIdleS'], kind: 'int', min: 0, max: 86_400, default: 60,
    help: 'A Lua worker without work for this many seconds stops and frees its memory; the next push or rule\n'
      + 'check starts one again (a cold start, see docs/performance.md). 0: every worker starts with the service and never stops.',
  },
  {
    section: 'scripts', key: 'timeout_ms',
    target: ['scripts', 'timeoutMs'], kind: 'int', min: 1, max: 60_000, default: 200,
    help: 'A rule invocation running longer is stopped with an error.',
  },
  {
    section: 'scripts', key: 'hard_timeout_ms',
    target: ['scripts', 'hardTimeoutMs'], kind: 'int', min: 10, max: 600_000, default: 2000,
    help: 'A worker that does not stop by then is ended and replaced. At least timeout_ms.',
  },
  {
    section: 'scripts', key: 'memory_mb',
    target: ['scripts', 'memoryMb'], kind: 'int', min: 4, max: 4096, default: 32,
    help: 'Lua memory cap of a rule invocation (its allocations fail with "not enough memory" beyond it).',
  },
  {
    section: 'scripts', key: 'queue_max',
    target: ['scripts', 'queueMax'], kind: 'int', min: 1, max: 10_000_000, default: 10_000,
    help: 'Payloads waiting per input; beyond it pushes get 503 with Retry-After.',
  },
  {
    section: 'uplink', key: 'engine',
    target: ['uplink', 'engine'], kind: 'enum', values: UPLINK_ENGINES, default: 'off',
    help: 'Ship every record, once durable here, to a NATS JetStream hub (nats), or not at all (off).\n'
      + 'The hub stream is yours to create: docs/uplink.md.',
  },
  {
    section: 'uplink', key: 'servers',
    target: ['uplink', 'servers'], kind: 'list', example: 'nats://hub-1:4222, nats://hub-2:4222, nats://hub-3:4222',
    help: 'Hub servers (comma list of nats:// or tls:// URLs or host:port); needed when engine = nats.',
  },
  {
    section: 'uplink', key: 'credentials',
    target: ['uplink', 'credentials'], kind: 'string', default: undefined, path: true,
    help: 'A NATS .creds file (user JWT and nkey seed). Not set: connect without credentials.',
  },
  {
    section: 'uplink', key: 'subject_prefix',
    target: ['uplink', 'subjectPrefix'], kind: 'string', default: 'edc',
    help: 'Records go to <subject_prefix>.<gateway_id>.<model uuid>, lost ranges to ....<model uuid>.gap.',
  },
  {
    section: 'uplink', key: 'gateway_id',
    target: ['uplink', 'gatewayId'], kind: 'string', default: undefined,
    help: 'This gateway\'s name in subjects and message ids (letters, digits, _ and -, at most 64).\n'
      + 'Not set: generated once into <data_dir>/uplink/gateway-id and kept.',
  },
  {
    section: 'uplink', key: 'models',
    target: ['uplink', 'models'], kind: 'list', example: 'SCHEMAZ848ZRDG, SCHEMA25C5JMSE',
    help: 'Model uuids to ship (comma list), or * for every published model. Not set: *.',
  },
  {
    section: 'uplink', key: 'backlog_max_bytes',
    target: ['uplink', 'backlogMaxBytes'], kind: 'int', min: 0, max: Number.MAX_SAFE_INTEGER, default: 0,
    help: 'Per model: unshipped bytes retention keeps beyond its own limits. Beyond this, retention removes\n'
      + 'them, and a message on <subject_prefix>.<gateway_id>.<model uuid>.gap names the lost ids.\n'
      + '0 = retention never removes what the hub has not acknowledged.',
  },
];

export function keyName(spec: { section: string; key: string }): string {
  return `[${spec.section}] ${spec.key}`;
}

/**
 * Environment override name: EDGE_DATACENTER_<SECTION>_<KEY>, with `plugin.http_server` as HTTP,
 * e.g. EDGE_DATACENTER_HTTP_PORT, EDGE_DATACENTER_STORE_SYNC, EDGE_DATACENTER_MAIN_DATA_DIR.
 */
export function envName(spec: { section: string; key: string }): string {
  const section = spec.section === 'plugin.http_server' ? 'HTTP' : spec.section.toUpperCase();
  return `EDGE_DATACENTER_${section}_${spec.key.toUpperCase()}`;
}
