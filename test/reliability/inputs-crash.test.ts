/**
 * kill -9 of the service (dist/cli.js serve, `sync = always`) while 10 clients publish QoS 1, 20 rounds:
 * - through the built-in broker (GENERIC_MQTT_SERVER): after the restart every message that got a PUBACK
 *   is stored (at least once), read at once: the PUBACK came after its fdatasync;
 * - through a real mosquitto to the GENERIC_MQTT input (persistent session): every message mosquitto
 *   acknowledged, including those published while the service was down, is stored after the restart.
 * Messages that got no PUBACK may or may not be stored; none is stored that was never sent.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mqtt from 'mqtt';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, reading, ruleFor, startMosquitto, type Mosquitto } from '../inputs/support.js';
import { ATTRS, call, prng, readAll, sleep, startService, writeConfig, type ServiceChild } from './support/service.mjs';

const ROUNDS = 20;
const CLIENTS = 10;
/** QoS 1 messages each client of the built-in broker keeps in flight. */
const WINDOW = 20;

function must(answer: { status: number; text: string; body: any }, what: string): any {
  if (answer.status !== 200) throw new Error(`${what}: HTTP ${answer.status} ${answer.text}`);
  return answer.body.data;
}

async function model(base: string, name: string): Promise<string> {
  const uuid = must(await call(base, '/api/v1/schema/create', { method: 'POST', body: { name, description: '' } }), 'schema/create').uuid as string;
  for (const attr of ATTRS) must(await call(base, '/api/v1/schema/properties/create', { method: 'POST', body: { schemaId: uuid, name: attr, type: 'FLOAT' } }), attr);
  must(await call(base, `/api/v1/schema/publish?uuid=${uuid}`, { method: 'POST' }), 'publish');
  return uuid;
}

async function input(base: string, body: Record<string, unknown>, modelUuid: string, type: 'GENERIC_MQTT' | 'GENERIC_MQTT_SERVER'): Promise<{ uuid: string; token?: string }> {
  const created = must(await call(base, '/api/v1/inends/create', { method: 'POST', body: { description: '', type, ...body } }), 'inends/create');
  must(
    await call(base, '/api/v1/rules/create', { method: 'POST', body: { name: `rule-${type}`, description: '', fromSource: [created.uuid], actions: ruleFor(type, modelUuid), success: '', failed: '' } }),
    'rules/create',
  );
  return created;
}

/**
 * Publishers: each keeps `window` QoS 1 messages in flight with unique sequence numbers, `pauseMs` between
 * two of a lane; `acked` gets each PUBACKed one.
 */
function publishers(url: string, opts: mqtt.IClientOptions, next: () => number, acked: Set<number>, sender: number, window: number, pauseMs: number) {
  let stopped = false;
  const clients: mqtt.MqttClient[] = [];
  const loops = Array.from({ length: CLIENTS }, async (_, c) => {
    let client: mqtt.MqttClient;
    try {
      client = await mqtt.connectAsync(url, { ...opts, clientId: `pub-${sender}-${c}-${Math.random().toString(16).slice(2, 8)}`, reconnectPeriod: 0, connectTimeout: 10_000 });
    } catch {
      return;
    }
    clients.push(client);
    const lane = async (): Promise<void> => {
      while (!stopped && client.connected) {
        const seq = next();
        try {
          await client.publishAsync('plant/line', reading(seq, sender), { qos: 1 });
          acked.add(seq);
        } catch {
          return;
        }
        if (pauseMs > 0) await sleep(pauseMs);
      }
    };
    await Promise.race([Promise.all(Array.from({ length: window }, lane)), new Promise<void>((r) => client.once('close', () => r()))]);
  });
  return {
    async stop(): Promise<void> {
      stopped = true;
      for (const c of clients) c.end(true);
      await Promise.race([Promise.all(loops), sleep(5000)]);
    },
  };
}

async function storedSeqs(base: string, modelUuid: string): Promise<Set<number>> {
  const { records } = await readAll(base, modelUuid);
  return new Set(records.map((r) => Number(r.temp)));
}

