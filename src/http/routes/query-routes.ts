/**
 * The two read endpoints of the specification (contract section 4), behind the data secret and open to
 * cross-origin reads. queryLastData is polled by HMIs: its path has no await (registry, log and latest
 * record are in memory).
 */
import { StateError } from '../../errors.js';
import type { RegistryView } from '../core/deps.js';
import { isoSeconds } from '../core/format.js';
import { latestAnswer } from './latest-answer.js';
import { pageCurrent, pageOrder, pageSize, required, selectFields } from '../core/params.js';
import { JsonReply } from '../core/reply.js';
import type { Guard, Router } from '../core/router.js';
import { timeRange } from './time-params.js';

const ENVELOPE_END = Buffer.from('}}');

export function publishedModel(registry: RegistryView, uuid: string) {
  const model = registry.get(uuid);
  if (!model.published) {
    throw new StateError(`model ${uuid} is not published: publish it before reading its data`);
  }
  return model;
}

export function addQueryRoutes(router: Router, registry: RegistryView, dataSecret: Guard): void {
  router.group({ prefix: '/api/v1/datacenter', guard: dataSecret, cors: true }, (g) => {
    g.get('/queryDataList', async (ctx) => {
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const current = pageCurrent(query);
      const size = pageSize(query);
      const order = pageOrder(query);
      const range = timeRange(query);
      const model = publishedModel(registry, uuid);
      const select = selectFields(query, model);
      const page = await registry.log(uuid).pageJson({ current, size, order, select, ...range }, isoSeconds);
      // envelope({ current, size, total, records }), with the records printed by the store.
      const head = `{"code":200,"msg":"Success","data":{"current":${current},"size":${size},"total":${page.total},"records":`;
      return new JsonReply(Buffer.concat([Buffer.from(head), page.json, ENVELOPE_END]));
    });

    g.get('/queryLastData', (ctx) => {
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const model = publishedModel(registry, uuid);
      const select = selectFields(query, model);
      return latestAnswer(registry.log(uuid).latest(select));
    });
  });
}
