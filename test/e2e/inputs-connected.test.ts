/**
 * The inputs devices speak (contract 21, issue 33) in a real browser: an MQTT client of a broker (absent,
 * then a real mosquitto that the test starts and stops, where it shows Connected and stores), the
 * built-in MQTT broker and a UDP server are created through the New input form and listed with their
 * connection state; the built-in broker's password (the push token) is shown once, a device logs in with
 * it and what it publishes is stored by a rule made from the UI's sample, and the password rotates from the
 * list; a UDP datagram is stored and a longer one refused and counted; a config the browser refuses never
 * reaches the server, and one the server refuses shows the server's message at the field it names; the
 * health cell renders the connection block of `inends/stats` (state since when, last error, messages in,
 * stored, refused, redelivered); the rule editor says what `args` holds for an MQTT input and its sample
 * decodes the base64 payload.
 */
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import mqtt from 'mqtt';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, api, setup, shot, signIn, unnamedControls, type Env } from './harness.js';
import { startMosquitto, type Mosquitto } from '../inputs/support.js';

let env: Env;
let model: string;
/** The built-in broker made through the UI: its port and the password the UI showed. */
let broker: { uuid: string; port: number; token: string } | undefined;

const storedTotal = async (base: string): Promise<number> => {
  const res = await fetch(`${base}/api/v1/datacenter/queryDataList?uuid=${model}&size=1`, { headers: { 'X-Api-Secret': SECRET } });
  return ((await res.json()) as { data: { total: number } }).data.total;
};

/** The temperature of the model's newest record. */
const newestTemperature = async (base: string): Promise<unknown> => {
  const res = await fetch(`${base}/api/v1/datacenter/queryDataList?uuid=${model}&size=1&order=desc`, { headers: { 'X-Api-Secret': SECRET } });
  return ((await res.json()) as { data: { records: Array<{ temperature: unknown }> } }).data.records[0]?.temperature;
};

function sendDatagram(port: number, body: string | Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.send(body, port, '127.0.0.1', (err) => { socket.close(); if (err) reject(err); else resolve(); });
  });
}

interface Inend { uuid: string; name: string; type: string; config: Record<string, unknown> }
interface Connection { state: string; lastError: string | null; since: string }
interface Stats { connection?: Connection; messagesIn?: number; stored?: number; refused?: number; redelivered?: number }

/** A TCP port nothing listens on now (taken from the kernel, then released). */
function freeTcpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function freeUdpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });
}

/** The inputs & rules page, rendered afresh. */
async function openRules(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/#/rules`);
  await page.reload();
  await page.locator('#inputs-table').waitFor();
}

async function newInput(page: Page, name: string, type: string): Promise<void> {
  await page.getByRole('button', { name: '+ New input' }).click();
  const form = page.getByRole('form', { name: 'New input' });
  await form.getByLabel('Name', { exact: true }).fill(name);
  await form.getByLabel('Type').selectOption(type);
}

const inputNamed = async (base: string, name: string): Promise<Inend> =>
  (await api<Inend[]>(base, 'GET', 'inends/list')).find((i) => i.name === name)!;

/** The health cell of an input once its connection block shows. */
async function connectionText(page: Page, uuid: string): Promise<string> {
  const block = page.locator(`#inputs-table td[data-input="${uuid}"] .conn`);
  await block.waitFor({ timeout: 15_000 });
  return (await block.textContent()) ?? '';
}

beforeAll(async () => {
  env = await setup();
  const { base, page } = env;
  model = (await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'line1', description: '' })).uuid;
  await api(base, 'POST', 'schema/properties/create', { schemaId: model, name: 'temperature', type: 'FLOAT' });
  await api(base, 'POST', `schema/publish?uuid=${model}`);
  await signIn(page, base);
  await page.getByRole('heading', { name: 'Data models' }).waitFor();
});

afterAll(async () => {
  // Delete the inputs so their listeners and connections close before the service stops.
  if (env) {
    for (const i of await api<Inend[]>(env.base, 'GET', 'inends/list').catch(() => [] as Inend[])) {
      await api(env.base, 'DELETE', `inends/del?uuid=${i.uuid}`).catch(() => undefined);
    }
    await env.close();
  }
});

