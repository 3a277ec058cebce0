/**
 * GENERIC_MQTT: a client (mqtt.js) of an existing broker, subscribed to config.subTopics. Each message
 * reaches the rules as RHILEX sends it, `{"topic": "...", "payload": "<base64 of the message>"}`
 * (RHILEX's source/generic_mqtt_source.go marshals the payload bytes, which Go writes as base64).
 *
 * Nothing acknowledged is lost: a QoS 1 PUBACK goes out only once the message's records are stored
 * (deliver.ts). mqtt.js handles the next packet only once the PUBACK of the last is written, which made
 * the input store one message per round trip through the rules (~500 a second). So the PUBACK mqtt.js
 * writes is taken and held (AckHold), mqtt.js reads on, the messages of one turn of the event loop go to
 * the queue as one push, as the broker's do, and the held PUBACKs go out in the order the messages came
 * once their push is stored. The broker's in-flight window bounds what is held, and past
 * UNACKED_MESSAGES_MAX or UNACKED_BYTES_MAX mqtt.js is not let read on: a stalled rule or a full queue
 * leaves the socket unread (flow control) instead of dropping. A persistent session (clean: false, the
 * configured fixed clientId, subscriptions made again on every connect) makes the broker keep the messages
 * published while the service is down and deliver them when it is back. At least once: a message the
 * broker sends again with DUP may be stored twice.
 *
 * QoS 2 is subscribed as QoS 1: mqtt.js answers PUBREC before it hands the message over, so a crash
 * between the two would lose a message the broker counts as delivered.
 *
 * Reconnects are ours, not mqtt.js's fixed period: exponential backoff with jitter, 0.5 s to 30 s.
 */
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import type { MqttClientConfig } from '../scripts/shared/types.js';
import { Backoff, StopSignal } from './backoff.js';
import { AckHold } from './ack-hold.js';
import { deliverAll, type InputSink } from './deliver.js';
import { errorText, InputStatus } from './input-status.js';
import { TurnBatches } from './turn-batch.js';
import type { InputLog, RunningInput } from './running-input.js';

const RECONNECT_FIRST_MS = 500;
const RECONNECT_MAX_MS = 30_000;
const CONNECT_TIMEOUT_MS = 10_000;
const KEEPALIVE_S = 60;
/** Messages taken and not yet acknowledged, at most, and their bytes: past either, mqtt.js waits. */
const UNACKED_MESSAGES_MAX = 1024;
const UNACKED_BYTES_MAX = 16 * 1024 * 1024;

export class MqttClientInput implements RunningInput {
  readonly status = new InputStatus();
  private readonly stopSignal = new StopSignal();
  private readonly backoff = new Backoff(RECONNECT_FIRST_MS, RECONNECT_MAX_MS);
  private client: MqttClient | undefined;
  private reconnectScheduled = false;
  /** The messages of this turn, pushed together; their PUBACKs held until the push is stored. */
  private readonly batches = new TurnBatches<AckHold>((payloads, holds) => this.push(payloads, holds));
  /** Held PUBACKs in the order their messages came; each goes out once it and all before it are settled. */
  private holds: AckHold[] = [];
  private unackedBytes = 0;
  /** mqtt.js's handleMessage callbacks waiting for room under the unacknowledged bounds. */
  private waiting: Array<() => void> = [];

  constructor(
    private readonly label: string,
    private readonly config: MqttClientConfig,
    private readonly sink: InputSink,
    private readonly log: InputLog,
  ) {}

