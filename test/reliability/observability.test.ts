/**
 * GET /metrics (Prometheus text from prom-client's own Registry) over the full service with a rule, an
 * input and `sync = always`; the store's fsync histogram; and the log levels: 4xx at debug, our 503 at
 * warn, anything else at error with the stack, which never reaches the client.
 */
import { pino } from 'pino';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UnavailableError } from '../../src/errors.js';
import { RawReply } from '../../src/http/core/reply.js';
import { PUBLIC, Router } from '../../src/http/core/router.js';
import { serveRouter } from '../support/transport.js';
import { LatencyHistogram } from '../../src/store/base/latency.js';
import { admin, bearer, publishedModel, raw } from '../support/client.js';
import { ADMIN, type TestService, SECRET, startService } from '../support/service.js';

describe('GET /metrics', () => {
  let svc: TestService;
  let model: string;
  let inend: string;
  let rule: string;

  beforeAll(async () => {
    svc = await startService({ ini: { main: ['metrics_token = scrape-token-0123456789'], store: ['sync = always'] } });
    model = await publishedModel(svc.port, 'metered', ['temp']);
    const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'in', type: 'HTTP', description: '' });
    inend = created.body.data.uuid;
    const r = await admin(svc.port, 'POST', '/api/v1/rules/create', {
      name: 'r',
      fromSource: [inend],
      actions: `Actions = { function(args) local t = json:J2T(args); if t.fail then Throw("asked to fail"); return 0; end; local err = rds:Save("${model}", {temp = t.v}); if err ~= nil then Throw(err); return 0; end; return true, args; end }`,
    });
    expect(r.status, r.text).toBe(200);
    rule = r.body.data.uuid;
    const token = created.body.data.token as string;
    const push = await raw(svc.port, {
      method: 'POST',
      path: `/api/v1/inends/push?uuid=${inend}`,
      headers: { ...bearer(token), 'Content-Type': 'application/x-ndjson' },
      body: '{"v":1}\n{"v":2}\n{"v":3}\n{"fail":true}\n',
    });
    expect(push.status, push.text).toBe(200);
    for (let i = 0; i < 3; i++) await raw(svc.port, { path: `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}` });
    await raw(svc.port, { path: `/api/v1/datacenter/queryLastData?uuid=SCHEMAXXXXXXXX&secrets=${SECRET}&junk=${Math.random()}` });
    await raw(svc.port, { path: '/api/v1/no/such/route/qzxroute' });
  }, 60_000);
  afterAll(async () => svc?.close());

  it('needs the admin token or the metrics token', async () => {
    expect((await raw(svc.port, { path: '/metrics' })).status).toBe(401);
    const wrong = await raw(svc.port, { path: '/metrics', headers: bearer('nope') });
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ code: 401, data: null });
    expect((await raw(svc.port, { path: '/metrics', headers: bearer(SECRET) })).status).toBe(401);
    expect((await raw(svc.port, { path: '/metrics', headers: bearer('scrape-token-0123456789') })).status).toBe(200);
    // the metrics token opens nothing else
    expect((await raw(svc.port, { path: '/api/v1/schema/list', headers: bearer('scrape-token-0123456789') })).status).toBe(401);
  });

  it('exposes store, rule, input and HTTP series in Prometheus text format', async () => {
    const r = await raw(svc.port, { path: '/metrics', headers: bearer(ADMIN) });
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
    const t = r.text;
    expect(t).toContain(`edge_store_records{model="${model}"} 3`);
    expect(t).toContain(`edge_store_state{model="${model}",state="ok"} 1`);
    expect(t).toContain(`edge_store_state{model="${model}",state="read-only"} 0`);
    expect(t).toMatch(new RegExp(`edge_store_fsync_seconds_count\\{model="${model}"\\} [1-9]`));
    expect(t).toContain(`edge_store_fsync_seconds_bucket{model="${model}",le="+Inf"}`);
    expect(t).toContain('# TYPE edge_store_fsync_seconds histogram');
    expect(t).toContain(`edge_rule_invocations_total{rule="${rule}"} 4`);
    expect(t).toContain(`edge_rule_successes_total{rule="${rule}"} 3`);
    expect(t).toContain(`edge_rule_failures_total{rule="${rule}"} 1`);
    expect(t).toMatch(/^edge_rule_overruns_total 0$/m);
    expect(t).toMatch(new RegExp(`edge_rule_latency_seconds\\{rule="${rule}",quantile="0.99"\\} [0-9.e-]+`));
    expect(t).toContain(`edge_input_queue_depth{input="${inend}"} 0`);
    expect(t).toContain('edge_models{published="true"} 1');
    expect(t).toContain('edge_http_requests_total{route="/api/v1/datacenter/queryLastData",method="GET",status="200"} 3');
    expect(t).toContain('edge_http_requests_total{route="/api/v1/datacenter/queryLastData",method="GET",status="404"} 1');
    expect(t).toContain('edge_http_requests_total{route="/api/*",method="GET",status="404"}');
    expect(t).toContain('edge_http_requests_total{route="/api/v1/inends/push",method="POST",status="200"} 1');
    expect(t).toMatch(/^edge_http_connections_open [1-9]/m);
    expect(t).toContain('process_cpu_seconds_total');
    // bounded cardinality: no raw URL, query or secret in any label
    expect(t).not.toContain('junk');
    expect(t).not.toContain(SECRET);
    expect(t).not.toContain('qzxroute');
  });
});