describe('the browser checks a config before sending it', () => {
  it('a port out of range and a topic filter with # inside are shown at their fields; nothing is sent', async () => {
    const { page, base } = env;
    await openRules(page, base);
    await newInput(page, 'checked', 'GENERIC_MQTT');
    const form = page.getByRole('form', { name: 'New input' });
    // The defaults: a fixed client id, QoS 1, every topic.
    expect(await form.getByLabel('Client id').inputValue()).toMatch(/^edge_datacenter_[0-9a-f]{12}$/);
    expect(await form.getByLabel('QoS').inputValue()).toBe('1');
    expect(await form.getByLabel('Topics (one per line)').inputValue()).toBe('#');
    await form.getByLabel('Broker port').fill('70000');
    await form.getByLabel('Topics (one per line)').fill('plant/#/line');
    let sent = 0;
    const count = (r: { url(): string; method(): string }) => { if (r.url().includes('/inends/create')) sent += 1; };
    page.on('request', count);
    await form.getByRole('button', { name: 'Create input' }).click();
    const port = form.getByLabel('Broker port');
    expect(await port.getAttribute('aria-invalid')).toBe('true');
    const portError = await page.locator(`#${await port.getAttribute('id')}-err`).textContent();
    expect(portError).toBe('Enter a port from 1 to 65535.');
    const topicsError = await page.locator(`#${await form.getByLabel('Topics (one per line)').getAttribute('id')}-err`).textContent();
    expect(topicsError).toBe('Topic "plant/#/line": # must be a whole level, and the last one.');
    page.off('request', count);
    expect(sent).toBe(0);

    expect(await unnamedControls(page)).toEqual([]);
    await form.getByLabel('Type').selectOption('GENERIC_MQTT_SERVER');
    expect(await unnamedControls(page)).toEqual([]);

    // The UDP server's defaults (RHILEX's): 0.0.0.0, 6200, 1024.
    await form.getByLabel('Type').selectOption('UDP_SERVER');
    expect(await form.getByLabel('Listen on (host)').inputValue()).toBe('0.0.0.0');
    expect(await form.getByLabel('Port', { exact: true }).inputValue()).toBe('6200');
    expect(await form.getByLabel('Longest datagram (bytes)').inputValue()).toBe('1024');
    expect(await unnamedControls(page)).toEqual([]);
    await form.getByRole('button', { name: 'Cancel' }).click();
    expect(env.problems).toEqual([]);
  });
});

describe('the health cell renders the connection block of inends/stats', () => {
  it('state since when, last error and the counters, from the agreed shape', async () => {
    const { page, base } = env;
    // An HTTP input for the row; its stats are answered with the shape an MQTT client input has.
    const http = await api<{ uuid: string }>(base, 'POST', 'inends/create', { name: 'shaped', type: 'HTTP', description: '', config: {} });
    const since = '2024-05-01T08:30:00.000Z';
    await page.route(`**/api/v1/inends/stats?uuid=${http.uuid}`, (route) => route.fulfill({
      status: 200, contentType: 'application/json',
      body: JSON.stringify({ code: 200, msg: 'Success', data: {
        uuid: http.uuid, lastPayloadAtMs: null, accepted: 7, failed: 1, queued: 0, lastError: null,
        connection: { state: 'reconnecting', lastError: 'connect ECONNREFUSED 10.0.0.9:1883', since },
        messagesIn: 12, stored: 9, refused: 2, redelivered: 1,
      } }),
    }));
    try {
      await openRules(page, base);
      const text = await connectionText(page, http.uuid);
      expect(text).toContain('Reconnecting since 2024-05-01 08:30:00');
      expect(text).toContain('Last connection error: connect ECONNREFUSED 10.0.0.9:1883');
      expect(text).toContain('12 in · 9 stored · 2 refused · 1 redelivered');
      const cell = page.locator(`#inputs-table td[data-input="${http.uuid}"]`);
      expect(await cell.textContent()).toContain('1 failed · 0 queued');
      expect(await cell.locator('.conn').getAttribute('data-state')).toBe('reconnecting');
    } finally {
      await page.unroute(`**/api/v1/inends/stats?uuid=${http.uuid}`);
      await api(base, 'DELETE', `inends/del?uuid=${http.uuid}`);
    }
    expect(env.problems).toEqual([]);
  });
});

