/**
 * HTTP fuzzing of every route the server registers (query, management, rules, inputs, push, metrics,
 * health) and of UI paths: random, unicode, huge, negative, repeated parameters, SQL and path-traversal
 * attempts, malformed percent-encoding, raw latin1 bytes in the URL; bodies that are not JSON, wrong JSON
 * types, deep nesting, huge strings, invalid UTF-8, over the size limit. Every answer must be the
 * envelope with a 4xx (or a 200 when the input happened to be valid), never a 5xx, never a stack trace,
 * and the server must keep answering.
 *
 * Seeded: FUZZ_SEED=<n> replays a run; FUZZ_CASES=<n> sets the number of cases (default 10,000).
 * The seed and the counts by status are printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HEADER_BYTES_MAX } from '../../src/http/core/wire.js';
import { admin, bearer, publishedModel, raw, type RawAnswer, STACK_LIKE } from '../support/client.js';
import { ADMIN, SECRET, SHORT_LUA_LIMITS, type TestService, startService } from '../support/service.js';
import { prng } from '../support/prng.js';

const CASES = Number(process.env.FUZZ_CASES ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? Math.floor(Math.random() * 2 ** 31));
const CONCURRENCY = 8;
const BODY_MAX = 256 * 1024;
const URL_MAX = 8192;


const rand = prng(SEED);
const int = (n: number): number => Math.floor(rand() * n);
const chance = (p: number): boolean => rand() < p;
function pick<T>(items: readonly T[]): T {
  return items[int(items.length)];
}

let svc: TestService;
/** Real identifiers, so that cases reach past "not found" into the handlers. */
const ids = { model: [] as string[], attr: [] as string[], rule: [] as string[], inend: [] as string[] };
let pushToken = '';

const PARAM_NAMES = [
  'uuid', 'secrets', 'secret', 'current', 'size', 'order', 'select', 'confirm', 'schemaId', 'schema_uuid', 'templateId',
  'format', 'from', 'to', 'x', '', 'UUID', 'uuid[]', 'a.b', '__proto__', 'constructor',
];

const NASTY = [
  '', ' ', '0', '-1', '-0', '1.5', '1e3', '0x10', '１２', '9'.repeat(40), '-9007199254740993', 'NaN', 'Infinity', 'null', 'undefined',
  'true', 'asc', 'DESC', 'csv', 'jsonl', 'xlsx', 'id,create_at', 'id;drop', ',,,', 'temp,,TEMP, temp ',
  "' OR 1=1 --", '1; DROP TABLE models', '" OR ""="', "admin'--", 'UNION SELECT * FROM sqlite_master',
  '../../../../etc/passwd', '..\\..\\windows\\win.ini', '/etc/passwd', '%2e%2e%2f%2e%2e%2f', '....//....//', '\0',
  '\u0000\u0001\u001f', '\u202e\u0645\u0631\u062d\u0628\u0627', '😀💥', 'e\u0301\u0301\u0301', '\ufeff', '\ud800', '\udfff',
  '<script>alert(1)</script>', '${7*7}', '{{7*7}}', '%s%s%s%n', 'SCHEMA22222222', 'RULE2222222', 'INEND222222222',
  'TEMP_HUMIDITY', 'NO_SUCH_TEMPLATE', '[]', '{}', '{"$gt":""}',
];

function randomString(max: number): string {
  const n = int(max + 1);
  const kind = int(5);
  let out = '';
  for (let i = 0; i < n; i++) {
    if (kind === 0) out += String.fromCharCode(0x20 + int(0x5f));
    else if (kind === 1) out += String.fromCharCode(int(0x100));
    else if (kind === 2) out += String.fromCodePoint(int(0x10ffff + 1 - 0x800) + (int(2) === 0 ? 0 : 0x800));
    else if (kind === 3) out += pick(['%', '&', '=', '+', '#', '?', '/', ';', ',', '\\', '.', '"', "'"]);
    else out += pick(['a', 'Z', '9', '_', '-', ' ']);
  }
  return out;
}

function value(): string {
  const r = int(10);
  if (r < 3) {
    const pool = [...ids.model, ...ids.attr, ...ids.rule, ...ids.inend];
    return pool.length > 0 ? pick(pool) : 'SCHEMA22222222';
  }
  if (r < 6) return pick(NASTY);
  if (r < 7) return String(int(3000) - 1000);
  if (r < 8) return 'x'.repeat(chance(0.05) ? int(40_000) : int(3000));
  return randomString(40);
}

