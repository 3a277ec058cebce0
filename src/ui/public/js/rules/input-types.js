// What the UI knows of each input type (contract sections 7 and 21): its label, its config's defaults and
// the checks the server makes on it (so a form can say what is wrong before sending, the server's own
// message still shown when it refuses), a one-line summary, the `args` a rule receives, and the state of
// a connection (the MQTT client, the built-in broker, the UDP listener) from `inends/stats`.
import { h } from '../core/dom.js';
import { fmtTime } from '../core/time.js';

/** [type, label] in the order the form offers them. */
export const INPUT_TYPES = [
  ['HTTP', 'HTTP push'],
  ['SIMULATOR', 'Simulator'],
  ['GENERIC_MQTT', 'MQTT client'],
  ['GENERIC_MQTT_SERVER', 'MQTT broker (built in)'],
  ['UDP_SERVER', 'UDP server'],
];

/** The types whose stats carry a `connection` block and message counters. */
export const CONNECTED_TYPES = new Set(['GENERIC_MQTT', 'GENERIC_MQTT_SERVER', 'UDP_SERVER']);

export const typeLabel = (type) => (INPUT_TYPES.find(([t]) => t === type) || [type, type])[1];

/**
 * A client id drawn once and stored (its persistent session lives under it at the broker), in the
 * server's own form (`edge_datacenter_` and 12 hex digits).
 */
export function newClientId() {
  const bytes = new Uint8Array(6);
  crypto.getRandomValues(bytes);
  return `edge_datacenter_${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

/**
 * The config a new input of the type starts with: the server's defaults (RHILEX's, but a password asked
 * for by the built-in broker), and every topic for the MQTT client.
 */
export function defaultConfig(type) {
  if (type === 'GENERIC_MQTT') return { host: '127.0.0.1', port: 1883, clientId: newClientId(), username: '', password: '', qos: 1, subTopics: ['#'] };
  if (type === 'GENERIC_MQTT_SERVER') return { host: '127.0.0.1', port: 1883, anonymous: false };
  if (type === 'UDP_SERVER') return { host: '0.0.0.0', port: 6200, maxDataLength: 1024 };
  return {};
}

/** The server's limits (src/scripts/input-configs.ts). */
export const UDP_DATA_MAX = 65507;
const TEXT_MAX = 1024;
const HOST_MAX = 253;
const TOPICS_MAX = 64;

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
/** An IPv4 or IPv6 address (a listener binds an address, never a name); IPv6 loosely, the server checks it exactly. */
export function isIpAddress(v) {
  return IPV4.test(v) || (v.includes(':') && /^[0-9A-Fa-f:.]{2,45}$/.test(v) && !v.includes(':::'));
}

/** Checks of one topic filter (MQTT 3.1.1, 4.7): `#` only as the last level, `+` alone in its level. */
export function topicFilterProblem(t) {
  if (!t) return 'a topic cannot be empty';
  if (t.length > TEXT_MAX) return `a topic is at most ${TEXT_MAX} characters`;
  if (t.includes('\u0000')) return `topic "${t}" holds a NUL character`;
  const levels = t.split('/');
  for (let i = 0; i < levels.length; i += 1) {
    const l = levels[i];
    if (l.includes('#') && (l !== '#' || i !== levels.length - 1)) return `topic "${t}": # must be a whole level, and the last one`;
    if (l.includes('+') && l !== '+') return `topic "${t}": + must be a whole level`;
  }
  return '';
}

const port = (v) => Number.isInteger(v) && v >= 1 && v <= 65535;

/**
 * Checks a config as the server does. Returns [] or [[key, message], ...] with the config key each
 * message belongs to (subTopics for any topic).
 */
export function configProblems(type, c) {
  const out = [];
  if (!CONNECTED_TYPES.has(type)) return out;
  const host = typeof c.host === 'string' ? c.host : '';
  if (type === 'GENERIC_MQTT') {
    if (!host || host.length > HOST_MAX || /[\s\u0000]/.test(host)) out.push(['host', `Enter the broker's host name or IP address (at most ${HOST_MAX} characters, no spaces).`]);
  } else if (!isIpAddress(host)) out.push(['host', 'Enter an IPv4 or IPv6 address to listen on (0.0.0.0: every interface).']);
  if (!port(c.port)) out.push(['port', 'Enter a port from 1 to 65535.']);
  if (type === 'GENERIC_MQTT') {
    if (!c.clientId) out.push(['clientId', 'Enter a client id: the broker keeps this input\'s session under it.']);
    for (const key of ['clientId', 'username', 'password']) {
      if (String(c[key]).length > TEXT_MAX) out.push([key, `At most ${TEXT_MAX} characters.`]);
      else if (String(c[key]).includes('\u0000')) out.push([key, 'No NUL character.']);
    }
    if (![0, 1, 2].includes(c.qos)) out.push(['qos', 'QoS must be 0, 1 or 2.']);
    if (!c.subTopics.length) out.push(['subTopics', 'Enter at least one topic.']);
    else if (c.subTopics.length > TOPICS_MAX) out.push(['subTopics', `At most ${TOPICS_MAX} topics.`]);
    else {
      const bad = c.subTopics.map(topicFilterProblem).find(Boolean);
      if (bad) out.push(['subTopics', `${bad[0].toUpperCase()}${bad.slice(1)}.`]);
    }
  }
  if (type === 'UDP_SERVER' && !(Number.isInteger(c.maxDataLength) && c.maxDataLength >= 1 && c.maxDataLength <= UDP_DATA_MAX)) {
    out.push(['maxDataLength', `Enter a length from 1 to ${UDP_DATA_MAX} bytes.`]);
  }
  return out;
}

/**
 * The config key a server message names (`config.port must be …`, `config.subTopics[1] …`), or 'name',
 * 'description', or '' when it names none of them.
 */
export function fieldOfMessage(msg) {
  const m = /\bconfig\.([A-Za-z]+)/.exec(msg || '');
  if (m) return m[1];
  if (/^name\b|\bname must\b|\bname .*(taken|exists|used)/i.test(msg || '')) return 'name';
  if (/^description\b/i.test(msg || '')) return 'description';
  return '';
}

/** The address a device reaches a listener at: the page's host when the listener takes every address. */
export function reachHost(host) {
  return !host || host === '0.0.0.0' || host === '::' ? location.hostname : host;
}

/** One line saying what the input does, for the list. */
export function summary(i) {
  const c = i.config || {};
  if (i.type === 'SIMULATOR') return Array.isArray(c.tags) ? `every ${c.intervalMs} ms: ${c.tags.map((t) => t.tag).join(', ')}` : '';
  if (i.type === 'GENERIC_MQTT') return `mqtt://${c.host}:${c.port} as ${c.clientId || '?'}, QoS ${c.qos}, topics ${(c.subTopics || []).join(', ')}`;
  if (i.type === 'GENERIC_MQTT_SERVER') return `broker on ${c.host}:${c.port}, ${c.anonymous ? 'anonymous (no password)' : 'password: the push token'}`;
  if (i.type === 'UDP_SERVER') return `UDP on ${c.host}:${c.port}, datagrams up to ${c.maxDataLength} bytes`;
  return '';
}

/** What `args` holds in a rule for each type (shown in the rule editor). */
export const ARGS_HELP = {
  HTTP: { shape: '[{"tag":"temperature","value":21.5}, ...]', note: 'The push body as it was sent (one NDJSON line is one payload). Read it with json:J2T(args).' },
  SIMULATOR: { shape: '[{"tag":"temperature","value":21.5}, ...]', note: 'One {tag, value} row per simulated tag. Read it with json:J2T(args).' },
  GENERIC_MQTT: {
    shape: '{"topic":"/topic1/dev","payload":"<base64 of the message>"}',
    note: 'One message from the broker. local body = json:J2T(args); then json:base64J2T(body.payload) decodes a JSON message.',
  },
  GENERIC_MQTT_SERVER: {
    shape: '{"action":"publish","clientid":"dev-1","username":"dev","ipaddress":"10.0.0.7","ts":1718000000000,"topic":"plant/line1","payload":"<the message as text>"}',
    note: 'One event of the built-in broker (ts in Unix milliseconds); connect and disconnect come as events too, without topic and payload. local body = json:J2T(args); keep body.action == "publish", then json:J2T(body.payload) reads a JSON message.',
  },
  UDP_SERVER: {
    shape: '{"clientAddr":"10.0.0.7:50123","data":"<hex of the datagram>"}',
    note: 'One datagram (RHILEX\'s shape: its sender and its bytes in hex). local body = json:J2T(args); string.char(table.unpack(hex:Hexs2Bytes(body.data))) gives the datagram\'s bytes back as a string.',
  },
};

/** base64 of a text's UTF-8 bytes. */
function base64(text) {
  let bin = '';
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin);
}

