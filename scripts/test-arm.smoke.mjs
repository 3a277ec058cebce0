// The smoke flow of `npm run test:arm` (scripts/test-arm.sh), run by the host's node against a service
// started with an emulated one: the getting-started flow (docs/getting-started.md) end to end, each step
// asserted, then a clean stop (SIGTERM, exit 0), a restart that reads the same records, and a second stop.
//   node scripts/test-arm.smoke.mjs --node <ARM node binary> --root <a built copy of the checkout> --arch arm64|armv7
// QEMU_LD_PREFIX is taken from the environment (the emulated node's libraries). Exits 1 at the first
// failed step, naming it, with the service's last output lines; the service is killed on any exit.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({ options: { node: { type: 'string' }, root: { type: 'string' }, arch: { type: 'string' } } });
if (!args.node || !args.root || !args.arch) {
  console.error('usage: test-arm.smoke.mjs --node <arm node> --root <checkout copy> --arch arm64|armv7');
  process.exit(2);
}
const UWS_ARCH = { arm64: 'arm64', armv7: 'arm' }[args.arch];
const START_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 60_000;
const SECRET = 'arm-smoke-secret';
const ADMIN = 'arm-smoke-admin-token-0123456789';
const ATTRS = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];
const PUSHES = 40; // NDJSON payloads after the first single push

const t0 = Date.now();
const say = (msg) => console.log(`  [smoke ${args.arch} ${((Date.now() - t0) / 1000).toFixed(1)}s] ${msg}`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `edc-arm-smoke-${args.arch}-`));
const configFile = path.join(tmp, 'gateway.ini');
fs.writeFileSync(
  configFile,
  [
    '[main]',
    `data_dir = ${path.join(tmp, 'data')}`,
    `dataschema_secrets = ${SECRET}`,
    `admin_token = ${ADMIN}`,
    'log_level = info',
    '[plugin.http_server]',
    'host = 127.0.0.1',
    'port = 0',
    // uws, not auto: a uWS binary that does not load on this CPU stops the start instead of falling back.
    'transport = uws',
    '[store]',
    'sync = always',
    '[scripts]',
    'workers = 1',
    '',
  ].join('\n'),
);

let service; // the running child, killed on any exit
process.on('exit', () => {
  if (service && service.exitCode === null && service.signalCode === null) service.kill('SIGKILL');
  fs.rmSync(tmp, { recursive: true, force: true });
});

class StepError extends Error {}
function check(ok, what) {
  if (!ok) throw new StepError(what);
}

