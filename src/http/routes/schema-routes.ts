/**
 * Model ("schema") and attribute ("property") management, RHILEX's paths and bodies (rhilex.md 2.2),
 * behind the admin token. Creates return `data.uuid` plus the object; actions without a result return
 * `[]` as RHILEX does.
 */
import type { AttributeFields } from '../../models/attribute-input.js';
import type { Audit } from '../guards/audit.js';
import type { LogView, RegistryView } from '../core/deps.js';
import type { ModelLogStats, RecoveryFindings } from '../../store/base/types.js';
import { retentionView } from '../../models/retention-input.js';
import { modelView, withUuid } from '../core/format.js';
import { boolean, integer, optional, pageSize, required } from '../core/params.js';
import { InvalidArgumentError } from '../../errors.js';
import { jsonBody } from '../core/body.js';
import type { Guard, Router } from '../core/router.js';

/**
 * When the limits act (contract 14), for whoever reads them as "at most this much stays": retention
 * removes whole sealed segments (src/store/retention/retention.ts), so a limit lower than one segment
 * shows nothing until the first seal.
 */
const RETENTION_NOTE =
  'Limits remove whole sealed segments, oldest first, never the segment being written. A segment is sealed ' +
  'at [store] segment_bytes (default 32 MiB) or segment_age_hours after its first record (default 24): until ' +
  'then a limit lower than one segment removes nothing, and up to one segment more than a limit stays.';

export function addSchemaRoutes(router: Router, registry: RegistryView, admin: Guard, audit: Audit): void {
  router.group({ prefix: '/api/v1/schema', guard: admin }, (g) => {
    g.post('/create', async (ctx) => {
      const body = jsonBody(ctx);
      const created = await registry.create({ name: body.name, description: body.description ?? '' });
      return modelView(registry.get(created.uuid));
    });
    g.put('/update', async (ctx) => {
      const body = jsonBody(ctx);
      if (typeof body.uuid !== 'string' || body.uuid.length === 0) throw new InvalidArgumentError("field 'uuid' is required");
      await registry.update({ uuid: body.uuid, name: body.name, description: body.description });
      return modelView(registry.get(body.uuid));
    });
    g.delete('/del', async (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      await registry.delete(model.uuid);
      audit.event('model.delete', ctx, { type: 'model', name: model.name, uuid: model.uuid });
      return [];
    });
    g.get('/list', () => registry.list().map(modelView));
    g.get('/detail', (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      const log = model.published ? openLog(registry, model.uuid) : undefined;
      const recovery = log?.findings();
      return {
        ...modelView(model),
        retention: {
          own: model.retention ?? { maxRecords: null, maxBytes: null, maxAgeHours: null },
          effective: retentionView(registry.retentionOf(model)),
          note: RETENTION_NOTE,
        },
        ...(log === undefined ? {} : { usage: usageView(log.stats()) }),
        disk: registry.diskSpace() ?? null,
        ...(recovery === undefined ? {} : { recovery: recoveryView(recovery) }),
      };
    });
    g.put('/retention', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const model = await registry.setRetention(uuid, jsonBody(ctx));
      audit.event('model.retention', ctx, { type: 'model', name: model.name, uuid });
      return { own: model.retention, effective: retentionView(registry.retentionOf(model)) };
    });
    g.post('/recovery/ack', async (ctx) => {
      const model = registry.get(required(ctx.query, 'uuid'));
      await registry.log(model.uuid).acknowledgeFindings();
      audit.event('model.recovery-ack', ctx, { type: 'model', name: model.name, uuid: model.uuid });
      return [];
    });
    g.post('/publish', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      await registry.publish(uuid);
      audit.event('model.publish', ctx, { type: 'model', name: registry.get(uuid).name, uuid });
      return [];
    });
    g.post('/fix', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const confirm = boolean(ctx.query, 'confirm', false);
      const model = registry.get(uuid);
      if (!confirm) {
        throw new InvalidArgumentError('fix returns the model to draft and deletes all its records: repeat with confirm=true');
      }
      await registry.fix(uuid, true);
      audit.event('model.fix', ctx, { type: 'model', name: model.name, uuid });
      return [];
    });

    g.post('/properties/create', async (ctx) => withUuid(await registry.createAttribute(jsonBody(ctx))));
    g.put('/properties/update', (ctx) => registry.updateAttribute(jsonBody(ctx)));
    g.delete('/properties/del', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const attribute = registry.getAttribute(uuid);
      await registry.deleteAttribute(uuid);
      audit.event('attribute.delete', ctx, { type: 'attribute', name: attribute.name, uuid });
      return [];
    });
    g.get('/properties/list', (ctx) => {
      const query = ctx.query;
      const schemaUuid = optional(query, 'schema_uuid') ?? optional(query, 'schemaId') ?? required(query, 'schema_uuid');
      const current = integer(query, 'current', 1, Number.MAX_SAFE_INTEGER, 1);
      const size = pageSize(query);
      const all = registry.listAttributes(schemaUuid);
      const start = (current - 1) * size;
      return { current, size, total: all.length, records: start < all.length ? all.slice(start, start + size) : [] };
    });
    g.get('/properties/detail', (ctx) => registry.getAttribute(required(ctx.query, 'uuid')));

    g.get('/getTemplates', () => registry.templates());
    g.get('/getTemplateFields', (ctx) => {
      const templateId = optional(ctx.query, 'templateId');
      return templateId === undefined ? templateCatalogue(registry) : registry.templateFields(templateId);
    });
    g.post('/genTemplate', (ctx) => {
      const schemaUuid = optional(ctx.query, 'schemaId') ?? required(ctx.query, 'schemaId');
      const templateId = required(ctx.query, 'templateId');
      return registry.applyTemplate(schemaUuid, templateId);
    });
  });
}

/**
 * Every template's fields in RHILEX's preview shape (contract 16), from exactly what genTemplate
 * inserts; `comment` says what RHILEX's Chinese comment said: what the field holds, its unit and bounds.
 */
function templateCatalogue(registry: RegistryView): Record<string, Array<{ name: string; type: string; comment: string }>> {
  const out: Record<string, Array<{ name: string; type: string; comment: string }>> = {};
  for (const { value } of registry.templates()) {
    out[value] = registry.templateFields(value).map((f) => ({ name: f.name, type: f.type, comment: templateComment(f) }));
  }
  return out;
}

function templateComment(f: AttributeFields): string {
  const { label, unit, type, rule } = f;
  const parts = [label];
  if (unit !== '') parts.push(unit);
  if ((type === 'INTEGER' || type === 'FLOAT') && rule.max > rule.min) parts.push(`${rule.min}..${rule.max}`);
  if (type === 'STRING' && rule.max > 0) parts.push(`at most ${rule.max} bytes`);
  if (type === 'BOOL' && rule.trueLabel !== '') parts.push(`${rule.trueLabel}/${rule.falseLabel}`);
  return parts.join(', ');
}

/** The model's log, or undefined while it cannot be opened (its detail still answers). */
function openLog(registry: RegistryView, uuid: string): LogView | undefined {
  try {
    return registry.log(uuid);
  } catch {
    return undefined;
  }
}

/** What the model holds now (contract 14): records, bytes on disk, the oldest record's time. */
function usageView(stats: ModelLogStats): Record<string, unknown> {
  return {
    records: stats.total,
    bytes: stats.bytes,
    oldestCreateAt: stats.oldestTs === undefined ? null : new Date(stats.oldestTs).toISOString(),
  };
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