/** encodeURIComponent, with lone surrogates (which it refuses) replaced. */
function safeEncode(text: string): string {
  return encodeURIComponent(text.replace(/[\ud800-\udfff]/g, '?'));
}

/** Percent-encodes, leaves raw, or breaks the encoding. */
function encode(text: string): string {
  const r = int(10);
  if (r < 6) return safeEncode(text);
  if (r < 8) {
    // raw, but only bytes a client can put on the request line (latin1, no space or control)
    let out = '';
    for (const ch of text) {
      const code = ch.codePointAt(0) ?? 0;
      if (code <= 0x20 || code === 0x7f) out += `%${code.toString(16).padStart(2, '0')}`;
      else if (code > 0xff) out += safeEncode(ch);
      else out += ch;
    }
    return out;
  }
  return pick(['%', '%z', '%zz', '%E0%A4%A', '%C0%AF', '%FF%FE', '%ED%A0%80', '%%41', '%u0041', '%0']) + safeEncode(text.slice(0, 10));
}

function queryString(): string {
  const parts: string[] = [];
  const n = int(6);
  for (let i = 0; i < n; i++) {
    const name = chance(0.8) ? pick(PARAM_NAMES) : randomString(8);
    const repeats = chance(0.15) ? 2 + int(4) : 1;
    for (let k = 0; k < repeats; k++) {
      if (chance(0.05)) parts.push(encode(name));
      else parts.push(`${encode(name)}=${encode(value())}`);
    }
  }
  if (chance(0.05)) parts.push(pick(['&&&', '=', '==', '&=&', '%26%3D']));
  return parts.join('&');
}

function nested(depth: number, open: string, close: string, inner = '1'): string {
  return open.repeat(depth) + inner + close.repeat(depth);
}

const FIELD_VALUES: Array<() => unknown> = [
  () => value(),
  () => int(2000) - 1000,
  () => rand() * 1e308,
  () => null,
  () => true,
  () => [],
  () => [value(), 1, null],
  () => ({}),
  () => ({ nested: { deeper: value() } }),
  () => 'y'.repeat(int(100_000)),
  () => pick(['INTEGER', 'FLOAT', 'BOOL', 'STRING', 'GEO', 'DATE', 'integer', '']),
  () => pick(['R', 'W', 'RW', 'X']),
  () => ({ defaultValue: value(), min: int(10) - 5, max: int(10), round: int(30) - 10, trueLabel: value(), falseLabel: 1 }),
  () => pick([
    'Actions = { function(args) return true, args end }',
    'Actions = { function(args) local f = io.open("/etc/passwd") return true, f end }',
    'Actions = { function(args) return true, os.getenv("HOME") end }',
    'Actions = { function(args) while true do end end }',
    'Actions = { function(args) local t = {} while true do t[#t+1] = string.rep("x", 1e6) end end }',
    'Actions = {',
    'return require("os").execute("id")',
    'Actions = { function(args) Throw("x") return 0 end }',
  ]),
];

const FIELD_NAMES = [
  'name', 'description', 'uuid', 'schemaId', 'label', 'type', 'rw', 'unit', 'rule', 'fromSource', 'actions', 'success', 'failed',
  'config', 'published', 'id', 'create_at', '__proto__', 'constructor', 'prototype', '',
];

function jsonObject(): Record<string, unknown> {
  const obj: Record<string, unknown> = {};
  const n = int(8);
  for (let i = 0; i < n; i++) obj[chance(0.9) ? pick(FIELD_NAMES) : randomString(10)] = pick(FIELD_VALUES)();
  if (chance(0.3) && ids.model.length > 0) obj.schemaId = pick(ids.model);
  if (chance(0.3) && ids.inend.length > 0) obj.fromSource = [pick(ids.inend)];
  if (chance(0.2)) obj.type = pick(['HTTP', 'SIMULATOR', 'FLOAT', 'INTEGER']);
  return obj;
}

