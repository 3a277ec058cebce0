/**
 * Inputs ("inends"), the push endpoint, and rules (contract section 7). Management calls need the admin
 * token; a push needs the input's own push token.
 */
import { InvalidArgumentError, PushPartlyKeptError } from '../../errors.js';
import type { Audit } from '../guards/audit.js';
import type { EngineView } from '../core/deps.js';
import { badParameter, required } from '../core/params.js';
import { withUuid } from '../core/format.js';
import { jsonBody } from '../core/body.js';
import { bodyPayloads, type BodyPayloads } from '../../scripts/payloads.js';
import type { RequestCtx } from '../core/request.js';
import type { Guard, Router } from '../core/router.js';

/** `wait=durable` (contract 9): the push answers once its records are on disk. */
function waitParam(ctx: RequestCtx): boolean {
  const wait = ctx.query.get('wait')?.[0];
  if (wait === undefined || wait === '') return false;
  if (wait === 'durable') return true;
  throw badParameter('wait', 'durable or absent', wait);
}

/** Splits a push body into payloads: NDJSON gives one per non-blank line, anything else one in all. */
export function pushPayloads(ctx: RequestCtx): BodyPayloads {
  const payloads = bodyPayloads(ctx.body, ctx.header('content-type') ?? '');
  if (payloads.starts.length === 0) throw new InvalidArgumentError('push body is empty: send one payload (or NDJSON lines)');
  return payloads;
}

export function addScriptRoutes(router: Router, engine: EngineView, guards: { admin: Guard; pushToken: Guard }, audit: Audit): void {
  router.group({ prefix: '/api/v1/inends', guard: guards.admin }, (g) => {
    g.get('/list', () => engine.listInends());
    g.get('/detail', (ctx) => engine.getInend(required(ctx.query, 'uuid')));
    g.get('/stats', (ctx) => engine.inendStats(required(ctx.query, 'uuid')));
    g.post('/create', async (ctx) => {
      const { inend, token } = await engine.createInend(jsonBody(ctx));
      audit.event('inend.create', ctx, { type: 'inend', name: inend.name, uuid: inend.uuid });
      const view = withUuid(inend);
      if (token !== undefined) view.token = token;
      return view;
    });
    g.put('/update', (ctx) => engine.updateInend(jsonBody(ctx)));
    g.post('/rotateToken', async (ctx) => {
      const { inend, token } = await engine.rotateToken(required(ctx.query, 'uuid'));
      audit.event('inend.rotate-token', ctx, { type: 'inend', name: inend.name, uuid: inend.uuid });
      return { ...withUuid(inend), token };
    });
    g.delete('/del', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const inend = engine.getInend(uuid);
      await engine.deleteInend(uuid);
      audit.event('inend.delete', ctx, { type: 'inend', name: inend.name, uuid });
      return [];
    });
  });

  router.group({ prefix: '/api/v1/inends', guard: guards.pushToken }, (g) => {
    g.post('/push', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const payloads = pushPayloads(ctx);
      const result = await engine.push(uuid, payloads, { waitDurable: waitParam(ctx) });
      if (result.storeReadOnly !== undefined) {
        // 503 so the client backs off; `kept` names the lines stored (written when space returns): resend only the others.
        throw new PushPartlyKeptError(
          `${result.storeReadOnly}; of ${payloads.starts.length} payloads ${result.accepted} are stored and kept (data.kept lists ` +
            `their line numbers), ${result.failed} were not stored: resend only those`,
          { accepted: result.accepted, failed: result.failed, kept: result.kept ?? [] },
        );
      }
      return result;
    });
  });

  router.group({ prefix: '/api/v1/rules', guard: guards.admin }, (g) => {
    g.get('/list', () => engine.listRules());
    g.get('/detail', (ctx) => engine.getRule(required(ctx.query, 'uuid')));
    g.post('/create', async (ctx) => {
      const rule = await engine.createRule(jsonBody(ctx));
      audit.event('rule.create', ctx, { type: 'rule', name: rule.name, uuid: rule.uuid });
      return withUuid(rule);
    });
    g.put('/update', async (ctx) => {
      const body = jsonBody(ctx);
      const rule = await engine.updateRule(body);
      audit.event('rule.update', ctx, { type: 'rule', name: rule.name, uuid: String(body.uuid) });
      return rule;
    });
    g.delete('/del', async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const rule = engine.getRule(uuid);
      await engine.deleteRule(uuid);
      audit.event('rule.delete', ctx, { type: 'rule', name: rule.name, uuid });
      return [];
    });
    g.post('/validate', (ctx) => engine.validate(jsonBody(ctx)));
    g.post('/dryRun', (ctx) => engine.dryRun(jsonBody(ctx)));
    g.get('/stats', (ctx) => engine.ruleStats(required(ctx.query, 'uuid')));
  });
}