describe('fsync latency histogram (store)', () => {
  it('counts observations into fixed buckets', () => {
    const h = new LatencyHistogram([0.001, 0.01]);
    h.observe(0.0005);
    h.observe(0.005);
    h.observe(0.005);
    h.observe(3);
    expect(h.snapshot()).toEqual({ bounds: [0.001, 0.01], counts: [1, 2, 1], sumS: 3.0105, count: 4 });
  });
});

describe('log levels', () => {
  let server: { base: string; close(): void };
  let base: string;
  const lines: Array<Record<string, any>> = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _e, done) {
        for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l));
        done();
      },
    });
    const router = new Router({
      logger: pino({ level: 'debug' }, sink),
      urlBytesMax: 2048,
      bodyBytesMax: 1024,
      fallback: () => new RawReply(404, {}, ''),
    });
    router.group({ prefix: '/api', guard: PUBLIC }, (g) => {
      g.get('/bug', () => { throw new TypeError('internal detail xyz'); });
      g.get('/busy', () => { throw new UnavailableError('queue full', 2); });
    });
    server = await serveRouter(router);
    base = server.base;
  });
  afterAll(() => server.close());

  it('4xx at debug, 503 at warn, a bug at error with its stack in the log and not in the answer', async () => {
    const bad = await fetch(`${base}/api/nothing`);
    expect(bad.status).toBe(404);
    const busy = await fetch(`${base}/api/busy`);
    expect(busy.status).toBe(503);
    expect(busy.headers.get('retry-after')).toBe('2');
    const bug = await fetch(`${base}/api/bug`);
    expect(bug.status).toBe(500);
    const text = await bug.text();
    expect(JSON.parse(text)).toEqual({ code: 500, msg: 'internal error', data: null });
    expect(text).not.toMatch(/xyz|TypeError|at /);
    // The log lines are waited for (the ceiling only ends a hang).
    for (const until = Date.now() + 30_000; !['/api/nothing', '/api/busy', '/api/bug'].every((p) => lines.some((l) => l.path === p)) && Date.now() < until; ) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(lines.find((l) => l.path === '/api/nothing')).toMatchObject({ level: 20, status: 404 });
    expect(lines.find((l) => l.path === '/api/busy')).toMatchObject({ level: 40, code: 'ERR_UNAVAILABLE' });
    const err = lines.find((l) => l.path === '/api/bug');
    expect(err).toMatchObject({ level: 50, msg: 'request handler failed', err: { type: 'TypeError', message: 'internal detail xyz' } });
    expect(err?.err.stack).toMatch(/TypeError: internal detail xyz\n\s+at /);
  });
});