  get url(): string {
    const { host, port } = this.config;
    return `${this.config.tls ? 'mqtts' : 'mqtt'}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  }

  start(): Promise<void> {
    this.log('info', { input: this.label, broker: this.url, topics: this.config.subTopics }, `MQTT input ${this.label} connecting to ${this.url}`);
    this.status.set('reconnecting');
    this.connect();
    return Promise.resolve();
  }

  /**
   * One mqtt.js client per connection, never `reconnect()`: mqtt.js queues packets sent while offline and
   * sends them after a reconnect, so the PUBACK of a message stored after its connection dropped would go
   * out on the next connection, where the broker may have given its packet id to a message not stored yet.
   * A PUBACK of a closed connection is dropped instead; the broker sends the message again (DUP).
   */
  private connect(): void {
    if (!AckHold.canHold()) {
      // A client that cannot hold its PUBACKs would acknowledge messages before they are stored.
      const why = 'this mqtt.js cannot hold PUBACKs until messages are stored (no _sendPacket): not connecting';
      this.status.set('error', why);
      this.log('error', { input: this.label, broker: this.url, err: why }, `MQTT input ${this.label}: ${why}`);
      return;
    }
    let client: MqttClient;
    try {
      client = this.newClient();
    } catch (err) {
      // A config stored before its host was checked (mqtt.js throws on a host that makes no URL).
      this.status.set('error', err);
      this.log('error', { input: this.label, broker: this.url, err: errorText(err) }, `MQTT input ${this.label}: ${errorText(err)}`);
      return;
    }
    this.client = client;
    this.holds = [];
    this.unackedBytes = 0;
    this.waiting = [];
    AckHold.capturePubacks(client);
    client.handleMessage = (packet, done) => this.received(client, packet, done);
    client.on('connect', (connack) => {
      this.backoff.reset();
      this.status.set('connected');
      this.log('info', { input: this.label, broker: this.url, clientId: this.config.clientId, sessionPresent: connack.sessionPresent }, `MQTT input ${this.label} connected to ${this.url} as ${this.config.clientId}`);
      this.subscribe(client);
    });
    client.on('error', (err) => {
      this.status.set('error', err);
      this.log('warn', { input: this.label, broker: this.url, err: errorText(err) }, `MQTT input ${this.label} to ${this.url}: ${errorText(err)}`);
    });
    client.on('close', () => {
      if (this.client !== client) return;
      this.client = undefined;
      // Forced: whatever mqtt.js queued for this connection is dropped with it.
      client.end(true);
      this.scheduleReconnect();
    });
  }

  private newClient(): MqttClient {
    const { clientId, username, password } = this.config;
    return mqtt.connect(this.url, {
      clientId,
      username: username === '' ? undefined : username,
      password: password === '' ? undefined : password,
      clean: false,
      protocolVersion: 4,
      keepalive: KEEPALIVE_S,
      connectTimeout: CONNECT_TIMEOUT_MS,
      // Our own reconnects, with jitter (below); subscriptions are made on each connect.
      reconnectPeriod: 0,
      resubscribe: false,
      queueQoSZero: false,
      // mqtts: the broker's certificate must chain to Node's CA store (or NODE_EXTRA_CA_CERTS) and name the host.
      rejectUnauthorized: true,
    });
  }

  private subscribe(client: MqttClient): void {
    const qos = Math.min(this.config.qos, 1) as 0 | 1;
    const topics = Object.fromEntries(this.config.subTopics.map((t) => [t, { qos }]));
    client.subscribe(topics, (err, granted) => {
      const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
      if (err || refused.length > 0) {
        const why = err ? errorText(err) : `the broker refused the subscription to ${refused.join(', ')}`;
        this.status.set('error', why);
        this.log('error', { input: this.label, broker: this.url, err: why }, `MQTT input ${this.label}: ${why}`);
      }
    });
  }

  private received(client: MqttClient, packet: IPublishPacket, done: (err?: Error) => void): void {
    this.status.messagesIn++;
    if (packet.dup) this.status.redelivered++;
    const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    const hold = new AckHold(client, payload.length);
    this.holds.push(hold);
    this.unackedBytes += hold.bytes;
    if (payload.length > this.config.maxMessageBytes) {
      // Acknowledged and counted: the broker would send it again and again, and it never fits.
      this.status.refused++;
      this.log('warn', { input: this.label, topic: packet.topic, bytes: payload.length }, `MQTT input ${this.label}: a message of ${payload.length} bytes on ${packet.topic} is over maxMessageBytes ${this.config.maxMessageBytes}: not stored`);
      hold.settle();
    } else {
      this.batches.add(JSON.stringify({ topic: packet.topic, payload: payload.toString('base64') }), hold);
    }
    // mqtt.js reads the next packet once this one's callback ran: at once while there is room.
    const readOn = (): void => {
      hold.take(done);
      this.release();
    };
    if (this.hasRoom()) readOn();
    else this.waiting.push(readOn);
  }

  /** Room to read on; always for the only message held, however large (it could never be let through otherwise). */
  private hasRoom(): boolean {
    return this.holds.length <= 1 || (this.holds.length <= UNACKED_MESSAGES_MAX && this.unackedBytes <= UNACKED_BYTES_MAX);
  }

  private push(payloads: string[], holds: AckHold[]): void {
    void deliverAll(this.sink, payloads, this.status, this.stopSignal).then((outcome) => {
      // Stopped before stored: no PUBACK; the broker keeps the messages for our session.
      if (outcome === 'stopped') return;
      for (const hold of holds) hold.settle();
      this.release();
    });
  }

  /**
   * Sends the PUBACKs of the settled messages at the head of the line, in the order the messages came (as
   * MQTT 3.1.1 asks), and lets mqtt.js read on once there is room.
   */
  private release(): void {
    let sent = 0;
    while (sent < this.holds.length && this.holds[sent].ready) {
      const hold = this.holds[sent++];
      this.unackedBytes -= hold.bytes;
      // Only on its own connection: on a closed one the broker sends the message again (DUP).
      if (hold.client === this.client) hold.send();
    }
    if (sent > 0) this.holds = this.holds.slice(sent);
    // mqtt.js waits on one message at most: it reads nothing more until that one's callback ran.
    if (this.waiting.length > 0 && this.hasRoom()) this.waiting.shift()!();
  }

  private scheduleReconnect(): void {
    if (this.stopSignal.isStopped || this.reconnectScheduled) return;
    // A close after an error keeps the error; a close of a good connection is news of its own.
    if (this.status.current === 'connected') this.status.set('reconnecting', `the connection to ${this.url} closed`);
    else if (this.status.current !== 'error') this.status.set('reconnecting');
    this.reconnectScheduled = true;
    void this.stopSignal.sleep(this.backoff.nextMs()).then((go) => {
      this.reconnectScheduled = false;
      if (go && this.client === undefined) this.connect();
    });
  }

  async stop(): Promise<void> {
    this.stopSignal.stop();
    this.status.set('stopped');
    const client = this.client;
    this.client = undefined;
    if (client === undefined) return;
    // Forced: messages not yet stored get no PUBACK and stay with the broker for our session.
    await new Promise<void>((resolve) => client.end(true, {}, () => resolve()));
  }
}
