/**
 * GENERIC_MQTT_SERVER: an MQTT broker inside the service (aedes on a net.Server), which devices publish
 * to. Each PUBLISH becomes RHILEX's event `{action: "publish", clientid, username, ipaddress, ts, topic,
 * payload}` (RHILEX's source/lightweight_mqtt_server.go: ts in Unix milliseconds, payload the message as
 * UTF-8 text); connects and disconnects send `{action, clientid, username, ipaddress, ts}`, best effort.
 *
 * Acknowledgement: aedes asks `authorizePublish` before it sends the PUBACK (QoS 1) or stores the packet
 * and sends the PUBREC (QoS 2); that callback is called only once the message's records are stored
 * (deliver.ts), so a PUBACK means stored (durably under `sync = always`). aedes reads a client's next
 * chunk of the socket only once every packet of the last one is handled: a full queue or a stalled rule
 * leaves the socket unread, and TCP flow control slows the publisher. Nothing is dropped.
 *
 * Batches: the messages of one turn of the event loop, across clients (every socket read of it), go to
 * the queue as one push (one ticket and one settle instead of one per message); each is acknowledged once
 * the whole push is stored, a refused push is offered again whole (deliver.ts).
 *
 * Limits: maxClients connections (net.Server maxConnections), maxMessageBytes a packet (refused from its
 * length header, before its body is buffered), in flight per client what one socket read holds (64 KiB);
 * subscriptions are refused (the broker is an input, not a relay) and retained flags dropped, so the
 * broker keeps no messages in memory.
 */
import net from 'node:net';
import tls from 'node:tls';
import { Aedes, type Client, type PublishPacket } from 'aedes';
import type { InputTlsFiles, MqttServerConfig } from '../scripts/shared/types.js';
import { StopSignal } from './backoff.js';
import { deliverAll, type InputSink } from './deliver.js';
import { TurnBatches } from './turn-batch.js';
import { errorText, InputStatus } from './input-status.js';
import type { InputLog, RunningInput } from './running-input.js';

/** A client that connected and said nothing within this is closed: a plant network scan holds no slot. */
const CONNECT_TIMEOUT_MS = 10_000;
/** CONNACK return code 4 (MQTT 3.1.1) / 0x86 (5.0): bad user name or password. */
const BAD_USERNAME_OR_PASSWORD = 4;
/** What a message of a batch waits for: its acknowledgement (aedes' PUBACK, PUBREC). */
type Done = (err?: Error | null) => void;

type PublishFn = (packet: PublishPacket, client: Client | null | ((err?: Error | null) => void), done?: (err?: Error | null) => void) => void;

/**
 * aedes hands every accepted client message, after its PUBACK, to `broker.publish`: the retained store,
 * the offline queues of matching subscriptions (a persistence lookup), the mqemitter fan-out and the
 * 'publish' event, two promise chains and a handful of callbacks per message. None of it has anything to
 * do here: the broker refuses every subscription, drops retained flags, and the rules already have the
 * message (authorizePublish). So a client's message (a will too) ends there. aedes has no option for
 * this (an `mq` that drops everything would also drop the broker's own $SYS heartbeat, and aedes would
 * then take its connected clients' wills for those of a dead broker and publish them), hence the override
 * of this one instance method; the broker's own messages (client null: $SYS heartbeat, birth, new
 * clients) still go the whole way. It also keeps a client's publish to `$SYS/<id>/new/clients` from
 * reaching aedes' cluster listener, which would close the client named in its payload.
 */
function skipClientFanOut(broker: Aedes): void {
  const target = broker as unknown as { publish: PublishFn };
  const publish = target.publish.bind(broker);
  // publish(packet, done) passes no client: the callback comes second.
  target.publish = (packet, client, done) => (typeof client === 'object' && client !== null ? done?.(null) : publish(packet, client, done));
}

export interface BrokerAuth {
  /** True when `password` is the input's push token (its hash compared, inends.ts). */
  checkPassword(password: string): boolean;
  /** A refused login: `address` is the client's IP, for the audit log. */
  failed(address: string, username: string): void;
}

/**
 * RHILEX's MqttEvent up to its `ts` value, keys in its order (Go marshals struct fields in order): the
 * part that does not change between a client's events. The event is this, the time, then `topic` and
 * `payload` when not empty, and `}`.
 */
