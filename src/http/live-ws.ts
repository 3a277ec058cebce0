/**
 * WebSocket at `/api/v1/datacenter/ws?secrets=` (contract 11), uWS's native WebSocket. The upgrade
 * passes the same checks as a routed request (Host allowlist, the data secret guard with its throttle)
 * and is answered with the JSON error envelope when it fails. Then the client sends
 * `{"op":"subscribe",...}` / `{"op":"unsubscribe",...}` and gets `record`, `gap` and `error` messages;
 * the subscriptions are live.ts's, as for SSE.
 */
import type { Logger } from 'pino';
import { EdgeError, InvalidArgumentError } from '../errors.js';
import { checkHost } from './allowed-hosts.js';
import type { ClientAddress } from './client-address.js';
import type { RegistryView } from './deps.js';
import { copyRequest } from './exchange.js';
import type { LiveClient, LiveHub, LiveMode } from './live.js';
import { publishedModel } from './query-routes.js';
import { errorAnswer, JSON_HEADERS, statusLine } from './reply.js';
import { selectFields } from './params.js';
import type { Guard } from './router.js';
import type { TemplatedApp } from './uws.js';
import { BATCH_MODELS_MAX } from './hmi-routes.js';

export const LIVE_WS_PATH = '/api/v1/datacenter/ws';
/** Bytes uWS may hold for a socket before we stop writing to it (and count a gap instead). */
export const WS_BACKPRESSURE_BYTES = 1024 * 1024;
const WS_MESSAGE_BYTES_MAX = 64 * 1024;

interface WsData {
  client: LiveClient | undefined;
  closed: boolean;
}

export interface LiveWsOptions {
  guard: Guard;
  registry: RegistryView;
  hub: LiveHub;
  logger: Logger;
  allowedHosts: ReadonlySet<string>;
  clientAddress: ClientAddress | undefined;
}

export function attachLiveWs(app: TemplatedApp, o: LiveWsOptions): void {
  app.ws<WsData>(LIVE_WS_PATH, {
    maxPayloadLength: WS_MESSAGE_BYTES_MAX,
    maxBackpressure: WS_BACKPRESSURE_BYTES,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const { ctx, check } = copyRequest(req, res, o.clientAddress);
      try {
        check();
        if (o.allowedHosts.size > 0) checkHost(ctx.header('host'), o.allowedHosts);
        o.guard.check(ctx);
      } catch (err) {
        const answer = errorAnswer(err, ctx, o.logger);
        res.cork(() => {
          res.writeStatus(statusLine(answer.status));
          for (const [k, v] of JSON_HEADERS) res.writeHeader(k, v);
          for (const k in answer.headers) res.writeHeader(k, answer.headers[k]);
          res.end(answer.body, true);
        });
        return;
      }
      res.upgrade<WsData>({ client: undefined, closed: false }, key, protocol, extensions, context);
    },
    open(ws) {
      const data = ws.getUserData();
      data.client = o.hub.client({
        format: 'ws',
        recordText: (uuid, _id, json) => `{"type":"record","uuid":${JSON.stringify(uuid)},"record":${json}}`,
        gapText: (uuid, from, to) => JSON.stringify({ type: 'gap', uuid, from, to }),
        write(texts) {
          if (data.closed) return false;
          let ok = true;
          ws.cork(() => {
            for (const t of texts) if (ws.send(t, false) !== 1) ok = false;
          });
          return ok;
        },
      });
    },
    message(ws, message) {
      const data = ws.getUserData();
      const text = Buffer.from(message).toString('utf8');
      void handle(o, data, text).catch((err: unknown) => {
        if (data.closed) return;
        const msg = err instanceof EdgeError ? err.message : 'internal error';
        if (!(err instanceof EdgeError)) o.logger.error({ err }, 'live WebSocket message failed');
        ws.send(JSON.stringify({ type: 'error', msg }), false);
      });
    },
    drain(ws) {
      const data = ws.getUserData();
      if (ws.getBufferedAmount() < WS_BACKPRESSURE_BYTES / 2) data.client?.drained();
    },
    close(ws) {
      const data = ws.getUserData();
      data.closed = true;
      if (data.client) o.hub.forget(data.client);
    },
  });
}

async function handle(o: LiveWsOptions, data: WsData, text: string): Promise<void> {
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    throw new InvalidArgumentError('message is not JSON: send {"op":"subscribe","uuid":[...]} or {"op":"unsubscribe","uuid":[...]}');
  }
  const m = (typeof msg === 'object' && msg !== null ? msg : {}) as Record<string, unknown>;
  const client = data.client as LiveClient;
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
    return { uuid: u, log: o.registry.log(u), select: select === undefined ? undefined : selectFields(new Map([['select', select]]), model) };
  });
  for (const p of plans) {
    if (data.closed) return;
    await client.subscribe(p.uuid, p.log, { select: p.select, mode: mode as LiveMode, afterId: after[p.uuid] as number | undefined });
  }
}

function stringList(v: unknown, name: string): string[] {
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || list.some((x) => typeof x !== 'string')) throw new InvalidArgumentError(`field '${name}' must be a string or an array of strings`);
  return [...new Set(list as string[])];
}