/** Bodies: kind name (for the summary) and bytes. */
function body(): { kind: string; bytes: Buffer; type?: string } {
  const r = int(20);
  if (r < 7) return { kind: 'object', bytes: Buffer.from(JSON.stringify(jsonObject())) };
  if (r === 7) return { kind: 'wrong-type', bytes: Buffer.from(pick(['null', '[]', '"str"', '1', 'true', '1e999', '[{}]', '-0'])) };
  if (r === 8) return { kind: 'not-json', bytes: Buffer.from(randomString(200)) };
  if (r === 9) return { kind: 'truncated', bytes: Buffer.from(JSON.stringify(jsonObject()).slice(0, int(40))) };
  if (r === 10) {
    const depth = pick([100, 1000, 10_000, 50_000]);
    return { kind: 'deep', bytes: Buffer.from(chance(0.5) ? nested(depth, '[', ']') : nested(depth, '{"a":', '}')) };
  }
  if (r === 11) {
    // deep nesting as a field value: valid JSON object at the top
    const depth = pick([1000, 10_000, 30_000]);
    return { kind: 'deep-field', bytes: Buffer.from(`{"name":${nested(depth, '[', ']')},"description":${nested(depth, '{"a":', '}')}}`) };
  }
  if (r === 12) return { kind: 'huge-string', bytes: Buffer.from(JSON.stringify({ name: 'n'.repeat(BODY_MAX - 100), description: '' })) };
  if (r === 13) return { kind: 'invalid-utf8', bytes: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff, 0xfe, 0xed, 0xa0, 0x80]), Buffer.from('"}')]) };
  if (r === 14) return { kind: 'bom', bytes: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(jsonObject()))]) };
  if (r === 15) return { kind: 'empty', bytes: Buffer.alloc(0) };
  if (r === 16) {
    const lines = Array.from({ length: 1 + int(5) }, () => JSON.stringify([{ tag: 't1', value: pick(FIELD_VALUES)() }]));
    return { kind: 'ndjson', bytes: Buffer.from(lines.join(pick(['\n', '\r\n', '\n\n']))), type: 'application/x-ndjson' };
  }
  if (r === 17) return { kind: 'binary', bytes: Buffer.from(Array.from({ length: int(300) }, () => int(256))) };
  if (r === 18) return { kind: 'dup-keys', bytes: Buffer.from('{"name":"a","name":1,"name":null,"__proto__":{"x":1}}') };
  return { kind: 'over-limit', bytes: Buffer.alloc(BODY_MAX + 1 + int(1000), 0x61) };
}

interface Case {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  bodyKind?: string;
}

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'];

function makeCase(): Case {
  const headers: Record<string, string> = {};
  const r = int(100);
  let method: string;
  let path: string;
  if (r < 88) {
    const route = pick(svc.routes);
    method = chance(0.9) ? route.method : pick(METHODS);
    path = route.path;
    if (chance(0.05)) path += '/';
    if (chance(0.03)) path = path.toUpperCase();
  } else if (r < 94) {
    // UI files and traversal attempts
    method = chance(0.9) ? 'GET' : pick(METHODS);
    path = pick([
      '/', '/index.html', '/app.css', '/favicon.svg', '/js/app.js', '/../../../../etc/passwd', '/..%2f..%2f..%2fetc%2fpasswd',
      '/%2e%2e/%2e%2e/package.json', '/%2e%2e%5c%2e%2e%5cpackage.json', '/.git/config', '/.env', '//etc/passwd',
      '/index.html%00.js', '/js/../../../src/server.ts', '/%c0%ae%c0%ae/%c0%ae%c0%ae/etc/passwd', '/vendor/%', '/a/b/c/d',
      `/${encode(randomString(30))}`, `/${'a/'.repeat(200)}`, '/%ff%fe', '/\\..\\..\\package.json',
    ]);
  } else {
    method = pick(METHODS);
    path = pick(['/api', '/api/', '/api/v1', '/api/v2/schema/list', '/api/v1/../../etc/passwd', `/api/v1/${encode(randomString(20))}`, '/metrics', '/healthz']);
  }
  let query = chance(0.85) ? queryString() : '';
  if (chance(0.01)) query = `x=${'q'.repeat(URL_MAX + int(50_000))}`; // 414
  const url = query.length > 0 ? `${path}?${query}` : path;

  // credentials: mostly right, sometimes wrong or missing
  const a = int(100);
  if (path.includes('queryDataList') || path.includes('queryLastData')) {
    if (a < 60) headers['X-Api-Secret'] = SECRET;
    else if (a < 80) headers['X-Api-Secret'] = encode(value()).slice(0, 200) || 'x';
  } else if (path.includes('/inends/push')) {
    if (a < 70 && pushToken !== '') Object.assign(headers, bearer(pushToken));
    else if (a < 85) headers.Authorization = `Bearer ${encode(value()).slice(0, 300) || 'x'}`;
  } else if (a < 85) Object.assign(headers, bearer(ADMIN));
  else if (a < 92) headers.Authorization = pick(['Bearer', 'Bearer ', 'Basic YWRtaW46YWRtaW4=', `bearer ${ADMIN} extra`, `Bearer ${ADMIN.slice(1)}`, 'Bearer \u00ff']);

  const c: Case = { method, path: url, headers };
  if (method !== 'GET' && method !== 'HEAD' && chance(0.9)) {
    const b = body();
    c.body = b.bytes;
    c.bodyKind = b.kind;
    headers['Content-Type'] = b.type ?? pick(['application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-ndjson', 'x/\u00e9']);
  }
  if (chance(0.03)) headers['X-Junk'] = encode(randomString(100)).slice(0, 4000);
  return c;
}

