/**
 * WebSocket at `/api/v1/datacenter/ws?secrets=` (contract 11). The upgrade passes the same checks as a
 * routed request (Host allowlist, the data secret guard with its throttle) and is answered with the JSON
 * error envelope when it fails. Then the client sends `{"op":"subscribe",...}` / `{"op":"unsubscribe",...}`
 * and gets `record`, `gap` and `error` messages (an `error` with `uuid`: that model was deleted or returned
 * to draft, and its subscription ended); the subscriptions are live.ts's, as for SSE.
 *
 * The socket itself is uWS's (uws-transport.ts wires a LiveWsSession to it). node:http has no WebSocket
 * and none is a dependency, so on the node transport the upgrade is answered 501 after the same checks
 * (refuseLiveWs); the SSE stream serves the same records on both.
 */
import type { Logger } from 'pino';
import { EdgeError, InvalidArgumentError, NotImplementedError } from '../../errors.js';
import { checkHost } from '../core/allowed-hosts.js';
import type { ClientAddress } from '../core/client-address.js';
import type { RegistryView } from '../core/deps.js';
import { copyRequest } from '../core/exchange.js';
import type { LiveClient, LiveHub, LiveMode } from './live.js';
import { publishedModel } from '../routes/query-routes.js';
import { errorAnswer, JSON_HEADERS } from '../core/reply.js';
import { selectFields } from '../core/params.js';
import type { Guard } from '../core/router.js';
import { BATCH_MODELS_MAX } from '../routes/hmi-routes.js';
import type { TransportRequest, TransportResponse } from '../core/wire.js';

export const LIVE_WS_PATH = '/api/v1/datacenter/ws';
/** Bytes the transport may hold for a socket before we stop writing to it (and count a gap instead). */
export const WS_BACKPRESSURE_BYTES = 1024 * 1024;
export const WS_MESSAGE_BYTES_MAX = 64 * 1024;
export const WS_IDLE_TIMEOUT_S = 120;

export interface LiveWsOptions {
  guard: Guard;
  registry: RegistryView;
  hub: LiveHub;
  logger: Logger;
  allowedHosts: ReadonlySet<string>;
  clientAddress: ClientAddress | undefined;
}

/**
 * Runs the checks of an upgrade request; false when one failed, and then its error envelope has been
 * written and the connection closes. Call before the transport's callback returns.
 */
export function acceptLiveWsUpgrade(req: TransportRequest, res: TransportResponse, o: LiveWsOptions): boolean {
  return refuseUnless(req, res, o, () => {});
}

/** node transport: an upgrade that passes the checks is told that WebSocket needs the uws transport. */
export function refuseLiveWs(req: TransportRequest, res: TransportResponse, o: LiveWsOptions): void {
  refuseUnless(req, res, o, () => {
    throw new NotImplementedError(
      'WebSocket live reads need [plugin.http_server] transport = uws, and this service runs on node:http; ' +
        'read the same records as Server-Sent Events from GET /api/v1/datacenter/stream',
    );
  });
}

function refuseUnless(req: TransportRequest, res: TransportResponse, o: LiveWsOptions, last: () => void): boolean {
  const { ctx, check } = copyRequest(req, res, o.clientAddress);
  try {
    check();
    if (o.allowedHosts.size > 0) checkHost(ctx.header('host'), o.allowedHosts);
    o.guard.check(ctx);
    last();
    return true;
  } catch (err) {
    const answer = errorAnswer(err, ctx, o.logger);
    res.end(answer.status, [...JSON_HEADERS, ...Object.entries(answer.headers)], answer.body, { close: true });
    return false;
  }
}

/** Whether a request asks to become the live WebSocket (an Upgrade at LIVE_WS_PATH). */
export function isLiveWsUpgrade(path: string, upgrade: string | undefined): boolean {
  return path === LIVE_WS_PATH && upgrade !== undefined && upgrade.toLowerCase() === 'websocket';
}