/** hex of a text's UTF-8 bytes. */
function hex(text) {
  return [...new TextEncoder().encode(text)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A payload as an input of the type hands it to a rule: the MQTT client wraps the message in base64, the
 * built-in broker as text, the UDP server the datagram in hex, in their envelopes.
 */
export function argsExample(type, message) {
  if (type === 'UDP_SERVER') return JSON.stringify({ clientAddr: '10.0.0.7:50123', data: hex(message) });
  if (type === 'GENERIC_MQTT') return JSON.stringify({ topic: 'plant/line1', payload: base64(message) });
  if (type === 'GENERIC_MQTT_SERVER') {
    return JSON.stringify({ action: 'publish', clientid: 'device-1', username: 'device', ipaddress: '10.0.0.7', ts: Date.now(), topic: 'plant/line1', payload: message });
  }
  return message;
}

const STATE_TEXT = { listening: 'Listening', connected: 'Connected', reconnecting: 'Reconnecting', error: 'Error', stopped: 'Stopped' };
const count = (n) => (typeof n === 'number' ? n : 0);

/**
 * The connection block of an input's stats: the state since when, its last error, and the counters.
 * Null when the stats carry no connection (HTTP, simulator, or a server that does not report one).
 */
export function connectionBlock(st) {
  const c = st && st.connection;
  if (!c || typeof c !== 'object') return null;
  const state = String(c.state || 'stopped');
  const since = c.since ? Date.parse(c.since) : NaN;
  return h('div', { class: 'conn', 'data-state': state },
    h('span', {},
      h('span', { class: `state-badge state-${state}`, text: STATE_TEXT[state] || state }),
      Number.isFinite(since) ? ` since ${fmtTime(since)}` : ''),
    c.lastError ? h('span', { class: 'health-error conn-error', title: c.lastError, text: `Last connection error: ${c.lastError}` }) : null,
    h('span', { class: 'conn-counts', text: `${count(st.messagesIn)} in · ${count(st.stored)} stored · ${count(st.refused)} refused · ${count(st.redelivered)} redelivered` }));
}