const byStatus = new Map<string, number>();
const byBodyKind = new Map<string, number>();
const failures: string[] = [];

function isApi(path: string): boolean {
  const p = path.split('?')[0];
  return p === '/api' || p.startsWith('/api/') || p === '/metrics' || p.startsWith('/metrics/') || p === '/healthz' || p.startsWith('/healthz/');
}

function check(c: Case, r: RawAnswer): string | undefined {
  // uWS answers a header block over UWS_HTTP_MAX_HEADERS_SIZE itself, before any route (docs/api.md).
  const headBytes = c.path.length + Object.entries(c.headers).reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  if (r.status === 431 && headBytes > HEADER_BYTES_MAX - 1024) return undefined;
  if (r.status >= 500) return `status ${r.status}: ${r.text.slice(0, 300)}`;
  if (STACK_LIKE.test(r.text) && !(c.path.startsWith('/js/') || c.path.startsWith('/vendor/'))) return `stack-like answer: ${r.text.slice(0, 300)}`;
  const type = String(r.headers['content-type'] ?? '');
  if (c.method === 'HEAD') return undefined; // no body to check
  if (r.status === 204) return c.method === 'OPTIONS' ? undefined : 'unexpected 204';
  const envelope = (): string | undefined => {
    if (!type.startsWith('application/json')) return `status ${r.status} with content-type ${type}`;
    const b = r.body;
    if (typeof b !== 'object' || b === null) return `not JSON: ${r.text.slice(0, 200)}`;
    if (b.code !== r.status) return `code ${b.code} != status ${r.status}`;
    if (typeof b.msg !== 'string') return 'msg is not a string';
    if (r.status >= 400 && b.data !== null) return 'error with data';
    if (r.headers['x-content-type-options'] !== 'nosniff') return 'no nosniff';
    return undefined;
  };
  if (isApi(c.path)) {
    // exportData and backup stream their files (CSV, NDJSON); /metrics is Prometheus text.
    if (r.status === 200 && (c.path.includes('exportData') || c.path.includes('datacenter/backup') || c.path.startsWith('/metrics'))) return undefined;
    return envelope();
  }
  // UI paths: files (200), plain 404, or the envelope for 400/405/414
  if (r.status === 200 || r.status === 404) {
    if (r.headers['x-content-type-options'] !== 'nosniff') return 'static answer without nosniff';
    if (r.status === 200 && /passwd|package\.json|\.env|\.git|server\.ts/.test(c.path.split('?')[0]) && !type.startsWith('text/html')) {
      return `traversal served ${type}`;
    }
    if (r.status === 200 && r.text.includes('root:x:0:0')) return 'served /etc/passwd';
    return undefined;
  }
  return envelope();
}

