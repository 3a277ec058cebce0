/**
 * A minimal WebSocket client for tests (Node 20 has no global WebSocket): the RFC 6455 handshake,
 * masked text frames out, text frames in (pings and other control frames are skipped). `paused` stops
 * reading the socket, to play a client that reads too slowly.
 */
import crypto from 'node:crypto';
import net from 'node:net';

export interface WsTestClient {
  /** Status of the handshake answer (101 when upgraded) and its body when refused. */
  status: number;
  body: string;
  messages: any[];
  /** A string is sent as it is (to send text that is not JSON). */
  send(value: unknown): void;
  next(n: number, timeoutMs?: number): Promise<any[]>;
  pause(): void;
  resume(): void;
  close(): void;
}

export async function connectWs(port: number, path: string): Promise<WsTestClient> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise((r) => sock.once('connect', r));
  const key = crypto.randomBytes(16).toString('base64');
  sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`);
  let buf = Buffer.alloc(0);
  const messages: any[] = [];
  let head: { status: number; body: string } | undefined;
  let headDone: () => void = () => {};
  const headSeen = new Promise<void>((r) => (headDone = r));
  sock.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    if (!head) {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = buf.subarray(0, end).toString();
      head = { status: Number(text.split(' ')[1]), body: '' };
      buf = buf.subarray(end + 4);
      if (head.status !== 101) {
        sock.once('close', () => headDone());
        setTimeout(() => headDone(), 200);
      } else headDone();
    }
    if (head.status !== 101) {
      head.body += buf.toString();
      buf = Buffer.alloc(0);
      return;
    }
    for (;;) {
      if (buf.length < 2) return;
      const opcode = buf[0] & 0x0f;
      let len = buf[1] & 0x7f;
      let at = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        at = 10;
      }
      if (buf.length < at + len) return;
      const payload = buf.subarray(at, at + len);
      buf = buf.subarray(at + len);
      if (opcode === 1) messages.push(JSON.parse(payload.toString()));
    }
  });
  await headSeen;
  const h = head as { status: number; body: string };
  return {
    status: h.status,
    body: h.body,
    messages,
    send(value: unknown) {
      const payload = Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));
      const mask = crypto.randomBytes(4);
      const len = payload.length;
      const header = len < 126 ? Buffer.from([0x81, 0x80 | len]) : Buffer.from([0x81, 0x80 | 126, len >> 8, len & 0xff]);
      const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
      sock.write(Buffer.concat([header, mask, masked]));
    },
    // The ceiling only turns a missing message into a failure: a busy machine may deliver late.
    async next(n: number, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      while (messages.length < n && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
      return messages.splice(0, n);
    },
    pause: () => sock.pause(),
    resume: () => sock.resume(),
    close: () => sock.destroy(),
  };
}
