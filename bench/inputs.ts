/**
 * The network inputs beside the HTTP NDJSON push, in one run, through RHILEX's sample rule (each input's
 * variant decodes its `args` first): records/s (first message sent to last record stored) and the
 * service's CPU time per record (/proc, so other load does not count). Paths: HTTP NDJSON (8 pushers,
 * 1000 lines a push), the built-in broker at QoS 0 and at QoS 1 (10 clients, 100 in flight each), UDP
 * (paced bursts: lossy, refused datagrams reported), the GENERIC_MQTT client of a mosquitto, and mosquitto
 * alone (10 publishers QoS 1 x 100 in flight, one QoS 1 subscriber) as the ceiling for the same messages.
 * Usage: npm run bench:inputs [-- --records 50000 --sync interval --only ndjson,qos1 --threads]
 * `--only`: the rows to run, of ndjson, qos0, qos1, udp, client, mosquitto (default: all). `--threads`: the
 * note also splits the service's CPU per record by thread (main, busiest other = the Lua worker on 2 cores,
 * the rest), from /proc/<pid>/task.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import mqtt from 'mqtt';
import { repoRoot } from './report.js';
import { BENCH_ADMIN, readSampleRule, SAMPLE_ATTRIBUTES, sampleActions, samplePayload } from './sample-rule.js';
import { freePort, processCpuMs, stopChild, threadCpuMs, threadSplit } from './targets.js';

const { values: args } = parseArgs({
  options: { records: { type: 'string', default: '50000' }, sync: { type: 'string', default: 'interval' }, only: { type: 'string', default: 'ndjson,qos0,qos1,udp,client,mosquitto' }, threads: { type: 'boolean', default: false } },
});
const ONLY = new Set(args.only.split(',').map((s) => s.trim()));
const RECORDS = Number(args.records);
const SECRET = 'bench-secret';
const say = (m: string): void => void process.stderr.write(`[bench:inputs] ${m}\n`);

interface Row {
  path: string;
  records: number;
  recordsPerS: number;
  cpuUsPerRecord: number;
  note: string;
}

async function startService(dir: string): Promise<{ child: ChildProcess; base: string }> {
  const ini = join(dir, 'bench.ini');
  writeFileSync(
    ini,
    [
      '[main]', `data_dir = ${join(dir, 'data')}`, `dataschema_secrets = ${SECRET}`, `admin_token = ${BENCH_ADMIN}`, 'log_level = warn',
      '[plugin.http_server]', 'host = 127.0.0.1', 'port = 0', '[store]', `sync = ${args.sync}`, '',
    ].join('\n'),
  );
  const child = spawn(process.execPath, [join(repoRoot, 'dist', 'cli.js'), 'serve', '--config', ini], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (d: string) => {
      out += d;
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.once('exit', () => reject(new Error(`service exited: ${out}`)));
  });
  child.stdout!.resume();
  return { child, base };
}

async function api(base: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(base + path, { method, headers: { Authorization: `Bearer ${BENCH_ADMIN}`, 'Content-Type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const answer = (await res.json()) as { code: number; msg: string; data: any };
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${answer.msg}`);
  return answer.data;
}

/** The sample rule, its `json:J2T(args)` reading the payload out of the input's args first. */
function actionsFor(type: string, sample: string, model: string): string {
  const prelude: Record<string, string> = {
    HTTP: '',
    GENERIC_MQTT: '',
    GENERIC_MQTT_SERVER: 'local ev = json:J2T(args); if ev.action ~= "publish" then return true, args end;',
    UDP_SERVER: 'local text = string.char(table.unpack(hex:Hexs2Bytes(json:J2T(args).data)));',
  };
  const decode: Record<string, string> = {
    HTTP: 'json:J2T(args)',
    GENERIC_MQTT: 'json:base64J2T(json:J2T(args).payload)',
    GENERIC_MQTT_SERVER: 'json:J2T(ev.payload)',
    UDP_SERVER: 'json:J2T(text)',
  };
  return sampleActions(sample, model).replace('json:J2T(args)', decode[type]).replace('function(args)', `function(args)\n        ${prelude[type]}`);
}

async function pipeline(base: string, sample: string, type: string, name: string, config: Record<string, unknown>): Promise<{ model: string; inend: string; token?: string }> {
  const model = (await api(base, 'POST', '/api/v1/schema/create', { name, description: '' })).uuid;
  for (const attr of SAMPLE_ATTRIBUTES) await api(base, 'POST', '/api/v1/schema/properties/create', { schemaId: model, name: attr, type: 'FLOAT' });
  await api(base, 'POST', `/api/v1/schema/publish?uuid=${model}`);
  const input = await api(base, 'POST', '/api/v1/inends/create', { name, type, description: '', config });
  await api(base, 'POST', '/api/v1/rules/create', { name, description: '', fromSource: [input.uuid], actions: actionsFor(type, sample, model), success: '', failed: '' });
  return { model, inend: input.uuid, token: input.token };
}

