// Shared by the whole-service reliability harnesses (crash, disk full, shutdown) and their vitest
// wrappers: a temp ini config, the real CLI (`dist/cli.js serve`) as a child process, the management
// calls that build the pipeline (model + attributes + publish, an HTTP input, RHILEX's sample rule),
// traceable NDJSON pushes, and the checks that every acknowledged push is stored.
// Plain JS so `node test/reliability/service-crash.mjs` runs without a compile step; types in service.d.mts.
// Needs the compiled service: `npx tsc -p tsconfig.json` (npm test does).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, '../../..');
export const cliPath = path.join(repoRoot, 'dist', 'cli.js');

export const SECRET = 'reliability-secret';
export const ADMIN = 'reliability-admin-token-0123456789';
export const ATTRS = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];

/** Writes `<dir>/service.ini` with the data dir, credentials, a loopback port 0 and `[store]`/`[scripts]` keys. */
export function writeConfig(dir, opts = {}) {
  const file = path.join(dir, 'service.ini');
  const dataDir = opts.dataDir ?? path.join(dir, 'data');
  const store = { sync: 'always', ...(opts.store ?? {}) };
  const scripts = { workers: 1, ...(opts.scripts ?? {}) };
  const lines = [
    '[main]',
    `data_dir = ${dataDir}`,
    `dataschema_secrets = ${SECRET}`,
    `admin_token = ${ADMIN}`,
    `log_level = ${opts.logLevel ?? 'warn'}`,
    '[plugin.http_server]',
    'host = 127.0.0.1',
    'port = 0',
    '[store]',
    ...Object.entries(store).map(([k, v]) => `${k} = ${v}`),
    '[scripts]',
    ...Object.entries(scripts).map(([k, v]) => `${k} = ${v}`),
    '',
  ];
  fs.writeFileSync(file, lines.join('\n'));
  return { file, dataDir };
}

/** writeConfig in a new directory `<parent>/<name>`. */
export function configIn(parent, name, opts = {}) {
  const dir = path.join(parent, name);
  fs.mkdirSync(dir, { recursive: true });
  return { dir, ...writeConfig(dir, opts) };
}

/**
 * Starts `node dist/cli.js serve --config FILE` (under `opts.wrap` when given) and resolves once it printed its address.
 * `log` keeps the child's last output lines (stdout pino JSON and stderr) for failure messages.
 */
export function startService(configFile, opts = {}) {
  if (!fs.existsSync(cliPath)) throw new Error(`${cliPath} missing: run \`npx tsc -p tsconfig.json\` (npm test does)`);
  // `wrap`: a command the service runs under (e.g. fiu-run -x ...), which must exec it in place.
  // `nodeArgs`: node's own flags (--trace-opt, --import a hook), before the CLI.
  const argv = [...(opts.wrap ?? []), process.execPath, ...(opts.nodeArgs ?? []), cliPath, 'serve', '--config', configFile];
  // prlimit execs the service, so the child's pid and signals are the service's own.
  if (opts.fdLimit !== undefined) argv.unshift('prlimit', `--nofile=${opts.fdLimit}:${opts.fdLimit}`);
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...(opts.env ?? {}) },
  });
  const log = [];
  const keep = (line) => {
    log.push(line);
    if (log.length > 200) log.shift();
  };
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    let ready = false;
    // A ceiling, not a claim: a busy machine may take long to start the service (and recover its store).
    const startTimeoutMs = opts.startTimeoutMs ?? 120_000;
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`service did not start within ${startTimeoutMs} ms:\n${log.join('\n')}`));
    }, startTimeoutMs);
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      let nl;
      while ((nl = out.indexOf('\n')) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        keep(line);
        opts.onLine?.(line);
        const m = /listening on (https?:\/\/\S+)/.exec(line);
        if (m && !ready) {
          ready = true;
          clearTimeout(timer);
          resolve({
            child,
            base: m[1],
            log,
            exited,
            kill: (signal = 'SIGKILL') => {
              child.kill(signal);
              return exited;
            },
          });
        }
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
      let nl;
      while ((nl = err.indexOf('\n')) >= 0) {
        keep(`stderr: ${err.slice(0, nl)}`);
        err = err.slice(nl + 1);
      }
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    void exited.then(({ code, signal }) => {
      if (!ready) {
        clearTimeout(timer);
        reject(new Error(`service exited (${code ?? signal}) before listening:\n${log.join('\n')}`));
      }
    });
  });
}

