/**
 * UDP_SERVER: one datagram is one payload, handed to the rules in RHILEX's shape
 * `{"clientAddr": "<ip>:<port>", "data": "<hex of the datagram>"}` (RHILEX's source/uudp_source.go), and
 * answered `ok\r\n` once queued, as RHILEX does. UDP has no acknowledgement nor flow control: a datagram
 * longer than maxDataLength or one that finds the queue full is refused and counted, never waited for
 * (the kernel drops what the socket buffer cannot hold, uncounted). Lossy by nature: docs/models.md.
 */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { UdpServerConfig } from '../scripts/shared/types.js';
import type { InputSink } from './deliver.js';
import { errorText, InputStatus } from './input-status.js';
import type { InputLog, RunningInput } from './running-input.js';

const OK = Buffer.from('ok\r\n');

export class UdpServerInput implements RunningInput {
  readonly status = new InputStatus();
  private socket: dgram.Socket | undefined;

  constructor(
    private readonly label: string,
    private readonly config: UdpServerConfig,
    private readonly sink: InputSink,
    private readonly log: InputLog,
  ) {}

  start(): Promise<void> {
    const { host, port } = this.config;
    const socket = dgram.createSocket({ type: isIPv6(host) ? 'udp6' : 'udp4' });
    this.socket = socket;
    socket.on('message', (data, remote) => this.received(data, remote));
    socket.on('error', (err) => {
      this.status.set('error', err);
      this.log('error', { input: this.label, err: errorText(err) }, `UDP input ${this.label} on ${host}:${port}: ${errorText(err)}`);
    });
    return new Promise((resolve) => {
      socket.once('listening', () => {
        this.status.set('listening');
        this.log('info', { input: this.label, listener: `udp://${host}:${port}` }, `UDP input ${this.label} listening on udp://${host}:${port}`);
        resolve();
      });
      // A port already taken: the input shows the error, the service runs on.
      socket.once('error', () => resolve());
      socket.bind(port, host);
    });
  }

  private received(data: Buffer, remote: dgram.RemoteInfo): void {
    this.status.messagesIn++;
    if (data.length > this.config.maxDataLength) {
      this.status.refused++;
      return;
    }
    const clientAddr = remote.family === 'IPv6' ? `[${remote.address}]:${remote.port}` : `${remote.address}:${remote.port}`;
    const payload = JSON.stringify({ clientAddr, data: data.toString('hex') });
    let stored: Promise<unknown>;
    try {
      stored = this.sink([payload], { waitDurable: false });
    } catch {
      // Queue full or the store read-only: a datagram cannot wait.
      this.status.refused++;
      return;
    }
    this.socket?.send(OK, remote.port, remote.address, () => undefined);
    stored.then(
      (result) => {
        if ((result as { accepted: number }).accepted === 1) this.status.stored++;
      },
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    const socket = this.socket;
    this.socket = undefined;
    this.status.set('stopped');
    if (socket === undefined) return;
    await new Promise<void>((resolve) => {
      try {
        socket.close(() => resolve());
      } catch {
        resolve();
      }
    });
  }
}
