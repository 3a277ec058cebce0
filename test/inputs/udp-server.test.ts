/**
 * UDP_SERVER with real UDP sockets: one datagram is one payload in RHILEX's shape {clientAddr, data: hex},
 * answered `ok\r\n` once queued; a datagram over maxDataLength is refused and counted, never stored;
 * RHILEX's defaults (0.0.0.0, 6200, 1024) fill a config that leaves them out.
 */
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUdpServerConfig } from '../../src/scripts/input-configs.js';
import { startService, type TestService } from '../support/service.js';
import { createInput, createModel, createRule, freePort, inputStats, reading, ruleFor, storedTemps, waitFor } from './support.js';

let svc: TestService;
let model: string;
let inend: string;
let port: number;
let socket: dgram.Socket;
const replies: string[] = [];

beforeAll(async () => {
  svc = await startService();
  model = await createModel(svc.base, 'udp');
  port = await freePort('udp');
  inend = (await createInput(svc.base, { name: 'udp', type: 'UDP_SERVER', config: { host: '127.0.0.1', port, maxDataLength: 200 } })).uuid;
  await createRule(svc.base, inend, ruleFor('UDP_SERVER', model));
  await waitFor('listening', () => inputStats(svc.base, inend), (s) => s.connection.state === 'listening');
  socket = dgram.createSocket('udp4');
  socket.on('message', (m) => replies.push(m.toString()));
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
});

afterAll(async () => {
  socket?.close();
  await svc?.close();
});

function send(data: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.send(data, port, '127.0.0.1', (err) => (err ? reject(err) : resolve())));
}

describe('UDP_SERVER', () => {
  it('fills RHILEX defaults for keys left out', () => {
    expect(parseUdpServerConfig({})).toEqual({ host: '0.0.0.0', port: 6200, maxDataLength: 1024 });
    expect(parseUdpServerConfig({ host: '::', port: 9000 })).toEqual({ host: '::', port: 9000, maxDataLength: 1024 });
  });

  it('stores one payload per datagram and answers ok to each', async () => {
    for (let seq = 1; seq <= 30; seq++) {
      await send(reading(seq));
      // One at a time: the loopback's socket buffer is not what this test is about.
      await waitFor(`reply ${seq}`, async () => replies.length, (n) => n >= seq);
    }
    const stored = await waitFor('30 stored', () => storedTemps(svc.base, model), (t) => t.length >= 30);
    expect([...stored].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(replies.every((r) => r === 'ok\r\n')).toBe(true);
    expect(await inputStats(svc.base, inend)).toMatchObject({ messagesIn: 30, stored: 30, refused: 0, connection: { state: 'listening', lastError: null } });
  });

  it('refuses and counts a datagram over maxDataLength', async () => {
    const before = replies.length;
    await send(Buffer.alloc(201, 0x20));
    await send(reading(77));
    await waitFor('reply to the short one', async () => replies.length, (n) => n > before);
    const stats = await waitFor('counted', () => inputStats(svc.base, inend), (s) => s.messagesIn === 32 && s.stored === 31);
    expect(stats.refused).toBe(1);
    expect(replies.length).toBe(before + 1);
  });

  it('hands the rule RHILEX shape {"clientAddr", "data": <hex>}', async () => {
    const echoPort = await freePort('udp');
    const echo = await createInput(svc.base, { name: 'udp-echo', type: 'UDP_SERVER', config: { host: '127.0.0.1', port: echoPort } });
    await createRule(svc.base, echo.uuid, 'Actions = { function(args) Throw(args); return true, args end }');
    await waitFor('listening', () => inputStats(svc.base, echo.uuid), (s) => s.connection.state === 'listening');
    await new Promise<void>((resolve) => socket.send(Buffer.from([0xde, 0xad, 0x00, 0x41]), echoPort, '127.0.0.1', () => resolve()));
    const stats = await waitFor('seen', () => inputStats(svc.base, echo.uuid), (s) => s.lastError !== null);
    const args = JSON.parse(/(\{"clientAddr".*\})/.exec(stats.lastError.message)![1]);
    expect(args).toEqual({ clientAddr: `127.0.0.1:${socket.address().port}`, data: 'dead0041' });
  });

  it('shows the error when its port is taken, and refuses a second input on the same port', async () => {
    const taken = dgram.createSocket('udp4');
    const takenPort = await freePort('udp');
    await new Promise<void>((resolve) => taken.bind(takenPort, '127.0.0.1', resolve));
    try {
      const busy = await createInput(svc.base, { name: 'udp-busy', type: 'UDP_SERVER', config: { host: '127.0.0.1', port: takenPort } });
      const stats = await waitFor('error', () => inputStats(svc.base, busy.uuid), (s) => s.connection.state === 'error');
      expect(stats.connection.lastError).toMatch(/EADDRINUSE/);
    } finally {
      taken.close();
    }
    const { call } = await import('../support/client.js');
    const again = await call(svc.base, '/api/v1/inends/create', { method: 'POST', body: { name: 'udp-2', type: 'UDP_SERVER', config: { host: '127.0.0.1', port } } });
    expect(again.status).toBe(400);
    expect(again.body.msg).toMatch(/config\.port \d+ is already the port of input udp \(INEND/);
  });
});