async function storedCount(base: string, model: string): Promise<number> {
  const res = await fetch(`${base}/api/v1/datacenter/queryDataList?uuid=${model}&secrets=${SECRET}&size=1&current=1`);
  return ((await res.json()) as { data: { total: number } }).data.total;
}

/**
 * Runs `send`, then waits until `expected` records are stored or nothing moved for `stallMs` (UDP loses
 * datagrams: its wait ends at the stall, which is left out of its time); figures over that span.
 */
async function measure(path: string, pid: number, base: string, model: string, expected: number, send: () => Promise<string | void>, stallMs = 10_000): Promise<Row> {
  const cpu0 = processCpuMs(pid);
  const threads0 = threadCpuMs(pid);
  const t0 = performance.now();
  let note = (await send()) ?? '';
  let stored = await storedCount(base, model);
  let last = stored;
  let still = performance.now();
  while (stored < expected && performance.now() - still < stallMs) {
    await new Promise((r) => setTimeout(r, 20));
    stored = await storedCount(base, model);
    if (stored !== last) [last, still] = [stored, performance.now()];
  }
  const seconds = ((stored < expected ? still : performance.now()) - t0) / 1000;
  const cpuMs = processCpuMs(pid) - cpu0;
  if (args.threads) {
    const { main, busiest, rest } = threadSplit(threads0, threadCpuMs(pid), pid, Math.max(1, stored), 1);
    note += ` (µs/record: main ${Math.round(main)}, worker ${Math.round(busiest)}, rest ${Math.round(rest)})`;
  }
  const row = { path, records: stored, recordsPerS: Math.round(stored / seconds), cpuUsPerRecord: Math.round((cpuMs * 1000) / Math.max(1, stored)), note };
  say(`${path}: ${row.records} records, ${row.recordsPerS}/s, ${row.cpuUsPerRecord} µs CPU each ${note}`);
  return row;
}

async function publishAll(url: string, opts: mqtt.IClientOptions, topic: string, total: number, qos: 0 | 1, inFlight: number): Promise<void> {
  const clients = await Promise.all(Array.from({ length: 10 }, (_, c) => mqtt.connectAsync(url, { ...opts, clientId: `bench-${c}-${Math.random().toString(16).slice(2, 8)}`, reconnectPeriod: 0 })));
  let next = 0;
  await Promise.all(
    clients.flatMap((client) =>
      Array.from({ length: qos === 0 ? 1 : inFlight }, async () => {
        while (next < total) {
          const i = next++;
          if (qos === 1) await client.publishAsync(topic, samplePayload(i), { qos });
          else await new Promise<void>((resolve) => client.publish(topic, samplePayload(i), { qos }, () => resolve()));
        }
      }),
    ),
  );
  await Promise.all(clients.map((c) => c.endAsync()));
}