function eventHead(action: string, client: Client, username: string): string {
  const fields = JSON.stringify({ action, clientid: client.id, username, ipaddress: remoteOf(client) });
  return `${fields.slice(0, -1)},"ts":`;
}

function remoteOf(client: Client): string {
  const socket = client.conn as net.Socket;
  const address = socket.remoteAddress ?? '';
  return address.includes(':') ? `[${address}]:${socket.remotePort}` : `${address}:${socket.remotePort}`;
}

function isLoopback(host: string): boolean {
  return host === '::1' || /^127\./.test(host);
}

function addressOf(client: Client): string {
  return (client.conn as net.Socket).remoteAddress ?? 'unknown';
}

export class MqttBrokerInput implements RunningInput {
  readonly status = new InputStatus();
  private readonly stopSignal = new StopSignal();
  private readonly usernames = new WeakMap<Client, string>();
  /** Per client, its publish event's JSON up to the `ts` value (the part that does not change). */
  private readonly publishPrefixes = new WeakMap<Client, string>();
  /** The messages of this turn, pushed together; each acknowledged once the push is stored. */
  private readonly batches = new TurnBatches<Done>((events, dones) => this.push(events, dones));
  private broker: Aedes | undefined;
  private server: net.Server | undefined;

  constructor(
    private readonly label: string,
    private readonly config: MqttServerConfig,
    private readonly sink: InputSink,
    private readonly auth: BrokerAuth,
    private readonly log: InputLog,
    /** The HTTP server's certificate and key; undefined when [plugin.http_server] has none. */
    private readonly tlsFiles: InputTlsFiles | undefined,
  ) {}

  async start(): Promise<void> {
    const { host, port, anonymous, maxClients } = this.config;
    const broker = new Aedes({
      connectTimeout: CONNECT_TIMEOUT_MS,
      authenticate: (client, username, password, done) => this.authenticate(client, username, password, done),
      authorizePublish: (client, packet, done) => this.published(client, packet, done),
      // The broker is an input: nobody reads the devices' messages through it.
      authorizeSubscribe: (_client, _subscription, done) => done(null, null),
      authorizeForward: () => null,
    });
    await broker.listen();
    skipClientFanOut(broker);
    this.broker = broker;
    broker.on('client', (client) => this.event('connect', client));
    broker.on('clientDisconnect', (client) => this.event('disconnect', client));
    const accept = (socket: net.Socket): void => {
      const client = broker.handle(socket);
      this.limitPacketSize(client);
    };
    if (this.config.tls && this.tlsFiles === undefined) {
      const why = 'config.tls is true but [plugin.http_server] has no tls_cert_file and tls_key_file: the broker uses that certificate';
      this.status.set('error', why);
      this.log('error', { input: this.label }, `MQTT broker input ${this.label}: ${why}`);
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      this.broker = undefined;
      return;
    }
    const scheme = this.config.tls ? 'mqtts' : 'mqtt';
    const server: net.Server = this.config.tls
      ? tls.createServer({ cert: this.tlsFiles!.cert, key: this.tlsFiles!.key, passphrase: this.tlsFiles!.passphrase }, accept)
      : net.createServer(accept);
    server.maxConnections = maxClients;
    this.server = server;
    server.on('error', (err) => {
      this.status.set('error', err);
      this.log('error', { input: this.label, err: errorText(err) }, `MQTT broker input ${this.label} on ${host}:${port}: ${errorText(err)}`);
    });
    await new Promise<void>((resolve) => {
      server.once('listening', () => {
        this.status.set('listening');
        const listener = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
        this.log('info', { input: this.label, listener, serverName: this.config.serverName }, `MQTT broker input ${this.label} listening on ${listener}`);
        if (!this.config.tls && !isLoopback(host)) {
          this.log('warn', { input: this.label, listener }, `MQTT broker input ${this.label} serves plain MQTT on ${listener}, not loopback: passwords (push tokens) and messages cross the network in clear text; set config.tls (docs/security.md)`);
        }
        if (anonymous) {
          this.log('warn', { input: this.label, listener }, `MQTT broker input ${this.label} on ${listener} takes anonymous clients (config.anonymous: true): anyone who reaches the port can store data`);
        }
        resolve();
      });
      server.once('error', () => resolve());
      server.listen(port, host);
    });
  }

