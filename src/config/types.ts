import type { Durability } from '../store/base/types.js';

/** `[plugin.http_server] transport`. */
export type HttpTransportChoice = 'auto' | 'uws' | 'node';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';

/** The whole configuration after parsing and validation, with every default filled in. */
export interface Config {
  main: {
    /** Holds models, metadata, the generated secret and admin token. */
    dataDir: string;
    /** `dataschema_secrets`: never empty after loading. */
    secrets: string[];
    /** Bearer token of every management call. */
    adminToken: string;
    logLevel: LogLevel;
    /** Opens GET /metrics only; '' = not set (the admin token still works). */
    metricsToken: string;
  };
  http: {
    /** `auto` tries uWebSockets.js and falls back to node:http; `uws` and `node` force one (src/http/transport/transport.ts). */
    transport: HttpTransportChoice;
    host: string;
    port: number;
    urlBytesMax: number;
    bodyBytesMax: number;
    idleTimeoutS: number;
    /** Open connections at most; 0 = no limit. */
    maxConnections: number;
    /** Wrong credentials per address per minute before 429; 0 = no limit. */
    authFailuresPerMinute: number;
    /** Absolute paths; '' = not set. Both set: HTTPS; neither: plain HTTP (loadConfig refuses one alone). */
    tlsCertFile: string;
    tlsKeyFile: string;
    /** '' = the key is not encrypted. */
    tlsKeyPassphraseFile: string;
    /** Lower-case host names and addresses without port or brackets; empty = any Host is accepted. */
    allowedHosts: string[];
    /** Addresses and CIDR ranges (`10.0.0.1`, `fd00::/64`) whose X-Forwarded-For is believed; empty = none. */
    trustedProxies: string[];
  };
  store: {
    sync: Durability;
    syncIntervalMs: number;
    segmentBytes: number;
    segmentAgeHours: number;
    retentionMaxRecords: number;
    retentionMaxBytes: number;
    retentionMaxAgeHours: number;
    clockJumpMaxS: number;
    /** Idle fds of sealed segments the store keeps open (StoreOptions.sealedFdsMax). */
    sealedFdsMax: number;
    /** Sealed segments are compacted (StoreOptions.compactSealed). */
    compactSealed: 'on' | 'off';
    /** Free bytes below which writes are refused (StoreOptions.diskReserveBytes). */
    diskReserveBytes: number;
  };
  scripts: {
    /** Worker threads running Lua at most; 0 in the file means defaultWorkerCount(). */
    workers: number;
    /** A worker idle this long stops; 0: workers start with the service and never stop. */
    workerIdleS: number;
    /** Soft limit per invocation (Lua instruction hook). */
    timeoutMs: number;
    /** Hard limit: the worker is ended and replaced. */
    hardTimeoutMs: number;
    memoryMb: number;
    /** Payloads waiting per input before pushes get 503. */
    queueMax: number;
  };
  /** The fleet uplink (contract 17, docs/uplink.md). */
  uplink: {
    /** 'off': no uplink. */
    engine: 'off' | 'nats';
    /** NATS URLs (`nats://host:4222`, `tls://host:4222`) or `host:port`; non-empty when engine is nats. */
    servers: string[];
    /** Absolute path of a NATS `.creds` file; '' = none. */
    credentials: string;
    /** First subject tokens; records go to `<subjectPrefix>.<gatewayId>.<model uuid>`. */
    subjectPrefix: string;
    /** '' until loadConfig reads or generates `<data_dir>/uplink/gateway-id`. */
    gatewayId: string;
    /** Model uuids to ship; empty = every published model (`*`). */
    models: string[];
    /** Unshipped bytes per model kept beyond retention's own limits; 0 = all of them. */
    backlogMaxBytes: number;
  };
}
