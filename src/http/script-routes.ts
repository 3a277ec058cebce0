/**
 * Inputs ("inends"), the push endpoint, and rules (contract section 7). Management calls need the admin
 * token; a push needs the input's own push token. Without a script engine every route answers 503.
 */
import { AuthError, InvalidArgumentError, NotFoundError, PushPartlyKeptError, UnavailableError } from '../errors.js';
import { nameOf, type Audit } from './audit.js';
import { bearerToken, type FailureLimiter } from './auth.js';
import type { EngineApi } from './deps.js';
import { required } from './params.js';
import { withUuid } from './format.js';
import { jsonBody, utf8Body } from './body.js';
import type { RequestCtx } from './request.js';
import type { Route, Router } from './router.js';

type Guard = (ctx: RequestCtx) => void;

/** Splits a push body into payloads: NDJSON gives one per non-blank line, anything else one in all. */
export function pushPayloads(ctx: RequestCtx): string[] {
  const text = utf8Body(ctx, 'push body');
  const type = (ctx.header('content-type') ?? '').toLowerCase();
  const lines = type.startsWith('application/x-ndjson') || type.startsWith('application/jsonl');
  const payloads = lines
    ? text.split('\n').map((l) => (l.endsWith('\r') ? l.slice(0, -1) : l)).filter((l) => l.trim().length > 0)
    : text.trim().length > 0
      ? [text]
      : [];
  if (payloads.length === 0) throw new InvalidArgumentError('push body is empty: send one payload (or NDJSON lines)');
  return payloads;
}

export function addScriptRoutes(router: Router, engine: EngineApi | undefined, guard: Guard, audit: Audit, limiter?: FailureLimiter): void {
  const need = (): EngineApi => {
    if (engine === undefined) throw new UnavailableError('the script engine is not running', 5);
    return engine;
  };
  const add = (route: Route): void => {
    router.add({ guard, ...route, path: `/api/v1${route.path}` });
  };

  // Inputs
  add({ method: 'GET', path: '/inends/list', handler: () => need().listInends() });
  add({ method: 'GET', path: '/inends/detail', handler: (ctx) => need().getInend(required(ctx.query, 'uuid')) });
  add({
    method: 'POST',
    path: '/inends/create',
    handler: async (ctx) => {
      const { inend, token } = await need().createInend(jsonBody(ctx));
      audit.event('inend.create', ctx, { type: 'inend', name: nameOf(inend), uuid: inend.uuid });
      const view = withUuid(inend);
      if (token !== undefined) view.token = token;
      return view;
    },
  });
  add({ method: 'PUT', path: '/inends/update', handler: async (ctx) => (await need().updateInend(jsonBody(ctx))) ?? [] });
  add({
    method: 'DELETE',
    path: '/inends/del',
    handler: async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const inend = await need().getInend(uuid);
      await need().deleteInend(uuid);
      audit.event('inend.delete', ctx, { type: 'inend', name: nameOf(inend), uuid });
      return [];
    },
  });
  add({
    method: 'POST',
    path: '/inends/push',
    // The token is checked here, before the body is read: a wrong-token body costs nothing, and each
    // failure is counted at once, so concurrent bad requests meet the throttle. An unknown input answers
    // like a wrong token, so input ids cannot be probed.
    guard: (ctx) => {
      const token = bearerToken(ctx);
      if (token === undefined) {
        throw new AuthError("missing push token: send the header Authorization: Bearer <the input's token>");
      }
      const uuid = required(ctx.query, 'uuid');
      try {
        need().authenticatePush(uuid, token);
      } catch (err) {
        if (!(err instanceof AuthError || err instanceof NotFoundError)) throw err;
        limiter?.failed(ctx, 'push-token');
        throw new AuthError(`wrong push token for input ${uuid} (or no such input)`);
      }
    },
    handler: async (ctx) => {
      const e = need();
      const uuid = required(ctx.query, 'uuid');
      const payloads = pushPayloads(ctx);
      const result = await e.push(uuid, payloads);
      if (result.storeReadOnly !== undefined) {
        // 503 so the client backs off; `kept` names the lines stored (written when space returns): resend only the others.
        throw new PushPartlyKeptError(
          `${result.storeReadOnly}; of ${payloads.length} payloads ${result.accepted} are stored and kept (data.kept lists ` +
            `their line numbers), ${result.failed} were not stored: resend only those`,
          { accepted: result.accepted, failed: result.failed, kept: result.kept ?? [] },
        );
      }
      return result;
    },
  });

  // Rules
  add({ method: 'GET', path: '/rules/list', handler: () => need().listRules() });
  add({ method: 'GET', path: '/rules/detail', handler: (ctx) => need().getRule(required(ctx.query, 'uuid')) });
  add({
    method: 'POST',
    path: '/rules/create',
    handler: async (ctx) => {
      const rule = await need().createRule(jsonBody(ctx));
      audit.event('rule.create', ctx, { type: 'rule', name: nameOf(rule), uuid: rule.uuid });
      return withUuid(rule);
    },
  });
  add({
    method: 'PUT',
    path: '/rules/update',
    handler: async (ctx) => {
      const body = jsonBody(ctx);
      const rule = await need().updateRule(body);
      audit.event('rule.update', ctx, { type: 'rule', name: nameOf(rule), uuid: String(body.uuid) });
      return rule ?? [];
    },
  });
  add({
    method: 'DELETE',
    path: '/rules/del',
    handler: async (ctx) => {
      const uuid = required(ctx.query, 'uuid');
      const rule = await need().getRule(uuid);
      await need().deleteRule(uuid);
      audit.event('rule.delete', ctx, { type: 'rule', name: nameOf(rule), uuid });
      return [];
    },
  });
  add({ method: 'POST', path: '/rules/validate', handler: (ctx) => need().validate(jsonBody(ctx)) });
  add({ method: 'GET', path: '/rules/stats', handler: (ctx) => need().ruleStats(required(ctx.query, 'uuid')) });
}
