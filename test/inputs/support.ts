/**
 * Helpers of the network input tests: free ports, a model with the sample's five FLOAT attributes, the
 * rules that decode each input's `args` as RHILEX's documentation does, payloads that carry a sequence
 * number, reads of what was stored, and a real mosquitto on a free port (started and stopped by tests, and
 * ended with the test process if that is killed: tied-spawn.ts).
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { PushResult } from '../../src/scripts/shared/types.js';
import { call, query } from '../support/client.js';
import { spawnTied } from '../support/tied-spawn.js';

export const ATTRS = ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value'];

export async function freePort(kind: 'tcp' | 'udp'): Promise<number> {
  if (kind === 'udp') {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const { port } = socket.address();
    await new Promise<void>((resolve) => socket.close(() => resolve()));
    return port;
  }
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function must(answer: { status: number; text: string; body: any }, what: string): any {
  if (answer.status !== 200) throw new Error(`${what}: HTTP ${answer.status} ${answer.text}`);
  return answer.body.data;
}

export async function createModel(base: string, name: string): Promise<string> {
  const model = must(await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: '' } }), 'schema/create').uuid as string;
  for (const attr of ATTRS) must(await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: model, name: attr, type: 'FLOAT' } }), attr);
  must(await call(base, `/api/v1/schema/publish?uuid=${model}`, { method: 'POST' }), 'schema/publish');
  return model;
}

/** The sample rule's body after `dataT` holds the Modbus-shaped array: one record with temp = t1. */
const SAVE = (model: string): string => `
        local s = {};
        for _, row in ipairs(dataT) do s[row.tag] = row.value; end;
        local err = rds:Save("${model}", { temp = s.t1, resistivity = s.r, conductivity = s.c, dissolved_oxygen = 0, ph_value = 7 });
        if (err ~= nil) then Throw(err); end;
        return true, args;`;

/** Lua `actions` decoding each input type's args as RHILEX's docs show. */
export function ruleFor(type: 'GENERIC_MQTT' | 'GENERIC_MQTT_SERVER' | 'UDP_SERVER', model: string): string {
  const decode = {
    // RHILEX's generic_mqtt_source.md: the payload is base64.
    GENERIC_MQTT: `local body = json:J2T(args); local dataT, err = json:base64J2T(body.payload); if err ~= nil then Throw(err); return true, args; end;`,
    // RHILEX's broker: connect/disconnect events carry no payload; the payload is the message's text.
    GENERIC_MQTT_SERVER: `local body = json:J2T(args); if body.action ~= "publish" then return true, args; end; local dataT, err = json:J2T(body.payload); if err ~= nil then Throw(err); return true, args; end;`,
    // RHILEX's UDP input: data is the datagram in hex, decoded with RHILEX's hex library.
    UDP_SERVER: `local body = json:J2T(args); local bytes = hex:Hexs2Bytes(body.data); local dataT, err = json:J2T(string.char(table.unpack(bytes))); if err ~= nil then Throw(err); return true, args; end;`,
  }[type];
  return `Actions = {\n    function(args)\n        ${decode}${SAVE(model)}\n    end\n}\n`;
}

export async function createInput(base: string, body: Record<string, unknown>): Promise<{ uuid: string; token?: string }> {
  return must(await call(base, '/api/v1/inends/create', { method: 'POST', body: { description: '', ...body } }), 'inends/create');
}

export async function createRule(base: string, inend: string, actions: string): Promise<string> {
  return must(await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: `rule-${inend.slice(-6)}`, description: '', fromSource: [inend], actions, success: '', failed: '' } }), 'rules/create').uuid;
}

/**
 * A model, and an HTTP input with the rule of a network input `type` storing into it: a network input
 * built in a test hands its pushes here (`push`: NDJSON lines, the engine's answer), so they meet the same
 * rule, engine and store as that input's would.
 */
export async function httpStandIn(
  base: string,
  name: string,
  type: 'GENERIC_MQTT' | 'GENERIC_MQTT_SERVER' | 'UDP_SERVER',
): Promise<{ model: string; push(payloads: string[]): Promise<{ status: number; msg: string; data: PushResult }> }> {
  const model = await createModel(base, name);
  const input = await createInput(base, { name, type: 'HTTP', config: {} });
  await createRule(base, input.uuid, ruleFor(type, model));
  const headers = { Authorization: `Bearer ${input.token!}`, 'Content-Type': 'application/x-ndjson' };
  return {
    model,
    async push(payloads) {
      const res = await fetch(`${base}/api/v1/inends/push?uuid=${input.uuid}`, { method: 'POST', headers, body: payloads.join('\n') });
      const answer = (await res.json()) as { msg: string; data: PushResult };
      return { status: res.status, ...answer };
    },
  };
}

/** A message in the sample's Modbus shape; the stored `temp` is `seq`, `resistivity` the sender. */
export function reading(seq: number, sender = 0): string {
  return JSON.stringify([{ tag: 't1', value: seq }, { tag: 'r', value: sender }, { tag: 'c', value: seq }]);
}

export async function storedTemps(base: string, model: string): Promise<number[]> {
  const temps: number[] = [];
  for (let current = 1; ; current++) {
    const data = must(await query(base, `/api/v1/datacenter/queryDataList?uuid=${model}&order=asc&size=1000&current=${current}`), 'queryDataList');
    for (const r of data.records) temps.push(Number(r.temp));
    if (data.records.length < 1000) return temps;
  }
}

