/**
 * Dashboard reads behind the data secret (contract sections 10 and 12): queryAggregate (time buckets
 * from the store's segment summaries) and queryLastDataBatch (the latest record of up to 100 models,
 * from memory, no await).
 */
import { InvalidArgumentError } from '../../errors.js';
import type { Attribute, DataModel } from '../../models/types.js';
import { AGGREGATE_BUCKETS_MAX, AGGREGATE_CELLS_MAX } from '../../store/aggregate/aggregate.js';
import type { FieldStats } from '../../store/aggregate/stats-table.js';
import type { RegistryView } from '../core/deps.js';
import { batchReply, keep, keptBatch } from './batch-answers.js';
import { badParameter, listParam, quote, required, selectFields, type QueryParams } from '../core/params.js';
import { publishedModel } from './query-routes.js';
import type { Guard, Router } from '../core/router.js';
import { instant, intervalMs } from './time-params.js';

export const AGGREGATE_FUNCTIONS = ['min', 'max', 'avg', 'sum', 'count', 'first', 'last'] as const;
type AggregateFunction = (typeof AGGREGATE_FUNCTIONS)[number];
const NUMERIC_ONLY = new Set<AggregateFunction>(['min', 'max', 'avg', 'sum']);
const NUMERIC_TYPES = new Set(['INTEGER', 'FLOAT']);
/** A bucket's own keys: an attribute of the same name would overwrite them. */
const BUCKET_KEYS = new Set(['start', 'count']);
export const BATCH_MODELS_MAX = 100;

function functions(query: QueryParams): AggregateFunction[] {
  const names = listParam(query, 'fn').map((f) => f.toLowerCase());
  for (const f of names) {
    if (!(AGGREGATE_FUNCTIONS as readonly string[]).includes(f)) throw badParameter('fn', `a comma list of ${AGGREGATE_FUNCTIONS.join(', ')}`, f);
  }
  return names.length === 0 ? ['avg'] : (names as AggregateFunction[]);
}

/** The attributes to aggregate: `select`, or every INTEGER and FLOAT attribute. */
function aggregateAttributes(query: QueryParams, model: DataModel, fns: readonly AggregateFunction[]): Attribute[] {
  const names = selectFields(query, model);
  const attrs =
    names === undefined
      ? model.attributes.filter((a) => NUMERIC_TYPES.has(a.type) && !BUCKET_KEYS.has(a.name))
      : names.map((n) => {
          const a = model.attributes.find((x) => x.name === n);
          if (!a) throw new InvalidArgumentError(`parameter 'select' names ${quote(n)}: queryAggregate takes attributes only`);
          if (BUCKET_KEYS.has(a.name)) {
            throw new InvalidArgumentError(`parameter 'select' names ${quote(n)}, which is a key of every bucket (start, count): it cannot be aggregated`);
          }
          return a;
        });
  const numericFn = fns.find((f) => NUMERIC_ONLY.has(f));
  const bad = numericFn === undefined ? undefined : attrs.find((a) => !NUMERIC_TYPES.has(a.type));
  if (bad) {
    throw new InvalidArgumentError(`parameter 'fn': ${numericFn} applies to INTEGER and FLOAT attributes only, and ${quote(bad.name)} is ${bad.type}`);
  }
  return attrs;
}

/** `2026-11-22T10:00:00Z`, with milliseconds only when the instant has some. */
export function isoInstant(ms: number): string {
  const iso = new Date(ms).toISOString();
  return ms % 1000 === 0 ? `${iso.slice(0, -5)}Z` : iso;
}

function statsView(s: FieldStats, fns: readonly AggregateFunction[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const none = s.n === 0;
  for (const f of fns) {
    if (f === 'count') out.count = s.n;
    else if (f === 'avg') out.avg = none ? null : s.sum / s.n;
    else if (f === 'first' || f === 'last') out[f] = none ? null : s[f];
    else out[f] = none ? null : s[f];
  }
  return out;
}

export function addHmiRoutes(router: Router, registry: RegistryView, dataSecret: Guard): void {
  router.group({ prefix: '/api/v1/datacenter', guard: dataSecret, cors: true }, (g) => {
    g.get('/queryAggregate', async (ctx) => {
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const fromMs = instant(query, 'from');
      if (fromMs === undefined) throw new InvalidArgumentError(`missing parameter 'from'`);
      const toMs = instant(query, 'to') ?? Date.now();
      if (fromMs >= toMs) throw badParameter('from', `earlier than 'to' (${isoInstant(toMs)})`, query.get('from')?.[0] ?? '');
      const interval = intervalMs(query);
      const buckets = Math.floor((toMs - 1) / interval) - Math.floor(fromMs / interval) + 1;
      if (buckets > AGGREGATE_BUCKETS_MAX) {
        throw badParameter('interval', `wide enough for at most ${AGGREGATE_BUCKETS_MAX} buckets over [from, to) (this one makes ${buckets})`, query.get('interval')?.[0] ?? '');
      }
      const fns = functions(query);
      const model = publishedModel(registry, uuid);
      const attrs = aggregateAttributes(query, model, fns);
      if (buckets * attrs.length > AGGREGATE_CELLS_MAX) {
        throw new InvalidArgumentError(
          `parameters 'interval' and 'select' make ${buckets} buckets of ${attrs.length} attributes, ${buckets * attrs.length} cells; at most ${AGGREGATE_CELLS_MAX}: use a wider interval or select fewer attributes`,
        );
      }
      const result = await registry.log(uuid).aggregate({ fromMs, toMs, intervalMs: interval, fields: attrs.map((a) => a.name) });
      return {
        interval_ms: interval,
        buckets: result.map((b) => {
          const bucket: Record<string, unknown> = { start: isoInstant(b.startMs), count: b.count };
          attrs.forEach((a, i) => (bucket[a.name] = statsView(b.stats[i], fns)));
          return bucket;
        }),
      };
    });

    g.get('/queryLastDataBatch', (ctx) => {
      const hit = keptBatch(ctx.rawQuery, registry);
      if (hit !== undefined) return hit;
      const models = registry.models;
      const query = ctx.query;
      const uuids = listParam(query, 'uuid');
      if (uuids.length === 0) throw new InvalidArgumentError(`missing parameter 'uuid'`);
      if (uuids.length > BATCH_MODELS_MAX) throw badParameter('uuid', `at most ${BATCH_MODELS_MAX} models`, `${uuids.length} models`);
      const published = uuids.map((u) => publishedModel(registry, u));
      const logs = published.map((model) => registry.log(model.uuid));
      const selects = published.map((model) => selectFields(query, model));
      const records = logs.map((log, i) => log.latest(selects[i]));
      const ids = published.map((model) => model.uuid);
      const reply = batchReply(ids, records);
      keep(ctx.rawQuery, { models, uuids: ids, logs, selects, records, reply });
      return reply;
    });
  });
}
