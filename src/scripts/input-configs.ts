/**
 * The configs of the network inputs (UDP_SERVER, GENERIC_MQTT_SERVER, GENERIC_MQTT), with RHILEX's keys
 * and defaults (RHILEX's source/uudp_source.go, lightweight_mqtt_server.go, generic_mqtt_source.go), so a
 * RHILEX export is accepted as it is. Each key has a domain; a value outside it is a 400 naming the key
 * and the rule. Keys RHILEX does not have are our limits, optional, with defaults.
 */
import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { InvalidArgumentError } from '../errors.js';
import { describeValue, mustBe, oneOf, range } from '../util/messages.js';
import type { Inend, MqttClientConfig, MqttServerConfig, UdpServerConfig } from './shared/types.js';

export const PORT_MAX = 65_535;
/** The largest UDP payload over IPv4 (65,535 - 8 - 20 bytes). */
export const UDP_DATA_LENGTH_MAX = 65_507;
export const UDP_DEFAULTS = { host: '0.0.0.0', port: 6200, maxDataLength: 1024 } as const;

/** RHILEX's broker listens on 127.0.0.1:1883; its anonymous default (true) is not ours: a password is asked unless said. */
export const MQTT_SERVER_DEFAULTS = { serverName: 'rhilex-mqtt-server', host: '127.0.0.1', port: 1883, anonymous: false, tls: false, maxClients: 100, maxMessageBytes: 65_536 } as const;
export const MQTT_CLIENTS_MAX = 10_000;
/** An MQTT message a rule receives is a string in a worker task; 1 MiB is far above a sensor's reading. */
export const MQTT_MESSAGE_BYTES_MAX = 1_048_576;
export const MQTT_CLIENT_DEFAULTS = { port: 1883, username: '', password: '', qos: 1, tls: false, maxMessageBytes: 65_536 } as const;
export const SUB_TOPICS_MAX = 64;
/** MQTT allows 65,535 bytes; a client id, a user name, a topic filter of a plant network is far shorter. */
const TEXT_CHARS_MAX = 1024;
const HOST_CHARS_MAX = 253;
const SERVER_NAME_CHARS_MAX = 128;

type Raw = Record<string, unknown>;

function object(value: unknown, shape: string): Raw {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidArgumentError(mustBe('config', `an object ${shape}`, value));
  return value as Raw;
}

