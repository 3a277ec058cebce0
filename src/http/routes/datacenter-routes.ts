/**
 * RHILEX's `datacenter/*` management endpoints (rhilex.md 2.3, contract sections 6 and 7), all behind
 * the admin token: model list and layout, export, clear, and the data secret.
 */
import type { Config } from '../../config/types.js';
import type { Attribute, DataModel } from '../../models/types.js';
import type { Audit } from '../guards/audit.js';
import type { RegistryView } from '../core/deps.js';
import { contentDisposition, exportChunks, exportContentType, exportFormat, formulaMode, pumpToSink } from '../export/export.js';
import { modelView } from '../core/format.js';
import { badParameter, integer, one, required } from '../core/params.js';
import { StreamReply } from '../core/reply.js';
import type { Guard, Router } from '../core/router.js';

const ZERO_RULE = { defaultValue: null, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 };

/** rhilex.md 2.3: two synthetic heads, then the attributes in model order. */
export function ddlDetail(attributes: readonly Attribute[]): Array<Record<string, unknown>> {
  return [
    { id: 101, name: 'id', label: 'id', type: 'INTEGER', uuid: '101', unit: '', rule: ZERO_RULE },
    { id: 100, name: 'create_at', label: 'create_at', type: 'STRING', uuid: '100', unit: '', rule: ZERO_RULE },
    ...attributes.map((a, index) => ({
      id: index + 1,
      name: a.name,
      label: a.label,
      type: a.type,
      uuid: a.uuid,
      unit: a.unit,
      rw: a.rw,
      description: a.description,
      rule: a.rule,
    })),
  ];
}

/**
 * RHILEX's schemaDDLDefine (rhilex.md 2.3) reads its table's columns: `id` INTEGER, `create_at` (a
 * DATETIME, reported as STRING), then one column per attribute. Our columns are the attributes' own
 * types (GEO included, where RHILEX's GEO branch never matched), and `defaultValue` is what a record
 * that never received the attribute reads: its typed default, not RHILEX's quoted `''`. A draft has
 * no table yet, so `[]`, as RHILEX answers for a missing table.
 */
export function ddlDefine(model: DataModel): Array<{ name: string; type: string; defaultValue: unknown }> {
  if (!model.published) return [];
  return [
    { name: 'id', type: 'INTEGER', defaultValue: 0 },
    { name: 'create_at', type: 'STRING', defaultValue: '' },
    ...model.attributes.map((a) => ({ name: a.name, type: a.type, defaultValue: a.rule.defaultValue })),
  ];
}

export function addDatacenterRoutes(router: Router, registry: RegistryView, config: Config, admin: Guard, audit: Audit): void {
  router.group({ prefix: '/api/v1/datacenter', guard: admin }, (g) => {
    g.get('/listSchemaDDL', () => registry.list().map(modelView));

    g.get('/schemaDDLDetail', (ctx) => ddlDetail(registry.get(required(ctx.query, 'uuid')).attributes));

    g.get('/schemaDDLDefine', (ctx) => ddlDefine(registry.get(required(ctx.query, 'uuid'))));

    g.get('/exportData', (ctx) => {
      const query = ctx.query;
      const uuid = required(query, 'uuid');
      const format = exportFormat(one(query, 'format'));
      const formulas = formulaMode(one(query, 'formulas'));
      const fromId = integer(query, 'from', 1, Number.MAX_SAFE_INTEGER);
      const toId = integer(query, 'to', 1, Number.MAX_SAFE_INTEGER);
      if (fromId !== undefined && toId !== undefined && fromId > toId) {
        throw badParameter('from', `at most 'to' (${toId})`, String(fromId));
      }
      const model = registry.get(uuid);
      const log = registry.log(uuid);
      // When the data starts to leave, as for a backup: a download cut short has still taken part of it.
      audit.event('data.export', ctx, { type: 'model', name: model.name, uuid });
      const headers = {
        'Content-Type': exportContentType(format),
        'Content-Disposition': contentDisposition(model, format, Date.now()),
      };
      return new StreamReply(headers, (sink) => pumpToSink(exportChunks({ model, log, fromId, toId }, { format, formulas }), sink));
    });

    g.delete('/clearSchemaData', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      await registry.log(uuid).clear();
      audit.event('data.clear', ctx, { type: 'model', name: registry.get(uuid).name, uuid });
      return [];
    });

    g.get('/secret', (ctx) => {
      audit.event('secret.read', ctx, { type: 'secret', name: 'dataschema_secrets', uuid: '' });
      return { secret: config.main.secrets[0] ?? '' };
    });
  });
}