/** One open WebSocket's subscriptions. `send` writes text messages and returns false under backpressure. */
export class LiveWsSession {
  private closed = false;
  private readonly client: LiveClient;

  constructor(
    private readonly o: LiveWsOptions,
    private readonly send: (texts: readonly string[]) => boolean,
  ) {
    this.client = o.hub.client({
      format: 'ws',
      recordText: (uuid, _id, json) => `{"type":"record","uuid":${JSON.stringify(uuid)},"record":${json}}`,
      gapText: (uuid, from, to) => JSON.stringify({ type: 'gap', uuid, from, to }),
      goneText: (uuid, msg) => JSON.stringify({ type: 'error', uuid, msg }),
      write: (texts) => !this.closed && this.send(texts),
    });
  }

  /** A text message from the client; a bad one is answered with an `error` message. */
  message(text: string): void {
    void handle(this.o, this, text).catch((err: unknown) => {
      if (this.closed) return;
      const msg = err instanceof EdgeError ? err.message : 'internal error';
      if (!(err instanceof EdgeError)) this.o.logger.error({ err }, 'live WebSocket message failed');
      this.send([JSON.stringify({ type: 'error', msg })]);
    });
  }

  /** The socket took what was buffered: records may flow again. */
  drained(): void {
    this.client.drained();
  }

  close(): void {
    this.closed = true;
    this.o.hub.forget(this.client);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get liveClient(): LiveClient {
    return this.client;
  }
}

async function handle(o: LiveWsOptions, session: LiveWsSession, text: string): Promise<void> {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError('message is not JSON: send {"op":"subscribe","uuid":[...]} or {"op":"unsubscribe","uuid":[...]}');
  }
  const m = (typeof msg === 'object' && msg !== null ? msg : {}) as Record<string, unknown>;
  const client = session.liveClient;
  const uuids = stringList(m.uuid, 'uuid');
  if (uuids.length === 0 || uuids.length > BATCH_MODELS_MAX) throw new InvalidArgumentError(`field 'uuid' must list 1..${BATCH_MODELS_MAX} models`);
  if (m.op === 'unsubscribe') {
    for (const u of uuids) client.unsubscribe(u);
    return;
  }
  if (m.op !== 'subscribe') throw new InvalidArgumentError(`field 'op' must be subscribe or unsubscribe, got ${JSON.stringify(m.op)}`);
  const mode = m.mode ?? 'all';
  if (mode !== 'all' && mode !== 'latest') throw new InvalidArgumentError(`field 'mode' must be all or latest, got ${JSON.stringify(mode)}`);
  const after = (m.after ?? {}) as Record<string, unknown>;
  if (typeof after !== 'object' || Array.isArray(after)) throw new InvalidArgumentError(`field 'after' must be an object {"<uuid>": <id>}`);
  for (const [u, id] of Object.entries(after)) {
    if (!uuids.includes(u) || !Number.isSafeInteger(id) || (id as number) < 0) {
      throw new InvalidArgumentError(`field 'after' must map subscribed uuids to record ids, got ${JSON.stringify(u)}: ${JSON.stringify(id)}`);
    }
  }
  const select = m.select === undefined ? undefined : stringList(m.select, 'select');
  // Everything is checked before the first subscription: a bad request subscribes to nothing.
  const plans = uuids.map((u) => {
    const model = publishedModel(o.registry, u);
    return { uuid: u, name: model.name, log: o.registry.log(u), select: select === undefined ? undefined : selectFields(new Map([['select', select]]), model) };
  });
  for (const p of plans) {
    if (session.isClosed) return;
    await client.subscribe(p.uuid, p.log, { name: p.name, select: p.select, mode: mode as LiveMode, afterId: after[p.uuid] as number | undefined });
  }
}

function stringList(v: unknown, name: string): string[] {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((x) => typeof x !== 'string')) throw new InvalidArgumentError(`field '${name}' must be a string or an array of strings`);
  return [...new Set(list as string[])];
}
