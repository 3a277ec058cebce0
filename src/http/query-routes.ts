/**
 * The two read endpoints of the specification (contract section 4), authenticated by the data secret.
 * queryLastData is polled by HMIs: its path has no await (registry, log and latest record are in memory).
 */
import { StateError } from '../errors.js';
import { checkSecret, type FailureLimiter, type SecretSet } from './auth.js';
import type { RegistryApi } from './deps.js';
import { formatRecord, isoSeconds, spacedSeconds } from './format.js';
import { pageCurrent, pageOrder, pageSize, required, selectFields } from './params.js';
import type { RequestCtx } from './request.js';
import type { Router } from './router.js';

function publishedModel(registry: RegistryApi, uuid: string) {
  const model = registry.get(uuid);
  if (!model.published) {
    throw new StateError(`model ${uuid} is not published: publish it before reading its data`);
  }
  return model;
}

export function addQueryRoutes(router: Router, registry: RegistryApi, secrets: SecretSet, limiter?: FailureLimiter): void {
  router.add({
    method: 'GET',
    path: '/api/v1/datacenter/queryDataList',
    cors: true,
    handler: async (ctx: RequestCtx) => {
      checkSecret(secrets, ctx, limiter);
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const current = pageCurrent(query);
      const size = pageSize(query);
      const order = pageOrder(query);
      const model = publishedModel(registry, uuid);
      const select = selectFields(query, model);
      const page = await registry.log(uuid).page({ current, size, order, select });
      const records = page.records.map((record) => formatRecord(record, isoSeconds));
      return { current, size, total: page.total, records };
    },
  });

  router.add({
    method: 'GET',
    path: '/api/v1/datacenter/queryLastData',
    cors: true,
    handler: (ctx: RequestCtx) => {
      checkSecret(secrets, ctx, limiter);
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const model = publishedModel(registry, uuid);
      const select = selectFields(query, model);
      const record = registry.log(uuid).latest(select);
      return record === undefined ? {} : formatRecord(record, spacedSeconds);
    },
  });
}
