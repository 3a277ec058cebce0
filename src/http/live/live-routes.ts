/**
 * `GET /api/v1/datacenter/stream` (contract 11): Server-Sent Events of one or more models' records,
 * behind the data secret. Parameters are checked and every model looked up (404/409) before the stream
 * starts; the subscriptions themselves are live.ts's. A model deleted or returned to draft meanwhile gets
 * `event: gone` (data `{"uuid","msg"}`), and the stream ends when none of its models is left.
 */
import { InvalidArgumentError } from '../../errors.js';
import type { DataModel } from '../../models/types.js';
import type { RegistryView } from '../core/deps.js';
import { type LiveHub, type LiveMode } from './live.js';
import { badParameter, listParam, one, selectFields, type QueryParams } from '../core/params.js';
import { BATCH_MODELS_MAX } from '../routes/hmi-routes.js';
import { publishedModel } from '../routes/query-routes.js';
import { StreamReply, type StreamSink } from '../core/reply.js';
import type { Guard, Router } from '../core/router.js';

/** A comment line this often keeps proxies from closing an idle stream. */
export const SSE_KEEPALIVE_MS = 15_000;
/** How often a stream notices that its client has gone. */
const ABORT_CHECK_MS = 1000;

export function liveMode(query: QueryParams): LiveMode {
  const raw = one(query, 'mode')?.trim().toLowerCase();
  if (raw === undefined || raw.length === 0) return 'all';
  if (raw === 'all' || raw === 'latest') return raw;
  throw badParameter('mode', 'all or latest', raw);
}

/** `<uuid>:<id>` items of `after` (and the Last-Event-ID header), each naming a streamed model. */
export function afterIds(values: readonly string[], uuids: readonly string[], name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const v of values) {
    const m = /^([A-Z0-9]+):([0-9]{1,15})$/.exec(v.trim());
    if (!m || !uuids.includes(m[1])) throw badParameter(name, `<uuid>:<id> naming one of the streamed models`, v);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

export function addLiveRoutes(router: Router, registry: RegistryView, dataSecret: Guard, hub: LiveHub): void {
  // Here because the hub and the registry meet here; the WebSocket's subscriptions share the hub.
  hub.watchModels(registry);
  router.group({ prefix: '/api/v1/datacenter', guard: dataSecret, cors: true }, (g) => {
    g.get('/stream', (ctx) => {
      const query = ctx.query;
      const uuids = listParam(query, 'uuid');
      if (uuids.length === 0) throw new InvalidArgumentError(`missing parameter 'uuid'`);
      if (uuids.length > BATCH_MODELS_MAX) throw badParameter('uuid', `at most ${BATCH_MODELS_MAX} models`, `${uuids.length} models`);
      const mode = liveMode(query);
      const lastEventId = ctx.headers['last-event-id'];
      const after = new Map([
        ...(lastEventId === undefined ? [] : afterIds([lastEventId], uuids, 'Last-Event-ID')),
        ...afterIds(listParam(query, 'after'), uuids, 'after'),
      ]);
      const models = uuids.map((u) => publishedModel(registry, u));
      const selects = models.map((m) => selectFields(query, m));
      const headers = { 'Content-Type': 'text/event-stream; charset=utf-8', 'X-Accel-Buffering': 'no' };
      return new StreamReply(headers, (sink) => stream(sink, hub, registry, models, selects, mode, after));
    });
  });
}

async function stream(
  sink: StreamSink,
  hub: LiveHub,
  registry: RegistryView,
  models: readonly DataModel[],
  selects: ReadonlyArray<readonly string[] | undefined>,
  mode: LiveMode,
  after: ReadonlyMap<string, number>,
): Promise<void> {
  let waiting = false;
  const write = (chunk: string): boolean => {
    const ok = sink.write(chunk);
    if (!ok && !waiting && !sink.aborted) {
      waiting = true;
      void sink.drain().then(() => {
        waiting = false;
        if (!sink.aborted) client.drained();
      });
    }
    return ok;
  };
  const client = hub.client(
    {
      format: 'sse',
      recordText: (uuid, id, json) => `event: record\nid: ${uuid}:${id}\ndata: {"uuid":${JSON.stringify(uuid)},"record":${json}}\n\n`,
      gapText: (uuid, from, to) => `event: gap\ndata: ${JSON.stringify({ uuid, from, to })}\n\n`,
      // Not `event: error`: EventSource hands that name to the same listeners as its connection errors.
      goneText: (uuid, msg) => `event: gone\ndata: ${JSON.stringify({ uuid, msg })}\n\n`,
      write: (texts) => write(texts.length === 1 ? texts[0] : texts.join('')),
    },
    { closeWhenNoModels: true },
  );
  let sinceKeepaliveMs = 0;
  const watch = setInterval(() => {
    if (sink.aborted) return hub.forget(client);
    sinceKeepaliveMs += ABORT_CHECK_MS;
    if (sinceKeepaliveMs >= SSE_KEEPALIVE_MS && !waiting) {
      sinceKeepaliveMs = 0;
      write(': keepalive\n\n');
    }
  }, ABORT_CHECK_MS);
  try {
    write(': stream open\n\n');
    for (let i = 0; i < models.length && !client.closed; i++) {
      const { uuid, name } = models[i];
      await client.subscribe(uuid, registry.log(uuid), { name, select: selects[i], mode, afterId: after.get(uuid) });
    }
    await client.ended;
  } finally {
    clearInterval(watch);
    hub.forget(client);
  }
}