export async function inputStats(base: string, inend: string): Promise<any> {
  return must(await call(base, `/api/v1/inends/stats?uuid=${inend}`), 'inends/stats');
}

/** Polls until `check` holds (a ceiling for a busy machine, not a claim). */
export async function waitFor<T>(what: string, read: () => Promise<T>, check: (v: T) => boolean, ceilingMs = 60_000): Promise<T> {
  const until = Date.now() + ceilingMs;
  for (;;) {
    const value = await read();
    if (check(value)) return value;
    if (Date.now() > until) throw new Error(`${what}: not reached within ${ceilingMs} ms, last ${JSON.stringify(value).slice(0, 500)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Mosquitto {
  port: number;
  stop(): Promise<void>;
  /** Stops and starts it again on the same port (its persistence file keeps sessions and queued messages). */
  restart(): Promise<void>;
}

/**
 * A real mosquitto (Debian package) on a free loopback port, with a temp config: anonymous unless `users`
 * (user name -> password) is given, persistence on (sessions and queued QoS 1 messages survive its
 * restart), no message queue limit a test reaches.
 */
export async function startMosquitto(options: { users?: Record<string, string> } = {}): Promise<Mosquitto> {
  const dir = mkdtempSync(join(tmpdir(), 'edc-mosquitto-'));
  const port = await freePort('tcp');
  const conf = join(dir, 'mosquitto.conf');
  const login = ['allow_anonymous true'];
  if (options.users !== undefined) {
    const passwords = join(dir, 'passwords');
    writeFileSync(passwords, '');
    for (const [user, password] of Object.entries(options.users)) execFileSync('mosquitto_passwd', ['-b', passwords, user, password]);
    login.splice(0, 1, 'allow_anonymous false', `password_file ${passwords}`);
  }
  writeFileSync(
    conf,
    // `user`: run as root, mosquitto drops to the user `mosquitto`, which cannot write the persistence file in our temp dir.
    [`user ${userInfo().username}`, `listener ${port} 127.0.0.1`, ...login, 'persistence true', `persistence_location ${dir}/`, 'max_queued_messages 0', 'max_inflight_messages 100', 'log_type error', ''].join('\n'),
  );
  let child: ChildProcess | undefined;
  const launch = async (): Promise<void> => {
    child = spawnTied('mosquitto', ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (d) => (stderr += d));
    const until = Date.now() + 20_000;
    for (;;) {
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (ok) return;
      if (child.exitCode !== null || Date.now() > until) throw new Error(`mosquitto did not start on ${port}: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const halt = async (): Promise<void> => {
    const c = child;
    child = undefined;
    if (c === undefined || c.exitCode !== null) return;
    const exited = new Promise((resolve) => c.once('exit', resolve));
    c.kill('SIGTERM');
    await exited;
  };
  await launch();
  return {
    port,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
    async restart() {
      await halt();
      await launch();
    },
  };
}

/** An input's counters from `inends/stats` that must add up after each generated message. */
export interface InputCounters {
  in: number;
  stored: number;
  refused: number;
  failed: number;
  redelivered: number;
  queued: number;
}

export function inputCounters(s: any): InputCounters {
  return { in: s.messagesIn, stored: s.stored, refused: s.refused, failed: s.failed, redelivered: s.redelivered, queued: s.queued };
}

/** The reads a generated case must leave answering 200 (never 500): both models' latest and a page, and each input's stats. */
export async function expectReadsAnswer(base: string, sampleModel: string, rawModel: string, inends: string[]): Promise<void> {
  for (const path of [
    `/api/v1/datacenter/queryLastData?uuid=${sampleModel}`,
    `/api/v1/datacenter/queryLastData?uuid=${rawModel}`,
    `/api/v1/datacenter/queryDataList?uuid=${rawModel}&size=5`,
    `/api/v1/datacenter/queryDataList?uuid=${sampleModel}&size=5&order=asc`,
  ]) {
    const a = await query(base, path);
    expect(a.status, `${path}: ${a.text.slice(0, 300)}`).toBe(200);
  }
  for (const uuid of inends) {
    const a = await call(base, `/api/v1/inends/stats?uuid=${uuid}`);
    expect(a.status, a.text.slice(0, 300)).toBe(200);
  }
}

/** The pass-through rule of the payload-domain tests: the whole `args` in `args`, its length in `bytes`. */
export function passThroughRule(model: string): string {
  return `Actions = {\n    function(args)\n        local err = rds:Save("${model}", { args = args, bytes = #args });\n        if (err ~= nil) then Throw(err); end;\n        return true, args;\n    end\n}\n`;
}

/** A published model of the two attributes passThroughRule stores. */
export async function createRawModel(base: string, name: string): Promise<string> {
  const uuid = (await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: '' } })).body.data.uuid as string;
  for (const [attr, type] of [
    ['args', 'STRING'],
    ['bytes', 'INTEGER'],
  ]) {
    expect((await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: uuid, name: attr, type } })).status).toBe(200);
  }
  expect((await call(base, `/api/v1/schema/publish?uuid=${uuid}`, { method: 'POST' })).status).toBe(200);
  return uuid;
}