let svc: ServiceChild | undefined;
let mosquitto: Mosquitto | undefined;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-inputs-crash-'));

afterAll(async () => {
  await svc?.kill('SIGKILL');
  await mosquitto?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('kill -9 while 10 clients publish QoS 1', () => {
  it(`every PUBACKed message is stored after the restart, ${ROUNDS} rounds, built-in broker and client of mosquitto`, async () => {
    const seed = Date.now() % 1e9;
    const rand = prng(seed);
    mosquitto = await startMosquitto();
    const { file } = writeConfig(dir, { store: { sync: 'always' } });
    svc = await startService(file);
    const brokerPort = await freePort('tcp');
    const modelB = await model(svc.base, 'via_broker');
    const modelC = await model(svc.base, 'via_mosquitto');
    const broker = await input(svc.base, { name: 'broker', config: { host: '127.0.0.1', port: brokerPort, anonymous: false } }, modelB, 'GENERIC_MQTT_SERVER');
    await input(svc.base, { name: 'client', config: { host: '127.0.0.1', port: mosquitto.port, clientId: 'edc-crash-test', qos: 1, subTopics: ['plant/#'] } }, modelC, 'GENERIC_MQTT');
    let seq = 0;
    const next = (): number => ++seq;
    const ackedB = new Set<number>();
    const ackedC = new Set<number>();
    const sent = (): number => seq;
    let killedWithUnacked = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const viaBroker = publishers(`mqtt://127.0.0.1:${brokerPort}`, { username: 'plc', password: broker.token }, next, ackedB, 1, WINDOW, 0);
      // Paced: the client input stores one message at a time (one fdatasync each), far below what mosquitto takes.
      const viaMosquitto = publishers(`mqtt://127.0.0.1:${mosquitto.port}`, {}, next, ackedC, 2, 1, 100);
      // Under load: wait for this round's first PUBACK through our broker, then a random moment.
      const before = ackedB.size;
      for (let i = 0; i < 600 && ackedB.size === before; i++) await sleep(50);
      expect(ackedB.size, `round ${round} (seed ${seed}): a PUBACK from the built-in broker`).toBeGreaterThan(before);
      await sleep(Math.floor(rand() * 1000));
      await svc.kill('SIGKILL');
      await viaBroker.stop();
      // mosquitto takes messages for us while the service is down.
      const downAcked = ackedC.size;
      await sleep(200 + Math.floor(rand() * 500));
      svc = await startService(file);
      await viaMosquitto.stop();
      const publishedWhileDown = ackedC.size - downAcked;
      // Built-in broker: stored before the PUBACK, so readable as soon as the service is back.
      const storedB = await storedSeqs(svc.base, modelB);
      const lostB = [...ackedB].filter((s) => !storedB.has(s));
      expect(lostB, `round ${round} (seed ${seed}): PUBACKed through the broker but not stored`).toEqual([]);
      killedWithUnacked += [...storedB].filter((s) => !ackedB.has(s)).length;
      // Client of mosquitto: the broker redelivers the session's messages; wait for all of them (a ceiling, not a claim).
      let storedC = await storedSeqs(svc.base, modelC);
      for (let i = 0; i < 1200 && [...ackedC].some((s) => !storedC.has(s)); i++) {
        await sleep(100);
        storedC = await storedSeqs(svc.base, modelC);
      }
      const lostC = [...ackedC].filter((s) => !storedC.has(s));
      expect(lostC.slice(0, 20), `round ${round} (seed ${seed}): acknowledged by mosquitto (${publishedWhileDown} while down) but not stored`).toEqual([]);
      // Nothing stored that was never sent.
      for (const s of [...storedB, ...storedC]) expect(s).toBeLessThanOrEqual(sent());
    }
    expect(ackedB.size).toBeGreaterThan(0);
    expect(ackedC.size).toBeGreaterThan(0);
    process.stderr.write(`inputs-crash: ${ROUNDS} rounds, ${ackedB.size} PUBACKed via the broker, ${ackedC.size} via mosquitto, ${killedWithUnacked} stored without PUBACK (seed ${seed})\n`);
  }, 900_000);
});
