/**
 * mqtts: a GENERIC_MQTT_SERVER with `tls: true` serves the HTTP server's certificate and key (the files
 * checked at start as for HTTPS): a client that trusts the certificate publishes and gets its PUBACK, a
 * plain MQTT client gets nowhere; a GENERIC_MQTT input with `tls: true` checks the broker's certificate
 * and shows the refusal of a self-signed one as its error; `tls: true` without the HTTP files is an error.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTlsFiles, type TlsFiles } from '../security/tls-files.js';
import { ADMIN, startService, type TestService } from '../support/service.js';
import { freePort, waitFor } from './support.js';

let dir: string;
let files: TlsFiles;
let svc: TestService;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'edc-mqtts-'));
  files = makeTlsFiles(dir);
  svc = await startService({ ini: { 'plugin.http_server': [`tls_cert_file = ${files.cert}`, `tls_key_file = ${files.key}`] } });
});

afterAll(async () => {
  await svc?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The admin API over HTTPS, the test certificate trusted. */
function api(method: string, path: string, body?: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      { host: '127.0.0.1', port: svc.port, path, method, ca: readFileSync(files.cert), agent: false, headers: { Authorization: `Bearer ${ADMIN}`, ...(text ? { 'Content-Type': 'application/json' } : {}) } },
      (res) => {
        let out = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (out += d));
        res.on('end', () => {
          const answer = JSON.parse(out);
          if (res.statusCode !== 200) reject(new Error(`${method} ${path}: HTTP ${res.statusCode} ${out}`));
          else resolve(answer);
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** 'connected', the error's message, or 'closed' (closed without either). */
function outcome(client: mqtt.MqttClient): Promise<string> {
  return new Promise((resolve) => {
    client.once('connect', () => resolve('connected'));
    client.once('error', (err) => resolve(err.message));
    client.once('close', () => resolve('closed'));
  }).finally(() => client.end(true)) as Promise<string>;
}

const stats = async (uuid: string): Promise<any> => (await api('GET', `/api/v1/inends/stats?uuid=${uuid}`)).data;

describe('mqtts', () => {
  it('the broker serves the HTTP certificate: a trusting client publishes with a PUBACK, a plain client is refused', async () => {
    const port = await freePort('tcp');
    const created = (await api('POST', '/api/v1/inends/create', { name: 'tls-broker', type: 'GENERIC_MQTT_SERVER', description: '', config: { host: '127.0.0.1', port, tls: true } })).data;
    await waitFor('listening', () => stats(created.uuid), (s) => s.connection.state === 'listening');
    expect(svc.logs.some((l) => l.listener === `mqtts://127.0.0.1:${port}`)).toBe(true);
    const client = await mqtt.connectAsync(`mqtts://localhost:${port}`, { ca: readFileSync(files.cert), username: 'd', password: created.token, reconnectPeriod: 0 });
    await client.publishAsync('t', 'hello', { qos: 1 });
    await client.endAsync();
    expect((await stats(created.uuid)).messagesIn).toBe(1);
    expect(await outcome(mqtt.connect(`mqtt://127.0.0.1:${port}`, { username: 'd', password: created.token, reconnectPeriod: 0, connectTimeout: 5000 }))).toBe('closed');
    expect(await outcome(mqtt.connect(`mqtts://localhost:${port}`, { username: 'd', password: created.token, reconnectPeriod: 0, connectTimeout: 5000 }))).toMatch(/self-signed|certificate/i);
  });

  it('the client input checks the broker certificate: a self-signed one is its error', async () => {
    const port = await freePort('tcp');
    await api('POST', '/api/v1/inends/create', { name: 'tls-broker-2', type: 'GENERIC_MQTT_SERVER', description: '', config: { host: '127.0.0.1', port, tls: true, anonymous: true } });
    const client = (await api('POST', '/api/v1/inends/create', { name: 'tls-client', type: 'GENERIC_MQTT', description: '', config: { host: 'localhost', port, tls: true, subTopics: ['x'] } })).data;
    const s = await waitFor('error', () => stats(client.uuid), (v) => v.connection.state === 'error');
    expect(s.connection.lastError).toMatch(/self-signed|certificate/i);
  });
});

describe('tls without the HTTP files', () => {
  it('is shown as the input error', async () => {
    const plain = await startService();
    try {
      const { call } = await import('../support/client.js');
      const created = (await call(plain.base, '/api/v1/inends/create', { method: 'POST', body: { name: 'x', type: 'GENERIC_MQTT_SERVER', config: { host: '127.0.0.1', port: await freePort('tcp'), tls: true } } })).body.data;
      const s = await waitFor('error', async () => (await call(plain.base, `/api/v1/inends/stats?uuid=${created.uuid}`)).body.data, (v) => v.connection.state === 'error');
      expect(s.connection.lastError).toContain('[plugin.http_server] has no tls_cert_file');
    } finally {
      await plain.close();
    }
  });
});
