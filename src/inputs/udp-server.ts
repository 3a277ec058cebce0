/**
 * UDP_SERVER: one datagram is one payload, handed to the rules in RHILEX's shape
 * `{"clientAddr": "<ip>:<port>", "data": "<hex of the datagram>"}` (RHILEX's source/uudp_source.go), and
 * answered `ok\r\n` once queued, as RHILEX does. UDP has no acknowledgement nor flow control: a datagram
 * longer than maxDataLength or one that finds the queue full is refused and counted, never waited for
 * (the kernel drops what the socket buffer cannot hold, uncounted). Lossy by nature: docs/models.md.
 *
 * The datagrams of one turn of the event loop (libuv reads up to 32 a poll, each its own callback) go to
 * the queue as one push (turn-batch.ts), as the broker's messages do: one push, and one worker task, a
 * datagram made a burst cost several times the HTTP path per record. A push that does not fit the queue
 * is split in halves until its parts fit, so the datagrams the queue has room for are taken, first come
 * first, and only the rest refused, as one at a time.
 */
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { InvalidArgumentError, StoreReadOnlyError, UnavailableError } from '../errors.js';
import type { UdpServerConfig } from '../scripts/shared/types.js';
import type { InputSink } from './deliver.js';
import { errorText, InputStatus } from './input-status.js';
import type { InputLog, RunningInput } from './running-input.js';
import { TurnBatches } from './turn-batch.js';

const OK = Buffer.from('ok\r\n');
/**
 * The socket's receive buffer asked for: a burst of datagrams (devices reporting on the same tick) waits
 * there while the event loop is busy. The kernel gives at most net.core.rmem_max (often 208 KiB, a few
 * hundred small datagrams): docs/deploy.md says how to raise it.
 */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

export class UdpServerInput implements RunningInput {
  readonly status = new InputStatus();
  private socket: dgram.Socket | undefined;
  /** The datagrams of this turn, pushed together; each answered `ok` once queued. */
  private readonly batches = new TurnBatches<dgram.RemoteInfo>((payloads, senders) => {
    if (this.socket !== undefined) this.push(payloads, senders);
  });

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
        const receiveBufferBytes = this.enlargeReceiveBuffer(socket);
        this.log('info', { input: this.label, listener: `udp://${host}:${port}`, receiveBufferBytes }, `UDP input ${this.label} listening on udp://${host}:${port}`);
        resolve();
      });
      // A port already taken: the input shows the error, the service runs on.
      socket.once('error', () => resolve());
      socket.bind(port, host);
    });
  }

  /** Asks for RECEIVE_BUFFER_BYTES (the kernel caps it silently); returns what the socket has. */
  private enlargeReceiveBuffer(socket: dgram.Socket): number {
    try {
      socket.setRecvBufferSize(RECEIVE_BUFFER_BYTES);
    } catch (err) {
      this.log('warn', { input: this.label, err: errorText(err) }, `UDP input ${this.label}: the receive buffer stays as it was: ${errorText(err)}`);
    }
    return socket.getRecvBufferSize();
  }

  private received(data: Buffer, remote: dgram.RemoteInfo): void {
    this.status.messagesIn++;
    if (data.length > this.config.maxDataLength) {
      this.status.refused++;
      return;
    }
    const clientAddr = remote.family === 'IPv6' ? `[${remote.address}]:${remote.port}` : `${remote.address}:${remote.port}`;
    this.batches.add(JSON.stringify({ clientAddr, data: data.toString('hex') }), remote);
  }

  /** Queues what fits, answers `ok` to each datagram queued, and counts the rest refused. */
  private push(payloads: string[], senders: dgram.RemoteInfo[]): void {
    let stored: Promise<{ accepted: number }>;
    try {
      stored = this.sink(payloads, { waitDurable: false });
    } catch (err) {
      const tooMany = err instanceof InvalidArgumentError || (err instanceof UnavailableError && !(err instanceof StoreReadOnlyError));
      if (tooMany && payloads.length > 1) {
        const half = Math.ceil(payloads.length / 2);
        this.push(payloads.slice(0, half), senders.slice(0, half));
        this.push(payloads.slice(half), senders.slice(half));
        return;
      }
      // Queue full or the store read-only: a datagram cannot wait.
      this.status.refused += payloads.length;
      return;
    }
    for (const remote of senders) this.socket?.send(OK, remote.port, remote.address, () => undefined);
    stored.then(
      (result) => {
        this.status.stored += result.accepted;
      },
      () => undefined,
    );
  }

  async stop(): Promise<void> {
    // Datagrams read this turn and not pushed yet are pushed now, as they would have been a moment later.
    this.batches.flush();
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
