/**
 * A minimal Redis client speaking RESP2 over one TCP connection, for the Redis streams baseline only:
 * no Redis client is among the project's dependencies, and the protocol is small. Commands are
 * pipelined: `pipeline` writes all of them at once and resolves with the replies in order.
 */
import { connect, type Socket } from 'node:net';

export type Reply = string | number | null | Reply[] | RespError;

export class RespError extends Error {}

/** Encodes one command as a RESP array of bulk strings. */
export function encodeCommand(args: readonly (string | number)[]): string {
  let out = `*${args.length}\r\n`;
  for (const arg of args) {
    const s = String(arg);
    out += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  }
  return out;
}

/** Parses one reply at `pos`; undefined when the buffer does not hold all of it yet. */
function parseReply(buf: Buffer, pos: number): { value: Reply; next: number } | undefined {
  const lineEnd = buf.indexOf('\r\n', pos);
  if (lineEnd < 0) return undefined;
  const type = buf[pos];
  const line = buf.toString('utf8', pos + 1, lineEnd);
  const next = lineEnd + 2;
  switch (type) {
    case 0x2b: // +
      return { value: line, next };
    case 0x2d: // -
      return { value: new RespError(line), next };
    case 0x3a: // :
      return { value: Number(line), next };
    case 0x24: {
      // $
      const length = Number(line);
      if (length < 0) return { value: null, next };
      if (buf.length < next + length + 2) return undefined;
      return { value: buf.toString('utf8', next, next + length), next: next + length + 2 };
    }
    case 0x2a: {
      // *
      const count = Number(line);
      if (count < 0) return { value: null, next };
      const items: Reply[] = [];
      let at = next;
      for (let i = 0; i < count; i++) {
        const item = parseReply(buf, at);
        if (!item) return undefined;
        items.push(item.value);
        at = item.next;
      }
      return { value: items, next: at };
    }
    default:
      throw new Error(`RESP: unexpected reply type ${String.fromCharCode(type)}`);
  }
}

export class RespClient {
  private buffer: Buffer = Buffer.alloc(0);
  private readonly waiting: Array<(reply: Reply) => void> = [];

  private constructor(private readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
  }

  static connect(port: number, host = '127.0.0.1'): Promise<RespClient> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, host, () => resolve(new RespClient(socket)));
      socket.once('error', reject);
    });
  }

  private onData(chunk: Buffer): void {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    let pos = 0;
    while (pos < this.buffer.length && this.waiting.length > 0) {
      const parsed = parseReply(this.buffer, pos);
      if (!parsed) break;
      pos = parsed.next;
      this.waiting.shift()!(parsed.value);
    }
    this.buffer = pos === this.buffer.length ? Buffer.alloc(0) : this.buffer.subarray(pos);
  }

  /** Sends all commands in one write; the replies come back in order. An error reply rejects. */
  pipeline(commands: readonly (readonly (string | number)[])[]): Promise<Reply[]> {
    const replies = commands.map(
      () =>
        new Promise<Reply>((resolve, reject) => {
          this.waiting.push((reply) => (reply instanceof RespError ? reject(reply) : resolve(reply)));
        }),
    );
    this.socket.write(commands.map(encodeCommand).join(''));
    return Promise.all(replies);
  }

  async command(...args: (string | number)[]): Promise<Reply> {
    return (await this.pipeline([args]))[0];
  }

  close(): void {
    this.socket.destroy();
  }
}
