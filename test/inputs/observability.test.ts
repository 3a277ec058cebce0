/**
 * The network inputs in /healthz and /metrics: the counters per input, the connection state, a
 * degraded health (still 200) naming an input that cannot reach its broker, and the start-up log line
 * naming each listener.
 */
import dgram from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { createInput, freePort, inputStats, waitFor } from './support.js';

let svc: TestService;
let udp: string;
let udpPort: number;
let lost: string;

beforeAll(async () => {
  svc = await startService();
  udpPort = await freePort('udp');
  udp = (await createInput(svc.base, { name: 'udp-obs', type: 'UDP_SERVER', config: { host: '127.0.0.1', port: udpPort, maxDataLength: 10 } })).uuid;
  // Nothing listens on this port: the client keeps failing and retrying.
  lost = (await createInput(svc.base, { name: 'no-broker', type: 'GENERIC_MQTT', config: { host: '127.0.0.1', port: await freePort('tcp'), subTopics: ['x'] } })).uuid;
  await waitFor('listening', () => inputStats(svc.base, udp), (s) => s.connection.state === 'listening');
});

afterAll(async () => {
  await svc?.close();
});

describe('network inputs in /healthz and /metrics', () => {
  it('counts datagrams in and refused in /metrics, with the connection state', async () => {
    const socket = dgram.createSocket('udp4');
    for (const text of ['0123456789abc', '12']) await new Promise<void>((resolve) => socket.send(text, udpPort, '127.0.0.1', () => resolve()));
    socket.close();
    await waitFor('counted', () => inputStats(svc.base, udp), (s) => s.messagesIn === 2);
    const metrics = (await call(svc.base, '/metrics')).text;
    expect(metrics).toContain(`edge_input_messages_in_total{input="${udp}",type="UDP_SERVER"} 2`);
    expect(metrics).toContain(`edge_input_messages_refused_total{input="${udp}",type="UDP_SERVER"} 1`);
    expect(metrics).toContain(`edge_input_connection_state{input="${udp}",type="UDP_SERVER",state="listening"} 1`);
  });

  it('is degraded while a client input has no broker, and lists the inputs to a monitor', async () => {
    const health = await waitFor('degraded', async () => (await call(svc.base, '/healthz', { token: null })).body.data, (h) => h.status === 'degraded');
    expect(health.reasons.some((r: string) => r.startsWith(`input no-broker (${lost}, GENERIC_MQTT) is `))).toBe(true);
    expect(health.inputs).toBeUndefined();
    const monitored = (await call(svc.base, '/healthz')).body.data;
    const entry = monitored.inputs.find((i: any) => i.uuid === lost);
    expect(['error', 'reconnecting']).toContain(entry.state);
    expect(entry.lastError).toMatch(/ECONNREFUSED/);
    expect(monitored.inputs.find((i: any) => i.uuid === udp)).toMatchObject({ state: 'listening', lastError: null, type: 'UDP_SERVER' });
  });

  it('names each listener in the log', () => {
    expect(svc.logs.some((l) => l.listener === `udp://127.0.0.1:${udpPort}`)).toBe(true);
  });
});