/** Starts `<arm node> dist/cli.js serve`; resolves with its base URL once it printed its address. */
function start() {
  const child = spawn(args.node, ['--max-semi-space-size=1', path.join(args.root, 'dist/cli.js'), 'serve', '--config', configFile], {
    cwd: args.root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  service = child;
  const lines = [];
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new StepError(`the service did not print its address within ${START_TIMEOUT_MS / 1000} s`)), START_TIMEOUT_MS);
    let buf = '';
    const onLine = (line) => {
      lines.push(line);
      if (lines.length > 100) lines.shift();
      const m = /listening on (https?:\/\/\S+)/.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    for (const stream of [child.stdout, child.stderr]) {
      stream.setEncoding('utf8');
      stream.on('data', (d) => {
        buf += d;
        let nl;
        while ((nl = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
    }
    child.once('error', (e) => reject(new StepError(`spawn ${args.node}: ${e.message}`)));
    void exited.then(({ code, signal }) => reject(new StepError(`the service exited (${code ?? signal}) before listening`)));
  });
  return { child, lines, exited, ready };
}

async function stop(svc) {
  svc.child.kill('SIGTERM');
  const timer = setTimeout(() => svc.child.kill('SIGKILL'), STOP_TIMEOUT_MS);
  const { code, signal } = await svc.exited;
  clearTimeout(timer);
  check(code === 0, `SIGTERM: the service exited with ${code ?? signal}, expected 0 within ${STOP_TIMEOUT_MS / 1000} s`);
}

async function call(base, urlPath, init = {}) {
  const headers = { Authorization: `Bearer ${init.token ?? ADMIN}` };
  if (init.secret) {
    delete headers.Authorization;
    headers['X-Api-Secret'] = SECRET;
  }
  let body;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['Content-Type'] = init.contentType ?? 'application/json';
  }
  const res = await fetch(base + urlPath, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  check(res.status === 200, `${urlPath.split('?')[0]}: HTTP ${res.status} ${text.slice(0, 300)}`);
  const parsed = JSON.parse(text);
  check(parsed.code === 200, `${urlPath.split('?')[0]}: code ${parsed.code} ${text.slice(0, 300)}`);
  return parsed.data;
}

/** The getting-started payload for push number n: t1..t3 average to n, the others name the push. */
function payload(n) {
  return JSON.stringify([
    { tag: 't1', value: n - 1 },
    { tag: 't2', value: n },
    { tag: 't3', value: n + 1 },
    { tag: 'resistivity', value: 1.5 },
    { tag: 'conductivity', value: n * 2 },
    { tag: 'dissolved_oxygen', value: 3 },
    { tag: 'ph_value', value: 7 },
  ]);
}

/** The native files the service process has mapped (qemu maps the guest's mmaps of a file as the host's). */
function mappedNatives(pid) {
  const maps = fs.readFileSync(`/proc/${pid}/maps`, 'utf8');
  return [...new Set(maps.split('\n').map((l) => l.split(/\s+/)[5] ?? '').filter((p) => p.endsWith('.node')))];
}

let svc;
try {
  say(`starting ${args.node} dist/cli.js serve (transport = uws)`);
  svc = start();
  const base = await svc.ready;
  say(`listening on ${base}`);
  // The `listening` log line (pino, after the address line) names the transport in use.
  let listening;
  for (let i = 0; i < 100 && listening === undefined; i++) {
    listening = svc.lines.map(parseJson).find((l) => l?.msg === 'listening');
    if (listening === undefined) await new Promise((r) => setTimeout(r, 100));
  }
  check(listening?.transport === 'uws', `the listening log line names transport ${listening?.transport}, expected uws`);

  const model = (await call(base, '/api/v1/schema/create', { body: { name: 'water', description: 'arm smoke' } })).uuid;
  for (const name of ATTRS) await call(base, '/api/v1/schema/properties/create', { body: { schemaId: model, name, type: 'FLOAT' } });
  await call(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' });
  say(`model ${model} with ${ATTRS.length} FLOAT attributes, published`);

  const input = await call(base, '/api/v1/inends/create', { body: { name: 'plc line 1', type: 'HTTP', description: 'arm smoke', config: {} } });
  check(typeof input.token === 'string' && input.token.length > 0, 'inends/create answered no push token');
  say(`HTTP input ${input.uuid}`);

  const actions = fs.readFileSync(path.join(args.root, 'fixtures/lua/rhilex-sample.lua'), 'utf8').replaceAll('SCHEMAZ848ZRDG', model);
  const dry = await call(base, '/api/v1/rules/dryRun', { body: { actions, payload: payload(21) } });
  check(dry.accepted === 1, `dryRun: accepted ${dry.accepted}, expected 1: ${JSON.stringify(dry)}`);
  check(JSON.stringify(dry).includes('"temp":21'), `dryRun: no record with temp 21: ${JSON.stringify(dry)}`);
  say('dry run of the sample rule (Lua in a worker): accepted 1, temp 21');

  const rule = (await call(base, '/api/v1/rules/create', { body: { name: 'water sample', description: 'arm smoke', fromSource: [input.uuid], actions, success: '', failed: '' } })).uuid;
  say(`rule ${rule}`);

  const push = (body, contentType) => call(base, `/api/v1/inends/push?uuid=${input.uuid}`, { token: input.token, body, contentType });
  const one = await push(payload(1));
  check(one.accepted === 1 && one.failed === 0, `push: ${JSON.stringify(one)}`);
  const many = await push(Array.from({ length: PUSHES }, (_, i) => payload(i + 2)).join('\n'), 'application/x-ndjson');
  check(many.accepted === PUSHES && many.failed === 0, `NDJSON push of ${PUSHES}: ${JSON.stringify(many)}`);
  const total = PUSHES + 1;
  say(`pushed 1 + ${PUSHES} (NDJSON) payloads`);

  const readBack = async (when) => {
    const page = await call(base, `/api/v1/datacenter/queryDataList?uuid=${model}&order=asc&size=1000`, { secret: true });
    check(page.total === total && page.records.length === total, `queryDataList ${when}: total ${page.total}, ${page.records.length} records, expected ${total}`);
    page.records.forEach((r, i) => {
      check(r.id === i + 1 && r.temp === i + 1 && r.conductivity === 2 * (i + 1) && r.resistivity === 1.5 && r.ph_value === 7,
        `queryDataList ${when}: record ${i + 1} is ${JSON.stringify(r)}`);
      check(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/.test(r.create_at), `queryDataList ${when}: create_at ${r.create_at}`);
    });
    const last = await call(base, `/api/v1/datacenter/queryLastData?uuid=${model}`, { secret: true });
    check(last.id === total && last.temp === total && last.dissolved_oxygen === 3, `queryLastData ${when}: ${JSON.stringify(last)}`);
    say(`${when}: queryDataList ${total} records in order, queryLastData id ${last.id}`);
  };
  await readBack('after the pushes');

  const natives = mappedNatives(svc.child.pid);
  const uws = natives.find((p) => path.basename(p) === `uws_linux_${UWS_ARCH}_115.node`);
  const msgpackr = natives.find((p) => p.includes('msgpackr-extract'));
  check(uws !== undefined, `uws_linux_${UWS_ARCH}_115.node is not mapped by the service; mapped: ${natives.join(', ') || 'none'}`);
  check(msgpackr !== undefined, `msgpackr's native extension is not mapped by the service; mapped: ${natives.join(', ') || 'none'}`);
  say(`native addons loaded: ${natives.map((p) => path.relative(args.root, p)).join(', ')}`);

  await stop(svc);
  say('SIGTERM: exit 0');

  svc = start();
  const again = await svc.ready;
  say(`restarted on ${again}`);
  await (async () => {
    const last = await call(again, `/api/v1/datacenter/queryLastData?uuid=${model}`, { secret: true });
    check(last.id === total && last.temp === total, `queryLastData after a restart: ${JSON.stringify(last)}`);
    const page = await call(again, `/api/v1/datacenter/queryDataList?uuid=${model}&size=5`, { secret: true });
    check(page.total === total && page.records[0].id === total, `queryDataList after a restart: ${JSON.stringify(page).slice(0, 300)}`);
  })();
  say(`after a restart: the same ${total} records`);
  await stop(svc);
  say('SIGTERM: exit 0');
  say('passed');
} catch (e) {
  console.error(`  [smoke ${args.arch}] FAILED: ${e instanceof StepError ? e.message : e?.stack ?? e}`);
  if (svc) console.error(`  the service's last lines:\n${svc.lines.map((l) => `    ${l}`).join('\n')}`);
  process.exitCode = 1;
} finally {
  // Its pipes would keep this process waiting.
  if (service && service.exitCode === null && service.signalCode === null) service.kill('SIGKILL');
}

function parseJson(line) {
  try {
    return JSON.parse(line);
  } catch {
    return undefined;
  }
}