async function runCase(c: Case): Promise<void> {
  let r: RawAnswer;
  const t0 = Date.now();
  try {
    r = await raw(svc.port, { method: c.method, path: c.path, headers: c.headers, body: c.body, timeoutMs: 30_000 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Over the body limit the server answers 413 and closes at once; the client may still be writing.
    if (c.bodyKind === 'over-limit' && (code === 'ECONNRESET' || code === 'EPIPE')) {
      byStatus.set('413/reset', (byStatus.get('413/reset') ?? 0) + 1);
      return;
    }
    if (err instanceof TypeError && /Invalid character|ERR_INVALID_CHAR|ERR_UNESCAPED/.test(`${(err as { code?: string }).code} ${err.message}`)) {
      byStatus.set('client-refused', (byStatus.get('client-refused') ?? 0) + 1);
      return;
    }
    failures.push(`${c.method} ${c.path.slice(0, 200)}: ${(err as Error).message}`);
    return;
  }
  const ms = Date.now() - t0;
  if (process.env.FUZZ_VERBOSE && ms > 200) console.log(`slow ${ms} ms: ${c.method} ${c.path.slice(0, 80)} [${c.bodyKind}] -> ${r.status}`);
  const key = String(r.status);
  byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
  if (c.bodyKind !== undefined) byBodyKind.set(`${c.bodyKind} ${r.status}`, (byBodyKind.get(`${c.bodyKind} ${r.status}`) ?? 0) + 1);
  const problem = check(c, r);
  if (problem !== undefined) failures.push(`${c.method} ${c.path.slice(0, 200)} [${c.bodyKind ?? '-'}]: ${problem}`);
}

/** Keeps real objects around (fuzzing deletes and clears them too). */
async function refreshIds(): Promise<void> {
  const models = await admin(svc.port, 'GET', '/api/v1/schema/list');
  ids.model = (models.body?.data ?? []).map((m: { uuid: string }) => m.uuid);
  if (!(models.body?.data ?? []).some((m: { published: boolean }) => m.published)) {
    ids.model.push(await publishedModel(svc.port, `fuzz-${int(1e6)}`, ['t1', 'temp']));
  }
  const attrs: string[] = [];
  for (const m of ids.model.slice(0, 5)) {
    const l = await admin(svc.port, 'GET', `/api/v1/schema/properties/list?schema_uuid=${m}`);
    for (const a of l.body?.data?.records ?? []) attrs.push(a.uuid);
  }
  ids.attr = attrs;
  const rules = await admin(svc.port, 'GET', '/api/v1/rules/list');
  ids.rule = (rules.body?.data ?? []).map((x: { uuid: string }) => x.uuid);
  const inends = await admin(svc.port, 'GET', '/api/v1/inends/list');
  ids.inend = (inends.body?.data ?? []).map((x: { uuid: string }) => x.uuid);
  if (ids.inend.length === 0 || pushToken === '') {
    const created = await admin(svc.port, 'POST', '/api/v1/inends/create', { name: 'fuzz', type: 'HTTP', description: '' });
    ids.inend.push(created.body.data.uuid);
    pushToken = created.body.data.token;
    const model = ids.model[0];
    await admin(svc.port, 'POST', '/api/v1/rules/create', {
      name: 'fuzz-rule',
      fromSource: [created.body.data.uuid],
      actions: `Actions = { function(args) local t, err = json:J2T(args); if err ~= nil then Throw(err); return 0; end; rds:Save("${model}", {temp = 1}); return true, args; end }`,
    });
  }
}

beforeAll(async () => {
  svc = await startService({
    ini: {
      'plugin.http_server': [`body_bytes_max = ${BODY_MAX}`, `url_bytes_max = ${URL_MAX}`, 'auth_failures_per_minute = 0'],
      scripts: ['queue_max = 100000', ...SHORT_LUA_LIMITS],
    },
    logLevel: 'warn',
  });
  await refreshIds();
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

describe('HTTP fuzzing', () => {
  it(`${CASES} generated cases: never a 5xx, a stack trace or a crash; always the envelope`, async () => {
    const started = Date.now();
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < CASES) {
        const n = next++;
        if (n > 0 && n % 1000 === 0) await refreshIds();
        await runCase(makeCase());
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const seconds = (Date.now() - started) / 1000;

    // Still alive and well.
    const health = await raw(svc.port, { path: '/healthz' });
    expect(health.status).toBe(200);

    const counts = Object.fromEntries([...byStatus.entries()].sort());
    const summary = `fuzz seed=${SEED} cases=${CASES} seconds=${seconds.toFixed(1)} by status ${JSON.stringify(counts)}`;
    console.log(summary);
    if (process.env.FUZZ_VERBOSE) console.log(JSON.stringify(Object.fromEntries([...byBodyKind.entries()].sort()), null, 1));
    const errors = svc.logs.filter((l) => l.level >= 50);
    expect(failures.slice(0, 20), summary).toEqual([]);
    expect(errors.slice(0, 5), 'error-level log lines (500s)').toEqual([]);
    const answered = [...byStatus.entries()].filter(([k]) => /^\d+$/.test(k)).reduce((s, [, v]) => s + v, 0);
    expect(answered).toBeGreaterThanOrEqual(CASES * 0.97);
  }, Math.max(120_000, CASES * 20));
});