async function startMosquitto(dir: string): Promise<{ child: ChildProcess; port: number }> {
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, [`user ${userInfo().username}`, `listener ${port} 127.0.0.1`, 'allow_anonymous true', 'max_queued_messages 0', 'max_inflight_messages 100', 'log_type error', ''].join('\n'));
  const child = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
  for (let i = 0; i < 200; i++) {
    try {
      const c = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 500 });
      await c.endAsync();
      return { child, port };
    } catch {
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error('mosquitto did not start');
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'edc-bench-inputs-'));
  const sample = await readSampleRule();
  const { child, base } = await startService(dir);
  const pid = child.pid!;
  const mosq = await startMosquitto(dir);
  const rows: Row[] = [];
  try {
    // HTTP NDJSON: 8 pushers of 1000 lines.
    if (ONLY.has('ndjson')) {
      const http = await pipeline(base, sample, 'HTTP', 'via_http', {});
      rows.push(
        await measure('HTTP NDJSON (8 x 1000 lines)', pid, base, http.model, RECORDS, async () => {
          let next = 0;
          await Promise.all(
            Array.from({ length: 8 }, async () => {
              while (next < RECORDS) {
                const lines = [];
                for (let k = 0; k < 1000 && next < RECORDS; k++) lines.push(samplePayload(next++));
                const res = await fetch(`${base}/api/v1/inends/push?uuid=${http.inend}`, { method: 'POST', headers: { Authorization: `Bearer ${http.token}`, 'Content-Type': 'application/x-ndjson' }, body: lines.join('\n') });
                await res.arrayBuffer();
              }
            }),
          );
        }),
      );
    }
    if (ONLY.has('qos0')) {
      const brokerPort = await freePort();
      const broker = await pipeline(base, sample, 'GENERIC_MQTT_SERVER', 'via_broker', { host: '127.0.0.1', port: brokerPort, maxClients: 100 });
      const url = `mqtt://127.0.0.1:${brokerPort}`;
      await new Promise((r) => setTimeout(r, 300));
      rows.push(await measure('MQTT QoS 0, built-in broker (10 clients)', pid, base, broker.model, RECORDS, () => publishAll(url, { username: 'b', password: broker.token }, 'bench', RECORDS, 0, 1)));
    }
    if (ONLY.has('qos1')) {
      const broker1 = await pipeline(base, sample, 'GENERIC_MQTT_SERVER', 'via_broker_q1', { host: '127.0.0.1', port: await freePort(), maxClients: 100 });
      const cfg1 = (await api(base, 'GET', `/api/v1/inends/detail?uuid=${broker1.inend}`)).config;
      await new Promise((r) => setTimeout(r, 300));
      rows.push(await measure('MQTT QoS 1, built-in broker (10 clients x 100 in flight)', pid, base, broker1.model, RECORDS, () => publishAll(`mqtt://127.0.0.1:${cfg1.port}`, { username: 'b', password: broker1.token }, 'bench', RECORDS, 1, 100)));
    }
    // UDP: bursts of 200 datagrams, a turn of the event loop between; what the socket or the queue cannot take is lost.
    if (ONLY.has('udp')) {
      const udpPort = await freePort();
      const udp = await pipeline(base, sample, 'UDP_SERVER', 'via_udp', { host: '127.0.0.1', port: udpPort, maxDataLength: 1024 });
      await new Promise((r) => setTimeout(r, 300));
      rows.push(
        await measure('UDP (bursts of 200 datagrams)', pid, base, udp.model, RECORDS, async () => {
          const socket = dgram.createSocket('udp4');
          for (let i = 0; i < RECORDS; i++) {
            socket.send(samplePayload(i), udpPort, '127.0.0.1');
            if (i % 200 === 199) await new Promise((r) => setTimeout(r, 2));
          }
          await new Promise((r) => setTimeout(r, 200));
          socket.close();
          const stats = await api(base, 'GET', `/api/v1/inends/stats?uuid=${udp.inend}`);
          return `(${stats.messagesIn} of ${RECORDS} datagrams read, ${stats.refused} refused)`;
        }, 1000),
      );
    }
    // The client input of a mosquitto: mosquitto takes the messages, the input stores them one at a time.
    if (ONLY.has('client')) {
      const viaClient = await pipeline(base, sample, 'GENERIC_MQTT', 'via_client', { host: '127.0.0.1', port: mosq.port, clientId: 'bench-client', qos: 1, subTopics: ['client/#'] });
      await new Promise((r) => setTimeout(r, 500));
      const clientRecords = Math.min(RECORDS, 10_000);
      rows.push(await measure(`GENERIC_MQTT client of mosquitto, QoS 1 (${clientRecords} messages)`, pid, base, viaClient.model, clientRecords, () => publishAll(`mqtt://127.0.0.1:${mosq.port}`, {}, 'client/x', clientRecords, 1, 100)));
    }
    if (ONLY.has('mosquitto')) {
      // The ceiling: mosquitto alone, 10 publishers QoS 1 x 100 in flight to one QoS 1 subscriber.
      const sub = await mqtt.connectAsync(`mqtt://127.0.0.1:${mosq.port}`, { clientId: 'bench-sub', reconnectPeriod: 0 });
      await sub.subscribeAsync('ceiling/#', { qos: 1 });
      let received = 0;
      const all = new Promise<void>((resolve) => sub.on('message', () => ++received === RECORDS && resolve()));
      const cpu0 = processCpuMs(mosq.child.pid!);
      const t0 = performance.now();
      await publishAll(`mqtt://127.0.0.1:${mosq.port}`, {}, 'ceiling/x', RECORDS, 1, 100);
      await all;
      const seconds = (performance.now() - t0) / 1000;
      const row = { path: 'mosquitto alone, QoS 1 (10 x 100 in flight, 1 subscriber)', records: received, recordsPerS: Math.round(received / seconds), cpuUsPerRecord: Math.round(((processCpuMs(mosq.child.pid!) - cpu0) * 1000) / received), note: '(mosquitto CPU)' };
      say(`${row.path}: ${row.recordsPerS}/s, ${row.cpuUsPerRecord} µs CPU each`);
      rows.push(row);
      await sub.endAsync();
    }
  } finally {
    await stopChild(child);
    await stopChild(mosq.child);
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`\n| path (sync = ${args.sync}, ${RECORDS} records) | records stored | records/s | server CPU µs/record | note |\n|---|---|---|---|---|\n`);
  for (const r of rows) process.stdout.write(`| ${r.path} | ${r.records} | ${r.recordsPerS} | ${r.cpuUsPerRecord} | ${r.note} |\n`);
}

await main();
