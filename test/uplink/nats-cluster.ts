/**
 * Real nats-server processes for the uplink tests: a JetStream cluster of `size` nodes on 127.0.0.1,
 * random ports, a temp directory each, started and stopped by PID (never left running: `stop()` kills
 * what is left, an exit hook of the test process does it too, and a killed test process takes them with
 * it: tied-spawn.ts). The hub stream is created as
 * docs/uplink.md tells users to: R3, file storage, subjects `<prefix>.>`, a dedup window.
 * Finds `nats-server` on PATH (the Debian package; .ci/run installs it), else the tests skip.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstreamManager, jetstream, type JetStreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll } from 'vitest';
import { spawnTied } from '../support/tied-spawn.js';

export function natsServerPath(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(':').concat(['/usr/sbin', '/usr/bin'])) {
    const p = path.join(dir, 'nats-server');
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

export const SKIP_REASON = natsServerPath() === undefined ? 'nats-server not found on PATH (apt-get install nats-server; .ci/run does)' : undefined;
if (SKIP_REASON !== undefined) console.warn(`uplink tests skipped: ${SKIP_REASON}`);

const living = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of living) c.kill('SIGKILL');
});

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

interface Node {
  name: string;
  port: number;
  clusterPort: number;
  dir: string;
  conf: string;
  child: ChildProcess | undefined;
  /** The end of what the server printed on stderr (why it exited, when it did). */
  stderr: string;
}

const STDERR_KEPT_CHARS = 2000;
/** Starts of a node whose ports were taken (between freePort() and its bind) before the cluster gives up. */
const NODE_STARTS_MAX = 4;
const LISTEN_CEILING_MS = 60_000;

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export interface HubRecord {
  seq: number;
  subject: string;
  headers: Record<string, string>;
  lines: Array<Record<string, unknown>>;
}

export class NatsCluster {
  readonly root: string;
  private readonly nodes: Node[] = [];

  private constructor(readonly size: number) {
    this.root = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-nats-'));
  }

  get urls(): string[] {
    return this.nodes.map((n) => `nats://127.0.0.1:${n.port}`);
  }

  static async start(size = 3): Promise<NatsCluster> {
    const c = new NatsCluster(size);
    for (let i = 0; i < size; i++) {
      const dir = path.join(c.root, `n${i + 1}`);
      fs.mkdirSync(dir);
      c.nodes.push({ name: `n${i + 1}`, port: await freePort(), clusterPort: await freePort(), dir, conf: path.join(dir, 'server.conf'), child: undefined, stderr: '' });
    }
    for (const n of c.nodes) c.writeConf(n);
    for (const n of c.nodes) c.startNode(n);
    await c.allListening();
    return c;
  }

  private writeConf(n: Node): void {
    const routes = this.nodes.filter((o) => o !== n).map((o) => `nats-route://127.0.0.1:${o.clusterPort}`);
    fs.writeFileSync(
      n.conf,
      [
        `server_name: ${n.name}`,
        `listen: 127.0.0.1:${n.port}`,
        `jetstream { store_dir: "${n.dir}/js", max_memory_store: 64MB, max_file_store: 2GB }`,
        this.size > 1 ? `cluster { name: hub, listen: 127.0.0.1:${n.clusterPort}, routes: [${routes.join(', ')}] }` : '',
        '',
      ].join('\n'),
    );
  }