describe('the rule editor for an MQTT input', () => {
  it('says what args holds, its sample decodes the base64 payload, and the dry run stores its example', async () => {
    const { page, base } = env;
    // The input list as the server lists an MQTT client input (answered here: the rule editor only reads it).
    const input = 'INENDMQTTTEST1';
    const listed = [{ uuid: input, name: 'plc broker', type: 'GENERIC_MQTT', description: '', createdAtMs: Date.now(),
      config: { host: '127.0.0.1', port: 1883, clientId: 'edge_datacenter_0123456789ab', username: '', password: '', qos: 1, subTopics: ['#'] } }];
    await page.route('**/api/v1/inends/list', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({ code: 200, msg: 'Success', data: listed }) }));
    try {
      await page.goto(`${base}/#/rules/new?input=${input}&schema=${model}`);
      await page.reload();
      const help = page.locator('#args-help');
      await help.waitFor();
      expect(await help.getAttribute('open')).not.toBeNull();
      expect(await help.textContent()).toContain('{"topic":"/topic1/dev","payload":"<base64 of the message>"}');
      const actions = page.locator('#code-actions');
      expect(await actions.inputValue()).toContain('local body, err = json:J2T(args);');
      expect(await actions.inputValue()).toContain('json:base64J2T(body.payload)');
      expect(await actions.inputValue()).toContain(`rds:Save("${model}"`);
      await page.getByRole('button', { name: 'Validate' }).click();
      await expect.poll(() => page.locator('form[aria-labelledby="rule-title"] .status-line').textContent(), { timeout: 10_000 }).toBe('The script compiles.');
      // The dry run's example is the envelope the input hands over, the message in base64.
      const box = page.getByLabel('Payload (the push body)');
      const args = JSON.parse(await box.inputValue()) as { topic: string; payload: string };
      expect(args.topic).toBe('plant/line1');
      expect(JSON.parse(Buffer.from(args.payload, 'base64').toString('utf8'))).toEqual([{ tag: 'temperature', value: expect.any(Number) }]);
      await page.getByRole('button', { name: 'Run with this payload' }).click();
      await expect.poll(() => page.locator('.dry-run .status-line').textContent(), { timeout: 10_000 }).toBe('1 of 1 payload would be stored (1 record), 0 would fail. Nothing was stored.');
      await shot(page, 'inputs-rule-args-help', { fullPage: true, doc: 'rule-args-help' });
    } finally {
      await page.unroute('**/api/v1/inends/list');
    }
    expect(env.problems).toEqual([]);
  });
});

