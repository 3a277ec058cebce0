/**
 * The one connection to the hub: the official client (@nats-io/transport-node + @nats-io/jetstream),
 * tuned for fleets of thousands of gateways (docs/uplink.md "Reconnects"): reconnect for ever, a
 * reconnect jitter of seconds rather than the client's 100 ms so a hub restart is not met by every
 * gateway at once, and a 20 s ping with 3 missed pings so a hung server is noticed in a minute, not 4.
 * The first connection is made in the background: the service starts whether the hub is up or not.
 */
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, headers, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import type { Message } from './message.js';

export const RECONNECT_WAIT_MS = 2000;
export const RECONNECT_JITTER_MS = 5000;
export const PING_INTERVAL_MS = 20_000;
export const MAX_PINGS_OUT = 3;
export const PUBLISH_TIMEOUT_MS = 5000;

export interface LinkOptions {
  servers: readonly string[];
  /** A .creds file; '' for none. */
  credentials: string;
  gateway: string;
  log: { info(message: string): void; warn(message: string): void };
  /** Tests shorten the reconnect timing. */
  reconnectWaitMs?: number;
  reconnectJitterMs?: number;
}

/** What a shipper needs of the link: tests can put a slow or failing one in its place. */
export interface Publisher {
  readonly connected: boolean;
  /**
   * Resolves once the hub stored the message (`duplicate`: it had it already), rejects otherwise. `seq`: the
   * stream sequence the hub names (undefined: the publisher does not know it); a duplicate at sequence 0 is
   * not a stored message (see ack-window.ts).
   */
  publish(m: Message): Promise<PublishAck>;
}

export interface PublishAck {
  duplicate: boolean;
  seq?: number;
}

export class NatsLink implements Publisher {
  private nc: NatsConnection | undefined;
  private js: JetStreamClient | undefined;
  private closed = false;
  private isConnected = false;
  connectedSinceMs: number | undefined;
  lastError: string | undefined;
  /** Which server the connection is on now. */
  server: string | undefined;
  reconnects = 0;

  constructor(private readonly o: LinkOptions) {}

  get connected(): boolean {
    return this.isConnected;
  }

  start(): void {
    const creds = this.o.credentials === '' ? undefined : readFileSync(this.o.credentials);
    void connect({
      servers: [...this.o.servers],
      name: `edge-datacenter ${this.o.gateway}`,
      ...(creds === undefined ? {} : { authenticator: credsAuthenticator(creds) }),
      waitOnFirstConnect: true,
      maxReconnectAttempts: -1,
      reconnectTimeWait: this.o.reconnectWaitMs ?? RECONNECT_WAIT_MS,
      reconnectJitter: this.o.reconnectJitterMs ?? RECONNECT_JITTER_MS,
      reconnectJitterTLS: this.o.reconnectJitterMs ?? RECONNECT_JITTER_MS,
      pingInterval: PING_INTERVAL_MS,
      maxPingOut: MAX_PINGS_OUT,
    }).then(
      (nc) => this.adopt(nc),
      (err: Error) => {
        this.lastError = err.message;
        this.o.log.warn(`uplink: cannot connect to ${this.o.servers.join(', ')}: ${err.message}`);
      },
    );
  }

  async publish(m: Message): Promise<PublishAck> {
    const js = this.js;
    if (js === undefined || this.closed) throw new Error('not connected to the hub');
    const h = headers();
    for (const [k, v] of Object.entries(m.headers)) h.set(k, v);
    const ack = await js.publish(m.subject, m.body, { msgID: m.msgId, headers: h, timeout: PUBLISH_TIMEOUT_MS });
    return { duplicate: ack.duplicate, seq: ack.seq };
  }

  async close(): Promise<void> {
    this.closed = true;
    this.isConnected = false;
    const nc = this.nc;
    this.nc = undefined;
    this.js = undefined;
    if (nc !== undefined) await nc.close().catch(() => {});
  }

  private adopt(nc: NatsConnection): void {
    if (this.closed) {
      void nc.close().catch(() => {});
      return;
    }
    this.nc = nc;
    this.js = jetstream(nc);
    this.markConnected(nc);
    this.o.log.info(`uplink: connected to ${nc.getServer()}`);
    void this.watch(nc);
  }

  private markConnected(nc: NatsConnection): void {
    this.isConnected = true;
    this.connectedSinceMs = Date.now();
    this.server = nc.getServer();
  }

  private async watch(nc: NatsConnection): Promise<void> {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') {
        this.isConnected = false;
        this.connectedSinceMs = undefined;
        this.o.log.warn(`uplink: disconnected from ${s.server}`);
      } else if (s.type === 'reconnect') {
        this.reconnects++;
        this.markConnected(nc);
        this.o.log.info(`uplink: reconnected to ${s.server}`);
      } else if (s.type === 'error') {
        this.lastError = String((s as { error?: unknown }).error ?? 'error');
      }
    }
  }
}