/** Runs `serve` expecting it to fail (killed after 60 s otherwise); its exit code, stderr and run time. */
export function serveExpectingExit(configFile) {
  const t0 = Date.now();
  const child = spawn(process.execPath, [cliPath, 'serve', '--config', configFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d.toString()));
  // A ceiling: a start that should fail exits at once, a busy machine only makes that take longer.
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - t0 });
    }),
  );
}

/** One HTTP call; JSON body parsed when possible. Network errors reject (the caller decides). */
export async function call(base, urlPath, init = {}) {
  const headers = { ...(init.headers ?? {}) };
  if (init.token !== null) headers.Authorization = `Bearer ${init.token ?? ADMIN}`;
  let body;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['Content-Type'] ??= 'application/json';
  }
  const res = await fetch(base + urlPath, { method: init.method ?? 'GET', headers, body, signal: init.signal });
  const text = await res.text();
  let parsed;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}

function must(answer, what) {
  if (answer.status !== 200) throw new Error(`${what}: HTTP ${answer.status} ${answer.text}`);
  return answer.body.data;
}

/** Model with the sample's five FLOAT attributes, published; an HTTP input; RHILEX's sample rule storing into the model. */
export async function setupPipeline(base, name = 'water') {
  const model = must(await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: 'reliability' } }), 'schema/create').uuid;
  for (const name of ATTRS) {
    must(await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, name, type: 'FLOAT' } }), `properties/create ${name}`);
  }
  must(await call(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' }), 'schema/publish');
  const input = must(await call(base, '/api/v1/inends/create', { method: 'POST', body: { name: `plc-${name}`, type: 'HTTP', description: '' } }), 'inends/create');
  const actions = fs.readFileSync(path.join(repoRoot, 'fixtures/lua/rhilex-sample.lua'), 'utf8').replaceAll('SCHEMAZ848ZRDG', model);
  const rule = must(
    await call(base, '/api/v1/rules/create', {
      method: 'POST',
      body: { name: `sample-${name}`, description: '', fromSource: [input.uuid], actions, success: '', failed: '' },
    }),
    'rules/create',
  ).uuid;
  return { model, inend: input.uuid, token: input.token, rule };
}

/**
 * One payload in the sample's Modbus shape. t1 = t2 = t3 = seq, so the stored `temp` is seq; the
 * other attributes carry conductivity = seq (a second copy), resistivity = push number,
 * dissolved_oxygen = index in the push, ph_value = round: every stored record names its push.
 */
export function payload(seq, pushNo, index, round) {
  return JSON.stringify([
    { tag: 't1', value: seq },
    { tag: 't2', value: seq },
    { tag: 't3', value: seq },
    { tag: 'resistivity', value: pushNo },
    { tag: 'conductivity', value: seq },
    { tag: 'dissolved_oxygen', value: index },
    { tag: 'ph_value', value: round },
  ]);
}

/** POSTs NDJSON; resolves to the answer, or `{status: 0, error}` when the connection failed. */
export async function pushNdjson(base, pipeline, lines, signal) {
  try {
    return await call(base, `/api/v1/inends/push?uuid=${pipeline.inend}`, {
      method: 'POST',
      token: pipeline.token,
      body: `${lines.join('\n')}\n`,
      headers: { 'Content-Type': 'application/x-ndjson' },
      signal,
    });
  } catch (err) {
    return { status: 0, error: String(err?.cause?.code ?? err?.message ?? err), text: '' };
  }
}

/**
 * Every record of the model, via queryDataList asc pages of 1000. `total` is the last page's; `settled`
 * says every page reported that same total: pages are separate reads, so one that retention (or a write)
 * moved the records under is not a snapshot of the model (see readSettled).
 */
export async function readAll(base, model) {
  const records = [];
  let total = 0;
  let firstTotal;
  for (let current = 1; ; current++) {
    const data = must(
      await call(base, `/api/v1/datacenter/queryDataList?uuid=${model}&secrets=${SECRET}&order=asc&size=1000&current=${current}`, { token: null }),
      'queryDataList',
    );
    total = data.total;
    firstTotal ??= total;
    records.push(...data.records);
    if (data.records.length < 1000) break;
  }
  return { records, total, settled: firstTotal === total };
}

/**
 * readAll again until its pages agree on the total (nothing moved between them), at most `tries` times:
 * with writers stopped only retention still moves the records, and it stops once under its limits.
 */
export async function readSettled(base, model, tries = 20) {
  let read = await readAll(base, model);
  for (let i = 1; !read.settled && i < tries; i++) read = await readAll(base, model);
  return read;
}

export async function lastData(base, model) {
  return must(await call(base, `/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${SECRET}`, { token: null }), 'queryLastData');
}

/**
 * Checks the stored records against the pushes. `pushes`: Map pushNo -> {seqs: number[], acked: boolean}.
 * Returns a list of problems (empty = all good) and counts.
 */
export function checkStore({ records, total }, last, pushes, lostRanges = []) {
  const problems = [];
  const problem = (msg) => {
    if (problems.length < 20) problems.push(msg);
  };
  if (total !== records.length) problem(`total ${total} but ${records.length} records read`);
  const seen = new Map(); // seq -> id
  const byPush = new Map(); // pushNo -> [{id, index}]
  records.forEach((r, i) => {
    const expected = i === 0 ? 1 : records[i - 1].id + 1;
    if (r.id < expected) problem(`record #${i + 1} has id ${r.id} after id ${expected - 1} (disorder)`);
    else if (r.id > expected && !coveredBy(lostRanges, expected, r.id - 1)) problem(`record #${i + 1} has id ${r.id}: ids ${expected}..${r.id - 1} are missing and not reported lost (gap)`);
    if (r.temp !== r.conductivity) problem(`id ${r.id}: temp ${r.temp} != conductivity ${r.conductivity} (mixed record)`);
    const push = pushes.get(r.resistivity);
    if (!push) problem(`id ${r.id}: push ${r.resistivity} was never sent`);
    else if (push.seqs[r.dissolved_oxygen] !== r.temp) problem(`id ${r.id}: seq ${r.temp} is not line ${r.dissolved_oxygen} of push ${r.resistivity}`);
    if (seen.has(r.temp)) problem(`seq ${r.temp} stored twice (ids ${seen.get(r.temp)} and ${r.id})`);
    seen.set(r.temp, r.id);
    const list = byPush.get(r.resistivity) ?? [];
    list.push({ id: r.id, index: r.dissolved_oxygen });
    byPush.set(r.resistivity, list);
  });
  let ackedPushes = 0;
  let ackedRecords = 0;
  let unackedStored = 0;
  for (const [pushNo, push] of pushes) {
    const stored = byPush.get(pushNo) ?? [];
    if (!push.acked) {
      // Not acknowledged: any prefix of its lines may be there (none, some, all), in line order.
      unackedStored += stored.length;
      stored.forEach((s, k) => {
        if (s.index !== k || s.id !== stored[0].id + k) problem(`unacknowledged push ${pushNo}: line ${s.index} at id ${s.id} is not a prefix in line order`);
      });
      continue;
    }
    ackedPushes++;
    ackedRecords += push.seqs.length;
    if (stored.length !== push.seqs.length) {
      problem(`push ${pushNo} answered 200 for ${push.seqs.length} records, ${stored.length} stored`);
      continue;
    }
    // One push = consecutive ids in line order (its lines are queued together and applied in order).
    stored.forEach((s, k) => {
      if (s.index !== k || s.id !== stored[0].id + k) problem(`push ${pushNo}: line ${s.index} at id ${s.id} breaks line order`);
    });
  }
  const newest = records[records.length - 1];
  if (newest === undefined) {
    if (last && Object.keys(last).length > 0) problem(`queryLastData ${JSON.stringify(last)} on an empty model`);
  } else if (JSON.stringify(last) !== JSON.stringify({ ...newest, create_at: newest.create_at.replace('T', ' ').replace('Z', '') })) {
    problem(`queryLastData ${JSON.stringify(last)} != highest record ${JSON.stringify(newest)}`);
  }
  return { problems, records: records.length, ackedPushes, ackedRecords, unackedStored };
}

/** Whether the reported lost id ranges (`schema/detail`'s `recovery.lostRanges`) hold every id in from..to. */
function coveredBy(ranges, from, to) {
  let next = from;
  for (const r of [...ranges].sort((a, b) => a.fromId - b.fromId)) {
    if (r.fromId <= next && r.toId >= next) next = r.toId + 1;
  }
  return next > to;
}

/**
 * The id ranges recovery reported lost (unacknowledged findings): ids a reader may have seen before a
 * kill whose records never reached the file; they are skipped, never handed out again.
 */
export async function lostRanges(base, model) {
  const detail = must(await call(base, `/api/v1/schema/detail?uuid=${model}`), 'schema/detail');
  return detail.recovery?.lostRanges ?? [];
}

/** A tiny seeded PRNG (LCG) so a failing run can be replayed with --seed. */
export function prng(seed) {
  let s = seed >>> 0 || 1;
  return () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32;
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Push state shared across rounds: the next sequence number and push number, every push sent
 * (`pushes`: pushNo -> {seqs, acked}), and the answers seen.
 */
export function newPushState() {
  return { nextSeq: 1, nextPush: 1, pushes: new Map(), answers: { ok: 0, network: 0, other: 0 }, anomalies: [] };
}

/**
 * `concurrency` loops each pushing NDJSON batches of 1..maxLines payloads back to back until `stop()`
 * or until the connection fails (the service died), or `maxPushes` in all. Pushes answered 200 with
 * every line accepted are marked acked; a 200 with failed lines is an anomaly.
 */
export function startPushers(base, pipeline, state, opts = {}) {
  const { concurrency = 4, maxLines = 50, round = 0, rand = Math.random, maxPushes = 1e6 } = opts;
  let stopped = false;
  let sent = 0;
  const loop = async () => {
    while (!stopped && sent < maxPushes) {
      sent++;
      const pushNo = state.nextPush++;
      const n = 1 + Math.floor(rand() * maxLines);
      const seqs = [];
      for (let i = 0; i < n; i++) seqs.push(state.nextSeq++);
      const push = { seqs, acked: false };
      state.pushes.set(pushNo, push);
      const answer = await pushNdjson(base, pipeline, seqs.map((seq, i) => payload(seq, pushNo, i, round)));
      if (answer.status === 200) {
        const d = answer.body?.data;
        if (d?.accepted === n && d?.failed === 0) {
          push.acked = true;
          state.answers.ok++;
        } else {
          state.answers.other++;
          state.anomalies.push(`push ${pushNo}: 200 but ${answer.text.slice(0, 300)}`);
        }
      } else if (answer.status === 0) {
        state.answers.network++;
        push.error = answer.error;
        return; // the service is gone
      } else {
        state.answers.other++;
        push.error = `HTTP ${answer.status}`;
        state.anomalies.push(`push ${pushNo}: HTTP ${answer.status} ${answer.text.slice(0, 300)}`);
        if (opts.onStatus?.(answer) === 'stop') return;
      }
    }
  };
  const loops = Array.from({ length: concurrency }, loop);
  const all = Promise.all(loops);
  return {
    done: all,
    stop() {
      stopped = true;
      return all;
    },
  };
}
