/**
 * Model ("schema") and attribute ("property") management, RHILEX's paths and bodies (rhilex.md 2.2),
 * behind the admin token. Creates return `data.uuid` plus the object; actions without a result return
 * `[]` as RHILEX does.
 */
import { nameOf, type Audit } from './audit.js';
import type { LogApi, RegistryApi } from './deps.js';
import type { RecoveryFindings } from '../store/types.js';
import { modelView, withUuid } from './format.js';
import { boolean, integer, optional, pageSize, required } from './params.js';
import { InvalidArgumentError } from '../errors.js';
import { jsonBody } from './body.js';
import type { RequestCtx } from './request.js';
import type { Route, Router } from './router.js';

type Guard = (ctx: RequestCtx) => void;

export function addSchemaRoutes(router: Router, registry: RegistryApi, guard: Guard, audit: Audit): void {
  const add = (route: Omit<Route, 'guard' | 'path'> & { path: string }): void => {
    router.add({ ...route, path: `/api/v1${route.path}`, guard });
  };

  add({
    method: 'POST',
    path: '/schema/create',
    handler: async (ctx) => {
      const body = jsonBody(ctx);
      const created = await registry.create({ name: body.name, description: body.description ?? '' });
      return modelView(registry.get(created.uuid));
    },
  });
  add({
    method: 'PUT',
    path: '/schema/update',
    handler: async (ctx) => {
      const body = jsonBody(ctx);
      if (typeof body.uuid !== 'string' || body.uuid.length === 0) throw new InvalidArgumentError("field 'uuid' is required");
      await registry.update({ uuid: body.uuid, name: body.name, description: body.description });
      return modelView(registry.get(body.uuid));
    },
  });
  add({
    method: 'DELETE',
    path: '/schema/del',
    handler: async (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      await registry.delete(model.uuid);
      audit.event('model.delete', ctx, { type: 'model', name: model.name, uuid: model.uuid });
      return [];
    },
  });
  add({ method: 'GET', path: '/schema/list', handler: () => registry.list().map(modelView) });
  add({
    method: 'GET',
    path: '/schema/detail',
    handler: (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      const recovery = model.published ? openLog(registry, model.uuid)?.findings() : undefined;
      return recovery === undefined ? modelView(model) : { ...modelView(model), recovery: recoveryView(recovery) };
    },
  });
  add({
    method: 'POST',
    path: '/schema/recovery/ack',
    handler: async (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      await registry.log(model.uuid).acknowledgeFindings();
      audit.event('model.recovery-ack', ctx, { type: 'model', name: model.name, uuid: model.uuid });
      return [];
    },
  });
  add({
    method: 'POST',
    path: '/schema/publish',
    handler: async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      await registry.publish(uuid);
      audit.event('model.publish', ctx, { type: 'model', name: registry.get(uuid).name, uuid });
      return [];
    },
  });
  add({
    method: 'POST',
    path: '/schema/fix',
    handler: async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const confirm = boolean(ctx.query, 'confirm', false);
      const model = registry.get(uuid);
      if (!confirm) {
        throw new InvalidArgumentError('fix returns the model to draft and deletes all its records: repeat with confirm=true');
      }
      await registry.fix(uuid, true);
      audit.event('model.fix', ctx, { type: 'model', name: model.name, uuid });
      return [];
    },
  });

  add({
    method: 'POST',
    path: '/schema/properties/create',
    handler: async (ctx) => withUuid(await registry.createAttribute(jsonBody(ctx))),
  });
  add({
    method: 'PUT',
    path: '/schema/properties/update',
    handler: async (ctx) => {
      const body = jsonBody(ctx);
      const updated = await registry.updateAttribute(body);
      return updated ?? (await registry.getAttribute(String(body.uuid)));
    },
  });
  add({
    method: 'DELETE',
    path: '/schema/properties/del',
    handler: async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const attribute = await registry.getAttribute(uuid);
      await registry.deleteAttribute(uuid);
      audit.event('attribute.delete', ctx, { type: 'attribute', name: nameOf(attribute), uuid });
      return [];
    },
  });
  add({
    method: 'GET',
    path: '/schema/properties/list',
    handler: async (ctx) => {
      const query = ctx.query;
      const schemaUuid = optional(query, 'schema_uuid') ?? optional(query, 'schemaId') ?? required(query, 'schema_uuid');
      const current = integer(query, 'current', 1, Number.MAX_SAFE_INTEGER, 1);
      const size = pageSize(query);
      const all = await registry.listAttributes(schemaUuid);
      const start = (current - 1) * size;
      return { current, size, total: all.length, records: start < all.length ? all.slice(start, start + size) : [] };
    },
  });
  add({
    method: 'GET',
    path: '/schema/properties/detail',
    handler: (ctx) => registry.getAttribute(required(ctx.query, 'uuid')),
  });

  add({ method: 'GET', path: '/schema/getTemplates', handler: () => registry.templates() });
  add({
    method: 'GET',
    path: '/schema/getTemplateFields',
    handler: (ctx) => registry.templateFields(optional(ctx.query, 'templateId') ?? required(ctx.query, 'templateId')),
  });
  add({
    method: 'POST',
    path: '/schema/genTemplate',
    handler: async (ctx) => {
      const schemaUuid = optional(ctx.query, 'schemaId') ?? required(ctx.query, 'schemaId');
      const templateId = required(ctx.query, 'templateId');
      const added = await registry.applyTemplate(schemaUuid, templateId);
      return added ?? [];
    },
  });
}

/** The model's log, or undefined while it cannot be opened (its detail still answers). */
function openLog(registry: RegistryApi, uuid: string): LogApi | undefined {
  try {
    return registry.log(uuid);
  } catch {
    return undefined;
  }
}

function recoveryView(f: RecoveryFindings): Record<string, unknown> {
  return {
    truncatedBytes: f.truncatedBytes,
    lostIds: f.lostIds,
    lostRanges: f.lostRanges,
    since: new Date(f.sinceMs).toISOString(),
    acknowledge: 'POST /api/v1/schema/recovery/ack?uuid=<model uuid>',
  };
}