  private authenticate(client: Client, username: string | undefined, password: Readonly<Buffer | undefined>, done: (err: (Error & { returnCode: number }) | null, ok: boolean | null) => void): void {
    const user = username ?? '';
    if (this.config.anonymous || (password !== undefined && this.auth.checkPassword(password.toString('utf8')))) {
      this.usernames.set(client, user);
      done(null, true);
      return;
    }
    this.auth.failed(addressOf(client), user);
    done(Object.assign(new Error('bad user name or password'), { returnCode: BAD_USERNAME_OR_PASSWORD }), false);
  }

  private published(client: Client | null, packet: PublishPacket, done: (err?: Error | null) => void): void {
    // A will of a client of another broker instance (aedes clustering): not ours.
    if (client === null) return done(new Error('no client'));
    this.status.messagesIn++;
    if (packet.dup) this.status.redelivered++;
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    if (payload.length > this.config.maxMessageBytes) {
      this.status.refused++;
      return done(new Error(`message of ${payload.length} bytes is over maxMessageBytes ${this.config.maxMessageBytes}`));
    }
    // Retained messages would be kept by the broker for subscribers it refuses anyway.
    packet.retain = false;
    this.batches.add(this.publishEvent(client, packet.topic, payload), done);
  }

  /** The publish event, its head built once per client (not an object and a JSON.stringify per message). */
  private publishEvent(client: Client, topic: string, payload: Buffer): string {
    let prefix = this.publishPrefixes.get(client);
    if (prefix === undefined) {
      prefix = eventHead('publish', client, this.usernames.get(client) ?? '');
      this.publishPrefixes.set(client, prefix);
    }
    let event = prefix + Date.now();
    if (topic !== '') event += `,"topic":${JSON.stringify(topic)}`;
    if (payload.length > 0) event += `,"payload":${JSON.stringify(payload.toString('utf8'))}`;
    return `${event}}`;
  }

  /** Pushes a batch and acknowledges its messages once all are stored. */
  private push(events: string[], dones: Done[]): void {
    void deliverAll(this.sink, events, this.status, this.stopSignal).then((outcome) => {
      // Stopped: no acknowledgement; the clients send the messages again to the next broker they reach.
      // Otherwise each was stored, or failed in a rule (a retry would fail the same way): acknowledged.
      const err = outcome === 'stopped' ? new Error('input stopped') : null;
      for (const done of dones) done(err);
    });
  }

  /** Connects and disconnects reach the rules as RHILEX sends them; dropped when the queue is full (they carry no data). */
  private event(action: 'connect' | 'disconnect', client: Client): void {
    if (this.stopSignal.isStopped) return;
    // After the messages taken before it (a disconnect after the client's last messages).
    this.batches.flush();
    try {
      void this.sink([`${eventHead(action, client, this.usernames.get(client) ?? '')}${Date.now()}}`], { waitDurable: false }).catch(() => undefined);
    } catch {
      // queue full: an event is not worth holding a client for
    }
  }

  /**
   * mqtt-packet buffers a whole packet before aedes sees it; the remaining-length header is checked as
   * soon as it is parsed, so a client announcing 256 MB is cut off before it sends them.
   */
  private limitPacketSize(client: Client): void {
    const parser = (client as unknown as { _parser?: { _parseLength?: () => boolean; packet: { length: number }; _emitError(e: Error): void } })._parser;
    if (parser === undefined || typeof parser._parseLength !== 'function') return;
    const original = parser._parseLength.bind(parser);
    // Topic length, topic (at most 65,535 bytes) and packet id ride on top of the payload: only a message over maxMessageBytes is cut off.
    const limit = this.config.maxMessageBytes + 65_539;
    parser._parseLength = () => {
      const parsed = original();
      if (parsed && parser.packet.length > limit) {
        this.status.messagesIn++; // in and refused, as a message over maxMessageBytes in published(): the counters add up
        this.status.refused++;
        parser._emitError(new Error(`packet of ${parser.packet.length} bytes is over the limit of ${limit}`));
        return false;
      }
      return parsed;
    };
  }

  async stop(): Promise<void> {
    this.stopSignal.stop();
    this.status.set('stopped');
    const server = this.server;
    const broker = this.broker;
    this.server = undefined;
    this.broker = undefined;
    await Promise.all([
      server === undefined ? undefined : new Promise<void>((resolve) => server.close(() => resolve())),
      broker === undefined ? undefined : new Promise<void>((resolve) => broker.close(() => resolve())),
    ]);
  }
}