function integer(c: Raw, key: string, min: number, max: number, fallback: number): number {
  const v = c[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw new InvalidArgumentError(mustBe(`config.${key}`, `an integer in ${range(min, max)}`, v));
  return v;
}

function text(c: Raw, key: string, maxChars: number, fallback: string | undefined, nonEmpty: boolean): string {
  const v = c[key] ?? fallback;
  const rule = `a ${nonEmpty ? 'non-empty ' : ''}string of at most ${maxChars} characters`;
  if (typeof v !== 'string' || v.length > maxChars || (nonEmpty && v === '')) throw new InvalidArgumentError(mustBe(`config.${key}`, rule, v));
  // NUL ends a C string in a log line or a broker's table: never a part of a name.
  if (v.includes('\0')) throw new InvalidArgumentError(mustBe(`config.${key}`, `${rule} without NUL`, v));
  return v;
}

/** A DNS name: dot-separated labels of letters, digits, `-` and `_` (Docker's and some plants' names), at most 63 each. */
const HOST_NAME = /^(?=.{1,253}$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/;

/** A broker to connect to: a host name or an IPv4 or IPv6 address (anything else made no URL: mqtt.js threw). */
function brokerHost(c: Raw): string {
  const v = text(c, 'host', HOST_CHARS_MAX, undefined, true);
  if (isIP(v) === 0 && !HOST_NAME.test(v)) {
    throw new InvalidArgumentError(mustBe('config.host', 'a host name (letters, digits, - and _, dot-separated labels of at most 63) or an IPv4 or IPv6 address', v));
  }
  return v;
}

function ipAddress(c: Raw, fallback: string): string {
  const v = c.host ?? fallback;
  // RHILEX's UDP input refuses a host net.ParseIP does not read; a listener binds an address, not a name.
  if (typeof v !== 'string' || isIP(v) === 0) throw new InvalidArgumentError(mustBe('config.host', 'an IPv4 or IPv6 address to listen on (0.0.0.0: every interface)', v));
  return v;
}

function bool(c: Raw, key: string, fallback: boolean): boolean {
  const v = c[key] ?? fallback;
  if (typeof v !== 'boolean') throw new InvalidArgumentError(mustBe(`config.${key}`, 'true or false', v));
  return v;
}

export function parseUdpServerConfig(value: unknown): UdpServerConfig {
  const c = object(value ?? {}, '{host, port, maxDataLength}');
  return {
    host: ipAddress(c, UDP_DEFAULTS.host),
    port: integer(c, 'port', 1, PORT_MAX, UDP_DEFAULTS.port),
    maxDataLength: integer(c, 'maxDataLength', 1, UDP_DATA_LENGTH_MAX, UDP_DEFAULTS.maxDataLength),
  };
}

export function parseMqttServerConfig(value: unknown): MqttServerConfig {
  const c = object(value ?? {}, '{host, port, anonymous}');
  const d = MQTT_SERVER_DEFAULTS;
  return {
    serverName: text(c, 'serverName', SERVER_NAME_CHARS_MAX, d.serverName, true),
    host: ipAddress(c, d.host),
    port: integer(c, 'port', 1, PORT_MAX, d.port),
    anonymous: bool(c, 'anonymous', d.anonymous),
    tls: bool(c, 'tls', d.tls),
    maxClients: integer(c, 'maxClients', 1, MQTT_CLIENTS_MAX, d.maxClients),
    maxMessageBytes: integer(c, 'maxMessageBytes', 1, MQTT_MESSAGE_BYTES_MAX, d.maxMessageBytes),
  };
}

/**
 * A topic filter as MQTT 3.1.1 section 4.7 allows it: `#` only as the whole last level, `+` only as a
 * whole level. The broker would refuse the subscription at run time; refused here, the 400 names it.
 */
export function topicFilterProblem(filter: string): string | undefined {
  const levels = filter.split('/');
  for (let i = 0; i < levels.length; i++) {
    const level = levels[i];
    if (level.includes('#') && (level !== '#' || i !== levels.length - 1)) return '"#" only as the whole last level';
    if (level.includes('+') && level !== '+') return '"+" only as a whole level';
  }
  return undefined;
}

/** What the API shows for a GENERIC_MQTT input's stored password (docs/security.md). */
export const PASSWORD_SHOWN = '******';

/**
 * An input as the API answers it: a GENERIC_MQTT password is a credential for another system, so it is
 * shown as PASSWORD_SHOWN (or "" when none is set), never in clear. An update that sends that mask back,
 * or no password, keeps the stored one (parseMqttClientConfig).
 */
export function withoutSecrets(inend: Inend): Inend {
  if (inend.type !== 'GENERIC_MQTT' || typeof inend.config.password !== 'string') return inend;
  return { ...inend, config: { ...inend.config, password: inend.config.password === '' ? '' : PASSWORD_SHOWN } };
}

/**
 * `current` is the stored config on an update: a config without clientId keeps the stored one, so the
 * broker's session (and the messages it keeps for us) survives the update; a config without password, or
 * with PASSWORD_SHOWN (what the list showed), keeps the stored password.
 */
export function parseMqttClientConfig(value: unknown, current?: Raw): MqttClientConfig {
  const c = object(value, '{host, port, clientId, username, password, qos, subTopics}');
  const d = MQTT_CLIENT_DEFAULTS;
  const host = brokerHost(c);
  // RHILEX's default id changes with each start (rhilex_mqtt_source_<second>), which would lose the persistent session: ours is drawn once and stored.
  const keptId = typeof current?.clientId === 'string' ? current.clientId : `edge_datacenter_${randomBytes(6).toString('hex')}`;
  const qos = c.qos ?? d.qos;
  if (qos !== 0 && qos !== 1 && qos !== 2) throw new InvalidArgumentError(mustBe('config.qos', oneOf(['0', '1', '2']), qos));
  const topics = c.subTopics;
  if (!Array.isArray(topics) || topics.length === 0 || topics.length > SUB_TOPICS_MAX) {
    const given = Array.isArray(topics) ? `${topics.length} topics` : describeValue(topics);
    throw new InvalidArgumentError(`config.subTopics must be an array of ${range(1, SUB_TOPICS_MAX)} topic filters, got ${given}`);
  }
  const subTopics = topics.map((t: unknown, i: number) => {
    const filter = text({ [`subTopics[${i}]`]: t }, `subTopics[${i}]`, TEXT_CHARS_MAX, undefined, true);
    const problem = topicFilterProblem(filter);
    if (problem !== undefined) throw new InvalidArgumentError(mustBe(`config.subTopics[${i}]`, `an MQTT topic filter (${problem})`, filter));
    return filter;
  });
  return {
    host,
    port: integer(c, 'port', 1, PORT_MAX, d.port),
    clientId: text(c, 'clientId', TEXT_CHARS_MAX, keptId, true),
    username: text(c, 'username', TEXT_CHARS_MAX, d.username, false),
    password: current !== undefined && (c.password === undefined || c.password === PASSWORD_SHOWN) ? keptPassword(current) : text(c, 'password', TEXT_CHARS_MAX, d.password, false),
    qos,
    subTopics: [...new Set(subTopics)],
    tls: bool(c, 'tls', d.tls),
    maxMessageBytes: integer(c, 'maxMessageBytes', 1, MQTT_MESSAGE_BYTES_MAX, d.maxMessageBytes),
  };
}

function keptPassword(current: Raw): string {
  return typeof current.password === 'string' ? current.password : MQTT_CLIENT_DEFAULTS.password;
}

/** RHILEX's input types this service does not build (RHILEX's typex/xsource.go): a 400 names them. */
export const RHILEX_TYPES_NOT_BUILT = ['TCP_SERVER', 'COAP_SERVER', 'GRPC_SERVER', 'CUSTOM_PROTOCOL_SERVER', 'HTTP_SERVER', 'INTERNAL_EVENT', 'COMTC_EVENT_FORWARDER'] as const;
