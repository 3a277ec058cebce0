/**
 * Slowloris on both transports: clients that open a connection and then send nothing, trickle header
 * lines, or go quiet after an answer, and never close their side (allowHalfOpen, no end on the server's
 * FIN). The server must close them fully, not just send its FIN: a half-closed socket still holds an fd
 * and a `max_connections` slot. The server's sockets are counted from the kernel (this process's fds that
 * are TCP sockets with the service's local port, the listening one left out), not from our own counter.
 * `npm run test:http-node` runs it on node:http.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bearer, raw } from '../support/client.js';
import { ADMIN, startService, type TestService } from '../support/service.js';

const HOLDERS = 40;
/** Slower than the idle timeout's check, faster than the idle timeout: what keeps a naive server waiting. */
const TRICKLE_MS = 4000;
/** Ceiling for the server to cut the holders (uWS: 10-14 s); the test waits for the event, not the time. */
const CUT_CEILING_MS = 45_000;
const TCP_LISTEN = '0A';

let svc: TestService;
const holders: net.Socket[] = [];
const timers: NodeJS.Timeout[] = [];

beforeAll(async () => {
  svc = await startService({ logLevel: 'silent', ini: { 'plugin.http_server': [`max_connections = ${HOLDERS}`] } });
});
afterAll(async () => {
  for (const t of timers) clearInterval(t);
  for (const h of holders) h.destroy();
  await svc?.close();
});

/** Inodes of the TCP sockets whose local port is `port` (not listening), from /proc/net/tcp and tcp6. */
function serverSocketInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(table, 'utf8').split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const [, local, , state] = cols;
      if (local.endsWith(`:${hexPort}`) && state !== TCP_LISTEN) inodes.add(cols[9]);
    }
  }
  return inodes;
}

/** The server's connected sockets that still hold a file descriptor of this process. */
function openServerSockets(port: number): number {
  const inodes = serverSocketInodes(port);
  let open = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let target: string;
    try {
      target = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue; // closed while listing
    }
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m !== null && inodes.has(m[1])) open++;
  }
  return open;
}

async function waitFor(what: string, ok: () => boolean, ceilingMs: number, detail: () => string): Promise<void> {
  const until = Date.now() + ceilingMs;
  while (!ok()) {
    if (Date.now() > until) throw new Error(`${what} did not happen within ${ceilingMs} ms: ${detail()}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** A client that never closes its side, whatever the server does. */
function holder(start: (s: net.Socket) => void): Promise<net.Socket> {
  return new Promise((resolve) => {
    const s = net.connect({ port: svc.port, host: '127.0.0.1', allowHalfOpen: true }, () => {
      start(s);
      resolve(s);
    });
    s.on('data', () => undefined);
    s.on('error', () => undefined);
  });
}

const kinds: Array<(s: net.Socket) => void> = [
  () => undefined, // connects, sends nothing
  (s) => {
    s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    timers.push(setInterval(() => s.writable && s.write('X-Slow: 1\r\n'), TRICKLE_MS));
  },
  (s) => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'), // one answer, then kept alive in silence
];

it('idle, header-trickling and kept-alive clients that never close are cut fully, and their slots come back', async () => {
  for (let i = 0; i < HOLDERS; i++) holders.push(await holder(kinds[i % kinds.length]));
  await waitFor('all holders counted', () => openServerSockets(svc.port) >= HOLDERS, 60_000, () => `${openServerSockets(svc.port)} server sockets`);

  // The limit is reached: a newcomer is refused (the refusal closes by itself).
  const refused = await raw(svc.port, { path: '/healthz', agent: false });
  expect(refused.status).toBe(503);

  await waitFor('the server closing every holder', () => openServerSockets(svc.port) === 0, CUT_CEILING_MS, () => `${openServerSockets(svc.port)} server sockets still open`);
  // The holders never closed their side: each was cut by the server. They see the cut once this
  // process's event loop has delivered it (the server's fds above are gone at once): waited for, not
  // checked in the same turn.
  const uncut = (): net.Socket[] => holders.filter((h) => !h.destroyed && !h.readableEnded);
  await waitFor('every holder seeing the cut', () => uncut().length === 0, CUT_CEILING_MS, () => `${uncut().length} holders not cut`);

  const after = await raw(svc.port, { path: '/healthz', agent: false });
  expect(after.status).toBe(200);
  const metrics = await raw(svc.port, { path: '/metrics', headers: bearer(ADMIN), agent: false });
  expect(metrics.text).toMatch(/^edge_http_connections_open [01]$/m);
}, 90_000);
