/**
 * Shapes of the rule runtime: the public objects (rules, inputs, stats, push answers) and the narrow
 * views of the model registry and the store it needs. The worker messages are in protocol.ts.
 */
import type { ModelRegistry } from '../../models/registry.js';
import type { ModelLog } from '../../store/index.js';

export const INEND_TYPES = ['HTTP', 'SIMULATOR', 'UDP_SERVER', 'GENERIC_MQTT_SERVER', 'GENERIC_MQTT'] as const;
export type InendType = (typeof INEND_TYPES)[number];

/** The input types that listen or connect (src/inputs/): their stats carry a connection and counters. */
export const NETWORK_INEND_TYPES = ['UDP_SERVER', 'GENERIC_MQTT_SERVER', 'GENERIC_MQTT'] as const;
export type NetworkInendType = (typeof NETWORK_INEND_TYPES)[number];

/** RHILEX's config of a UDP_SERVER (source/uudp_source.go): one datagram is one payload. */
export interface UdpServerConfig {
  host: string;
  port: number;
  maxDataLength: number;
}

/** RHILEX's config of a GENERIC_MQTT_SERVER (source/lightweight_mqtt_server.go) and our limits. */
export interface MqttServerConfig {
  /** RHILEX's listener name; kept so an export round-trips, shown in the start-up log. */
  serverName: string;
  host: string;
  port: number;
  /** false: a client must give the input's push token as its password. */
  anonymous: boolean;
  /** mqtts with the HTTP server's certificate and key ([plugin.http_server] tls_cert_file, tls_key_file). */
  tls: boolean;
  maxClients: number;
  maxMessageBytes: number;
}

/** RHILEX's config of a GENERIC_MQTT (source/generic_mqtt_source.go, resconfig/source_mqtt_config.go). */
export interface MqttClientConfig {
  host: string;
  port: number;
  clientId: string;
  username: string;
  password: string;
  qos: 0 | 1 | 2;
  subTopics: string[];
  /** mqtts, the broker's certificate checked against Node's CA store (and NODE_EXTRA_CA_CERTS). */
  tls: boolean;
  maxMessageBytes: number;
}

/** The HTTP server's certificate and key, checked by src/http/transport/tls.ts, for the MQTT broker inputs. */
export interface InputTlsFiles {
  cert: Buffer;
  key: Buffer;
  passphrase: string | undefined;
}

/** Where a network input stands (`inends/stats` `connection`). */
export type InputConnectionState = 'listening' | 'connected' | 'reconnecting' | 'error' | 'stopped';

export interface InputConnection {
  state: InputConnectionState;
  lastError: string | null;
  /** ISO time of the last change of state. */
  since: string;
}

/** What a network input adds to its stats. */
export interface NetworkInputStats {
  connection: InputConnection;
  /** Messages (datagrams, MQTT PUBLISH packets) that arrived. */
  messagesIn: number;
  /** Messages whose payload went through the rules and was stored (an MQTT QoS 1/2 message is acknowledged then). */
  stored: number;
  /** Messages refused: too long, queue full (UDP), not authorised. */
  refused: number;
  /** MQTT messages that arrived with DUP set: a redelivery, which may be stored a second time. */
  redelivered: number;
}

/** A rule as RHILEX shapes it: three script strings and the inputs it reads. */
export interface Rule {
  uuid: string;
  name: string;
  description: string;
  /** Inend uuids; payloads of each reach the rule in arrival order. */
  fromSource: string[];
  actions: string;
  success: string;
  failed: string;
  createdAtMs: number;
}

export interface SimulatorTag {
  tag: string;
  min: number;
  max: number;
  /** Decimal places of the values, 0..6; absent: 2. 0 gives whole numbers (an INTEGER attribute refuses fractions). */
  decimals?: number;
}

export interface SimulatorConfig {
  intervalMs: number;
  /** Payloads emitted per tick, so a benchmark can exceed one payload per timer tick. */
  payloadsPerTick: number;
  tags: SimulatorTag[];
}

export interface Inend {
  uuid: string;
  name: string;
  type: InendType;
  description: string;
  /** `{}` for HTTP, a SimulatorConfig for SIMULATOR, RHILEX's keys for the network inputs (docs/models.md). */
  config: Record<string, unknown>;
  createdAtMs: number;
}

export interface PushError {
  /** Index of the payload within the push. */
  index: number;
  message: string;
}

export interface PushResult {
  accepted: number;
  failed: number;
  /** The first few failures, in payload order. */
  errors: PushError[];
  /**
   * Every accepted record is on disk (fdatasync'ed) when the answer is sent: always with `sync = always`,
   * and with `wait=durable` under `interval` and `none`. False when the push did not wait for a sync
   * (contract 9).
   */
  durable: boolean;
  /**
   * Set when payloads failed because a model's store turned read-only (disk full) during the push: the
   * store's message. Records of the push that were accepted stay in memory and are written when space
   * returns.
   */
  storeReadOnly?: string;
  /** With storeReadOnly: the 1-based numbers of the payloads (NDJSON lines) whose records are kept. */
  kept?: number[];
}

export interface RuleError {
  message: string;
  line?: number;
  atMs: number;
}

export interface RuleStats {
  uuid: string;
  invocations: number;
  successes: number;
  failures: number;
  lastErrors: RuleError[];
  /** Upper bounds of the histogram buckets holding the median and the 99th percentile; 0 before any run. */
  p50Ms: number;
  p99Ms: number;
  /** When the rule last ran on a payload; null before the first. */
  lastRunAtMs: number | null;
}

/** An input's health since the service started (`GET /api/v1/inends/stats`). */
export interface InputStats {
  uuid: string;
  /** When a payload last arrived (pushed or simulated); null before the first. */
  lastPayloadAtMs: number | null;
  /** Payloads every rule ran on without an error, their records stored. */
  accepted: number;
  /** Payloads that failed in a rule or in the store. */
  failed: number;
  /** Payloads waiting in the input's queue now. */
  queued: number;
  lastError: { message: string; atMs: number } | null;
}

/** The stats of a UDP_SERVER, GENERIC_MQTT_SERVER or GENERIC_MQTT input. */
export type InputStatsView = InputStats | (InputStats & NetworkInputStats);

export interface ValidationResult {
  ok: boolean;
  error?: string;
  line?: number;
}

export type LogFn = (level: 'info' | 'warn' | 'error', obj: object, msg: string) => void;

/** A pino logger (or anything with the same three methods) is accepted in place of a LogFn. */
export interface LevelLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export function toLogFn(log: LogFn | LevelLogger | undefined): LogFn | undefined {
  if (log === undefined || typeof log === 'function') return log;
  return (level, obj, msg) => log[level](obj, msg);
}

/**
 * What the engine uses of a model's log: append, wait for durability, watch for a read-only store. A
 * `Pick` of the store's ModelLog, so a change of a signature there fails to compile here.
 */
export type RecordLog = Pick<ModelLog, 'save' | 'savePacked' | 'updateLast' | 'durable' | 'durability' | 'state' | 'stats'>;

/** What the engine uses of the model registry; `log()` is NotFoundError / StateError when not published. */
export type ModelSource = Pick<ModelRegistry, 'list' | 'onChange'> & {
  log(uuid: string): RecordLog;
};