  /**
   * Waits until every node takes client connections. A free port can be taken by another test's process
   * before the node binds it, and the node then exits: it starts again on new ports (its routes to the
   * others still form the cluster), at most NODE_STARTS_MAX times; a stream of R3 could not be placed
   * without it.
   */
  private async allListening(): Promise<void> {
    const deadline = Date.now() + LISTEN_CEILING_MS;
    for (const n of this.nodes) {
      // Running and accepting: another process holding the port would accept too.
      for (let starts = 1; !(n.child?.exitCode === null && (await accepts(n.port))); ) {
        const exit = n.child?.exitCode;
        if (exit !== null && exit !== undefined) {
          if (starts >= NODE_STARTS_MAX) throw new Error(`nats-server ${n.name} exited with ${exit} ${starts} times: ${n.stderr}`);
          n.port = await freePort();
          n.clusterPort = await freePort();
          this.writeConf(n);
          this.startNode(n);
          starts++;
        }
        if (Date.now() > deadline) throw new Error(`nats-server ${n.name} not listening on ${n.port} after ${LISTEN_CEILING_MS} ms: ${n.stderr}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  private startNode(n: Node): void {
    const child = spawnTied(natsServerPath() as string, ['-c', n.conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr?.on('data', (d: Buffer) => (n.stderr = (n.stderr + d.toString()).slice(-STDERR_KEPT_CHARS)));
    living.add(child);
    child.once('exit', () => living.delete(child));
    n.child = child;
  }

  /** A client connection to the cluster (the test's own, not the gateway's). */
  async client(): Promise<NatsConnection> {
    return connect({ servers: this.urls, reconnectTimeWait: 200, maxReconnectAttempts: -1, waitOnFirstConnect: true });
  }

  /** Creates the hub stream, retrying while the cluster elects its meta leader. */
  async createStream(prefix = 'edc', dedupWindowMs = 120_000): Promise<void> {
    const nc = await this.client();
    try {
      const deadline = Date.now() + 60_000;
      for (;;) {
        try {
          const jsm = await jetstreamManager(nc, { timeout: 2000 });
          await jsm.streams.add({
            name: 'EDC',
            subjects: [`${prefix}.>`],
            num_replicas: this.size,
            storage: 'file' as never,
            duplicate_window: dedupWindowMs * 1_000_000,
          });
          return;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`${(err as Error).message}; nodes: ${this.nodeStates()}`, { cause: err });
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    } finally {
      await nc.close();
    }
  }

  /** Each node's process state, for a failure's message. */
  private nodeStates(): string {
    return this.nodes.map((n) => `${n.name} ${n.child === undefined ? 'stopped' : n.child.exitCode === null ? 'running' : `exited ${n.child.exitCode}: ${n.stderr}`}`).join('; ');
  }

  /** A JetStream manager, retried while a restarted cluster elects its meta leader. */
  private async manager(nc: NatsConnection): Promise<JetStreamManager> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      try {
        return await jetstreamManager(nc, { timeout: 5000 });
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async streamLeader(jsm: JetStreamManager): Promise<string | undefined> {
    return (await jsm.streams.info('EDC')).cluster?.leader;
  }

  /** SIGKILL of the node leading the stream; returns its name. */
  async killLeader(): Promise<string> {
    const nc = await this.client();
    try {
      const leader = await this.streamLeader(await jetstreamManager(nc));
      const n = this.nodes.find((x) => x.name === leader);
      if (n === undefined) throw new Error(`no stream leader (${String(leader)})`);
      await this.kill(n.name);
      return n.name;
    } finally {
      await nc.close();
    }
  }

  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const n = this.nodes.find((x) => x.name === name) as Node;
    const child = n.child;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
    n.child = undefined;
  }

  restart(name: string): void {
    const n = this.nodes.find((x) => x.name === name) as Node;
    if (n.child === undefined) this.startNode(n);
  }

  /** SIGSTOP / SIGCONT: a hung server (quorum loss when two of three are stopped). */
  pause(name: string): void {
    this.nodes.find((x) => x.name === name)?.child?.kill('SIGSTOP');
  }

  resume(name: string): void {
    this.nodes.find((x) => x.name === name)?.child?.kill('SIGCONT');
  }

  names(): string[] {
    return this.nodes.map((n) => n.name);
  }

  /**
   * Every message of the stream, in stream order, read with an ordered consumer; read again while the
   * cluster answers that JetStream is not available yet (after a quorum came back, creating the consumer
   * failed so once in CI although the stream had every message).
   */
  async readAll(): Promise<HubRecord[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        return await this.readAllOnce();
      } catch (err) {
        if (!/temporarily unavailable/i.test((err as Error).message) || Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  private async readAllOnce(): Promise<HubRecord[]> {
    const nc = await this.client();
    try {
      const jsm = await this.manager(nc);
      const last = (await jsm.streams.info('EDC')).state.last_seq;
      const out: HubRecord[] = [];
      if (last === 0) return out;
      const consumer = await jetstream(nc).consumers.get('EDC');
      const messages = await consumer.consume({ max_messages: 500 });
      for await (const m of messages) {
        const headers: Record<string, string> = {};
        for (const k of m.headers?.keys() ?? []) headers[k] = m.headers?.get(k) ?? '';
        const text = m.string();
        const lines = text === '' ? [] : text.split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
        out.push({ seq: m.seq, subject: m.subject, headers, lines });
        if (m.seq >= last) break;
      }
      await messages.close();
      return out;
    } finally {
      await nc.close();
    }
  }

  async stop(): Promise<void> {
    for (const n of this.nodes) {
      n.child?.kill('SIGCONT');
      await this.kill(n.name);
    }
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** The consumer's upsert: (gateway, model, generation, id) -> the newest line in stream order. */
export function upsert(messages: readonly HubRecord[]): { byKey: Map<string, Record<string, unknown>>; lines: number; gaps: HubRecord[] } {
  const byKey = new Map<string, Record<string, unknown>>();
  let lines = 0;
  const gaps: HubRecord[] = [];
  for (const m of messages) {
    if (m.headers['Edc-Kind'] === 'gap') {
      gaps.push(m);
      continue;
    }
    for (const l of m.lines) {
      lines++;
      byKey.set(`${String(l.gateway)}/${String(l.model)}/${String(l.generation)}/${String(l.id)}`, l);
    }
  }
  return { byKey, lines, gaps };
}

/**
 * The test file's hub: a 3-node cluster with the stream, started before its tests and stopped after them
 * (after the file's own afterAll hooks, which vitest runs first); nothing when nats-server is missing.
 */
export function useHubCluster(): { readonly cluster: NatsCluster } {
  const hub = {} as { cluster: NatsCluster };
  beforeAll(async () => {
    if (SKIP_REASON !== undefined) return;
    hub.cluster = await NatsCluster.start(3);
    await hub.cluster.createStream();
  }, 180_000);
  afterAll(async () => {
    await hub.cluster?.stop();
  });
  return hub;
}