// Against the real server side of issue 33 (src/inputs, src/scripts/input-configs.ts).
describe('the three input types, created through the UI', () => {
  it('an MQTT client of a broker that is not there: listed as Reconnecting or Error with the connection error', async () => {
    const { page, base } = env;
    const port = await freeTcpPort();
    await openRules(page, base);
    await newInput(page, 'plc broker', 'GENERIC_MQTT');
    const form = page.getByRole('form', { name: 'New input' });
    await form.getByLabel('Broker host').fill('127.0.0.1');
    await form.getByLabel('Broker port').fill(String(port));
    await form.getByLabel('Username').fill('gw');
    await form.getByLabel('Password').fill('pw-1');
    await form.getByLabel('Topics (one per line)').fill('plant/+/temp\nplant/line1/#');
    await form.getByRole('button', { name: 'Create input' }).click();
    await page.locator('#input-created h3', { hasText: 'Input "plc broker" created' }).waitFor();
    expect(await page.locator('#created-broker').textContent()).toBe(`mqtt://127.0.0.1:${port}`);
    const input = await inputNamed(base, 'plc broker');
    expect(input.type).toBe('GENERIC_MQTT');
    expect(input.config).toMatchObject({ host: '127.0.0.1', port, username: 'gw', qos: 1, subTopics: ['plant/+/temp', 'plant/line1/#'] });
    const row = page.locator(`#inputs-table tr[data-input-row="${input.uuid}"]`);
    expect(await row.textContent()).toContain(`mqtt://127.0.0.1:${port}`);
    await expect.poll(() => connectionText(page, input.uuid), { timeout: 20_000 }).toMatch(/^(Reconnecting|Error) since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    expect(await connectionText(page, input.uuid)).toMatch(/Last connection error: .*(ECONNREFUSED|refused)/i);
    expect(await connectionText(page, input.uuid)).toContain('0 in · 0 stored · 0 refused · 0 redelivered');
    await shot(page, 'inputs-mqtt-client', { fullPage: true });
    expect(env.problems).toEqual([]);
  });

  it('an MQTT client of a real mosquitto: Connected; a message published there is stored by the rule from the UI\'s sample', async () => {
    const { page, base } = env;
    let broker: Mosquitto | undefined;
    try {
      broker = await startMosquitto();
      await openRules(page, base);
      await newInput(page, 'mosquitto', 'GENERIC_MQTT');
      const form = page.getByRole('form', { name: 'New input' });
      await form.getByLabel('Broker port').fill(String(broker.port));
      await form.getByLabel('Topics (one per line)').fill('plant/#');
      await form.getByRole('button', { name: 'Create input' }).click();
      await page.locator('#input-created h3', { hasText: 'Input "mosquitto" created' }).waitFor();
      const input = await inputNamed(base, 'mosquitto');
      await expect.poll(() => connectionText(page, input.uuid), { timeout: 20_000 }).toMatch(/^Connected since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
      // The rule: the created panel's link, with the sample for an MQTT client's {topic, payload}.
      await page.getByRole('link', { name: 'Write a rule for this input' }).click();
      const actions = page.locator('#code-actions');
      await actions.waitFor();
      expect(await actions.inputValue()).toContain('json:base64J2T(body.payload)');
      await page.getByLabel('Name', { exact: true }).fill('store mosquitto');
      await page.getByRole('button', { name: 'Create rule' }).click();
      await page.waitForURL(/#\/rules\/RULE/);
      const before = await storedTotal(base);
      const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, { clientId: 'e2e-publisher', reconnectPeriod: 0, connectTimeout: 10_000 });
      try {
        await device.publishAsync('plant/line1/temp', JSON.stringify([{ tag: 'temperature', value: 23.75 }]), { qos: 1 });
      } finally {
        await device.endAsync();
      }
      await expect.poll(() => storedTotal(base), { timeout: 15_000 }).toBe(before + 1);
      expect(await newestTemperature(base)).toBe(23.75);
      await openRules(page, base);
      await expect.poll(() => connectionText(page, input.uuid), { timeout: 15_000 }).toContain('1 in · 1 stored · 0 refused · 0 redelivered');
      await api(base, 'DELETE', `rules/del?uuid=${(await api<Array<{ uuid: string; name: string }>>(base, 'GET', 'rules/list')).find((r) => r.name === 'store mosquitto')!.uuid}`);
      await api(base, 'DELETE', `inends/del?uuid=${input.uuid}`);
    } finally {
      await broker?.stop();
    }
    expect(env.problems).toEqual([]);
  });

  it('the built-in MQTT broker: its password (the push token) shown once, listed as listening', async () => {
    const { page, base } = env;
    const port = await freeTcpPort();
    await openRules(page, base);
    await newInput(page, 'broker', 'GENERIC_MQTT_SERVER');
    const form = page.getByRole('form', { name: 'New input' });
    expect(await form.getByLabel('Listen on (host)').inputValue()).toBe('127.0.0.1');
    expect(await form.getByLabel('Anonymous: no username or password').isChecked()).toBe(false);
    await form.getByLabel('Listen on (host)').fill('127.0.0.1');
    await form.getByLabel('Port', { exact: true }).fill(String(port));
    await form.getByRole('button', { name: 'Create input' }).click();
    await page.locator('#input-created h3', { hasText: 'Input "broker" created' }).waitFor();
    const token = (await page.locator('#created-push-token').textContent())!;
    expect(token).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(await page.locator('#created-broker').textContent()).toBe(`mqtt://127.0.0.1:${port}`);
    expect(await page.locator('#created-mqtt-pub').textContent()).toContain(`-P '${token}'`);
    await shot(page, 'inputs-mqtt-broker-created', { fullPage: true });
    const input = await inputNamed(base, 'broker');
    expect(input.config).toMatchObject({ host: '127.0.0.1', port, anonymous: false });
    expect(JSON.stringify(input)).not.toContain(token);
    await expect.poll(() => connectionText(page, input.uuid), { timeout: 15_000 }).toMatch(/^Listening since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    broker = { uuid: input.uuid, port, token };
    // Shown once: after a reload the page has no way to show it again.
    await openRules(page, base);
    expect(await page.content()).not.toContain(token);
    expect(env.problems).toEqual([]);
  });

  it('an anonymous built-in broker: no password shown, no token to rotate', async () => {
    const { page, base } = env;
    const port = await freeTcpPort();
    await openRules(page, base);
    await newInput(page, 'open broker', 'GENERIC_MQTT_SERVER');
    const form = page.getByRole('form', { name: 'New input' });
    await form.getByLabel('Port', { exact: true }).fill(String(port));
    await form.getByLabel('Anonymous: no username or password').check();
    await form.getByRole('button', { name: 'Create input' }).click();
    await page.locator('#input-created h3', { hasText: 'Input "open broker" created' }).waitFor();
    expect(await page.locator('#created-login').textContent()).toBe('none: anonymous clients are accepted');
    expect(await page.locator('#created-push-token').count()).toBe(0);
    expect(await page.locator('#created-mqtt-pub').textContent()).not.toContain(' -P ');
    const input = await inputNamed(base, 'open broker');
    expect(input.config).toMatchObject({ port, anonymous: true });
    expect(await page.getByRole('button', { name: 'Rotate the push token of open broker' }).count()).toBe(0);
    const anyone = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 5_000 });
    await anyone.endAsync();
    await api(base, 'DELETE', `inends/del?uuid=${input.uuid}`);
    expect(env.problems).toEqual([]);
  });

  it('a device logs in to the built-in broker with the password the UI showed; the rule from the UI\'s sample stores what it publishes', async () => {
    const { page, base } = env;
    expect(broker).toBeDefined();
    const { uuid, port, token } = broker!;
    // The rule: the link of the created panel's kind, with the sample for a built-in broker's events.
    await page.goto(`${base}/#/rules/new?input=${uuid}&schema=${model}`);
    await page.reload();
    const actions = page.locator('#code-actions');
    await actions.waitFor();
    expect(await actions.inputValue()).toContain('if body.action ~= "publish" then');
    expect(await actions.inputValue()).toContain('json:J2T(body.payload)');
    await page.getByLabel('Name', { exact: true }).fill('store broker');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/#\/rules\/RULE/);
    const before = await storedTotal(base);
    const device = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'e2e-device', username: 'device', password: token, reconnectPeriod: 0, connectTimeout: 10_000 });
    try {
      await device.publishAsync('plant/line1', JSON.stringify([{ tag: 'temperature', value: 21.5 }]), { qos: 1 });
    } finally {
      await device.endAsync();
    }
    // The PUBACK came once the record was stored.
    expect(await storedTotal(base)).toBe(before + 1);
    expect(await newestTemperature(base)).toBe(21.5);
    await openRules(page, base);
    await expect.poll(() => connectionText(page, uuid), { timeout: 15_000 }).toContain('1 in · 1 stored · 0 refused · 0 redelivered');
    expect(env.problems).toEqual([]);
  });

  it('the broker\'s password rotates from the list: the old one is refused at login, the new one shown once logs in', async () => {
    const { page, base } = env;
    const { port, token } = broker!;
    await openRules(page, base);
    await page.getByRole('button', { name: 'Rotate the push token of broker' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('a client logging in to this broker with it is refused');
    await dialog.getByRole('button', { name: 'Rotate token' }).click();
    await page.locator('#rotated-push-token').waitFor();
    const fresh = (await page.locator('#rotated-push-token').textContent())!;
    expect(fresh).not.toBe(token);
    const login = (password: string) => mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { username: 'device', password, reconnectPeriod: 0, connectTimeout: 5_000 });
    await expect(login(token)).rejects.toThrow();
    const ok = await login(fresh);
    await ok.endAsync();
    broker!.token = fresh;
    expect(env.problems).toEqual([]);
  });

  it('a UDP server with the defaults but its port: listed as listening; a datagram stored, a longer one refused and counted', async () => {
    const { page, base } = env;
    const port = await freeUdpPort();
    await openRules(page, base);
    await newInput(page, 'udp sensors', 'UDP_SERVER');
    const form = page.getByRole('form', { name: 'New input' });
    await form.getByLabel('Listen on (host)').fill('127.0.0.1');
    await form.getByLabel('Port', { exact: true }).fill(String(port));
    await form.getByRole('button', { name: 'Create input' }).click();
    await page.locator('#input-created h3', { hasText: 'Input "udp sensors" created' }).waitFor();
    expect(await page.locator('#created-udp-address').textContent()).toBe(`udp://127.0.0.1:${port}`);
    const input = await inputNamed(base, 'udp sensors');
    expect(input.config).toMatchObject({ host: '127.0.0.1', port, maxDataLength: 1024 });
    await expect.poll(() => connectionText(page, input.uuid), { timeout: 15_000 }).toMatch(/^Listening since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    // The rule from the UI's sample for a UDP input ({clientAddr, data in hex}); its dry run stores its example.
    await page.getByRole('link', { name: 'Write a rule for this input' }).click();
    const actions = page.locator('#code-actions');
    await actions.waitFor();
    expect(await actions.inputValue()).toContain('hex:Hexs2Bytes(body.data)');
    const example = JSON.parse(await page.getByLabel('Payload (the push body)').inputValue()) as { clientAddr: string; data: string };
    expect(JSON.parse(Buffer.from(example.data, 'hex').toString('utf8'))).toEqual([{ tag: 'temperature', value: expect.any(Number) }]);
    await page.getByRole('button', { name: 'Run with this payload' }).click();
    await expect.poll(() => page.locator('.dry-run .status-line').textContent(), { timeout: 10_000 }).toBe('1 of 1 payload would be stored (1 record), 0 would fail. Nothing was stored.');
    await page.getByLabel('Name', { exact: true }).fill('store udp');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/#\/rules\/RULE/);
    // A datagram is stored by that rule; one longer than maxDataLength is refused and counted.
    const before = await storedTotal(base);
    await sendDatagram(port, JSON.stringify([{ tag: 'temperature', value: 19.25 }]));
    await sendDatagram(port, Buffer.alloc(1025, 0x20));
    await openRules(page, base);
    await expect.poll(() => connectionText(page, input.uuid), { timeout: 15_000 }).toContain('2 in · 1 stored · 1 refused · 0 redelivered');
    expect(await storedTotal(base)).toBe(before + 1);
    expect(await newestTemperature(base)).toBe(19.25);
    await shot(page, 'inputs-connected-list', { fullPage: true, doc: 'inputs-connected' });
    expect(env.problems).toEqual([]);
  });

  it('a config the server refuses shows the server\'s message at the field it names', async () => {
    const { page, base } = env;
    const taken = (await inputNamed(base, 'udp sensors')).config.port as number;
    await openRules(page, base);
    await newInput(page, 'udp twin', 'UDP_SERVER');
    const form = page.getByRole('form', { name: 'New input' });
    await form.getByLabel('Listen on (host)').fill('127.0.0.1');
    await form.getByLabel('Port', { exact: true }).fill(String(taken));
    const answer = page.waitForResponse((r) => r.url().includes('/inends/create'));
    await form.getByRole('button', { name: 'Create input' }).click();
    const res = await answer;
    expect(res.status()).toBe(400);
    const msg = ((await res.json()) as { msg: string }).msg;
    expect(msg).toMatch(/config\.port/);
    const port = form.getByLabel('Port', { exact: true });
    await expect.poll(() => port.getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator(`#${await port.getAttribute('id')}-err`).textContent()).toBe(`${msg} (HTTP 400)`);
    await shot(page, 'inputs-config-refused', { doc: 'input-config-refused' });
    await form.getByRole('button', { name: 'Cancel' }).click();
    expect(await inputNamed(base, 'udp twin')).toBeUndefined();
  });

  it('an input is edited in the same form: its type fixed, its config saved', async () => {
    const { page, base } = env;
    const input = await inputNamed(base, 'plc broker');
    await openRules(page, base);
    await page.getByRole('button', { name: 'Edit input plc broker' }).click();
    const form = page.getByRole('form', { name: 'Edit input plc broker' });
    expect(await form.getByLabel('Type').isDisabled()).toBe(true);
    expect(await form.getByLabel('Topics (one per line)').inputValue()).toBe('plant/+/temp\nplant/line1/#');
    await form.getByLabel('QoS').selectOption('0');
    await form.getByLabel('Topics (one per line)').fill('plant/#');
    await form.getByRole('button', { name: 'Save input' }).click();
    await form.waitFor({ state: 'detached' });
    expect((await inputNamed(base, 'plc broker')).config).toMatchObject({ qos: 0, subTopics: ['plant/#'], clientId: input.config.clientId });
  });
});
