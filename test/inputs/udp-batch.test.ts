/**
 * UDP_SERVER hands the datagrams of one turn of the event loop to the queue as one push
 * (src/inputs/udp-server.ts). The input runs on loopback with real UDP sockets, its sink forwarding each
 * push to a real service's HTTP input with the UDP rule (the same engine and store as a UDP_SERVER input;
 * the push answer is the engine's). Checked: a burst from several senders arrives in fewer pushes than
 * datagrams, every datagram is stored once and answered `ok` once; and a push the queue has no room for is
 * split, so the datagrams that fit are taken first come first and only the rest refused, as one at a time.
 */
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors.js';
import type { InputSink } from '../../src/inputs/deliver.js';
import { UdpServerInput } from '../../src/inputs/udp-server.js';
import { startService, type TestService } from '../support/service.js';
import { freePort, httpStandIn, reading, storedTemps, waitFor } from './support.js';

const SENDERS = 3;
const PER_SENDER = 30;

let svc: TestService;
let model: string;
let standIn: Awaited<ReturnType<typeof httpStandIn>>;

beforeAll(async () => {
  svc = await startService();
  standIn = await httpStandIn(svc.base, 'udp_batched', 'UDP_SERVER');
  model = standIn.model;
});

afterAll(async () => {
  await svc?.close();
});

async function startInput(sink: InputSink): Promise<{ input: UdpServerInput; port: number }> {
  const port = await freePort('udp');
  const input = new UdpServerInput('udp (test)', { host: '127.0.0.1', port, maxDataLength: 1024 }, sink, () => undefined);
  await input.start();
  return { input, port };
}

/** A bound socket collecting the replies it gets. */
async function sender(): Promise<{ socket: dgram.Socket; replies: string[] }> {
  const socket = dgram.createSocket('udp4');
  const replies: string[] = [];
  socket.on('message', (m) => replies.push(m.toString()));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return { socket, replies };
}

/** Sends every datagram without waiting between them (a burst), then waits until the kernel took them all. */
async function burst(socket: dgram.Socket, port: number, datagrams: string[]): Promise<void> {
  await Promise.all(datagrams.map((d) => new Promise<void>((resolve, reject) => socket.send(d, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())))));
}

describe('UDP_SERVER batches', () => {
  it('pushes a burst in fewer pushes than datagrams; each datagram stored once and answered ok once', async () => {
    const pushSizes: number[] = [];
    const sink: InputSink = async (payloads) => {
      pushSizes.push(payloads.length);
      const answer = await standIn.push(payloads);
      if (answer.status !== 200) throw new Error(`push: ${answer.status} ${answer.msg}`);
      return answer.data;
    };
    const { input, port } = await startInput(sink);
    const senders = await Promise.all(Array.from({ length: SENDERS }, () => sender()));
    try {
      await Promise.all(senders.map((s, k) => burst(s.socket, port, Array.from({ length: PER_SENDER }, (_, i) => reading(k * 1000 + i, k)))));
      // 90 short datagrams fit the loopback socket's default buffer: none is dropped.
      const read = SENDERS * PER_SENDER;
      const status = await waitFor('every datagram read and settled', async () => input.status.view(), (s) => s.messagesIn === read && s.stored + s.refused === read);
      expect(status.refused).toBe(0);
      expect(pushSizes.reduce((a, b) => a + b, 0)).toBe(read);
      expect(pushSizes.length).toBeLessThan(read);
      await waitFor('every ok', async () => senders.reduce((n, s) => n + s.replies.length, 0), (n) => n === read);
      expect(senders.every((s) => s.replies.every((r) => r === 'ok\r\n'))).toBe(true);
      const stored = await storedTemps(svc.base, model);
      expect(stored.length).toBe(read);
      expect(new Set(stored).size).toBe(read);
    } finally {
      for (const s of senders) s.socket.close();
      await input.stop();
    }
  });

  it('takes what the queue has room for, first come first, and refuses the rest', async () => {
    const ROOM = 7;
    const DATAGRAMS = 20;
    let room = ROOM;
    const taken: number[] = [];
    const sink: InputSink = (payloads) => {
      if (payloads.length > room) throw new UnavailableError(`queue is full (test): room for ${room}`, 1);
      room -= payloads.length;
      for (const p of payloads) {
        const hex = (JSON.parse(p) as { data: string }).data;
        taken.push((JSON.parse(Buffer.from(hex, 'hex').toString()) as Array<{ value: number }>)[0].value);
      }
      return Promise.resolve({ accepted: payloads.length, failed: 0, errors: [], durable: true });
    };
    const { input, port } = await startInput(sink);
    const one = await sender();
    try {
      for (let i = 0; i < DATAGRAMS; i++) await burst(one.socket, port, [reading(i)]);
      const status = await waitFor('all read', async () => input.status.view(), (s) => s.messagesIn === DATAGRAMS && s.stored + s.refused === DATAGRAMS);
      expect(status).toMatchObject({ stored: ROOM, refused: DATAGRAMS - ROOM });
      expect(taken).toEqual(Array.from({ length: ROOM }, (_, i) => i));
      await waitFor('an ok for each taken', async () => one.replies.length, (n) => n === ROOM);
    } finally {
      one.socket.close();
      await input.stop();
    }
  });

  // The kernel gives a socket at most twice net.core.rmem_max; at the common 208 KiB a burst this size
  // overflows it whatever the input asks for.
  const rmemMax = Number(readFileSync('/proc/sys/net/core/rmem_max', 'utf8'));
  it.skipIf(rmemMax < 4 * 1024 * 1024)('keeps a burst of 2,000 datagrams that arrives before it reads any (its receive buffer)', async () => {
    const BURST = 2000;
    const sink: InputSink = (payloads) => Promise.resolve({ accepted: payloads.length, failed: 0, errors: [], durable: true });
    const { input, port } = await startInput(sink);
    const one = await sender();
    try {
      // Every send is handed to the kernel before this process polls its sockets again: the whole burst
      // waits in the input's receive buffer.
      await burst(one.socket, port, Array.from({ length: BURST }, (_, i) => reading(i)));
      const status = await waitFor('the burst read', async () => input.status.view(), (s) => s.messagesIn === BURST, 30_000);
      expect(status).toMatchObject({ messagesIn: BURST, refused: 0 });
    } finally {
      one.socket.close();
      await input.stop();
    }
  });
});
