/**
 * A GENERIC_MQTT input's broker password is a credential for another system: the API shows it masked,
 * an update that sends the mask back (what the UI and a RHILEX client do with the list's config) or no
 * password keeps it, and "" clears it. Against a real mosquitto that requires the password, so "kept"
 * means the input still logs in.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/client.js';
import { startService, type TestService } from '../support/service.js';
import { createInput, inputStats, startMosquitto, waitFor, type Mosquitto } from './support.js';

const PASSWORD = 'Secret-Plant-42';
let broker: Mosquitto;
let svc: TestService;
let inend: string;

beforeAll(async () => {
  broker = await startMosquitto({ users: { gateway: PASSWORD } });
  svc = await startService();
  const created = await createInput(svc.base, {
    name: 'locked-broker',
    type: 'GENERIC_MQTT',
    config: { host: '127.0.0.1', port: broker.port, clientId: 'edc-locked', username: 'gateway', password: PASSWORD, qos: 1, subTopics: ['plant/#'] },
  });
  inend = created.uuid;
  await waitFor('connected', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected');
});

afterAll(async () => {
  await svc?.close();
  await broker?.stop();
});

async function detail(): Promise<any> {
  return (await call(svc.base, `/api/v1/inends/detail?uuid=${inend}`)).body.data;
}

async function update(config: Record<string, unknown>): Promise<any> {
  const answer = await call(svc.base, '/api/v1/inends/update', { method: 'PUT', body: { uuid: inend, config } });
  expect(answer.status).toBe(200);
  return answer.body.data;
}

function answersOf(...bodies: unknown[]): string {
  return JSON.stringify(bodies);
}

describe('GENERIC_MQTT password', () => {
  it('is never answered in clear: list, detail and update show a mask, inends.json keeps it for the login', async () => {
    const list = (await call(svc.base, '/api/v1/inends/list')).body.data;
    const shown = await detail();
    expect(shown.config.password).toBe('******');
    expect(shown.config.username).toBe('gateway');
    const updated = await update({ ...shown.config });
    expect(updated.config.password).toBe('******');
    expect(answersOf(list, shown, updated)).not.toContain(PASSWORD);
    expect(readFileSync(join(svc.dir, 'data', 'inends.json'), 'utf8')).toContain(PASSWORD);
  });

  it('is kept by an update that sends the mask back or leaves it out, so the input logs in again', async () => {
    const { config } = await detail();
    for (const next of [{ ...config, qos: 0 }, { ...config, password: undefined, qos: 1 }]) {
      const before = (await inputStats(svc.base, inend)).connection.since;
      await update(next);
      // A lost password would leave it refused: this would time out.
      await waitFor('logged in again', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected' && s.connection.since !== before);
    }
  });

  it('is replaced by a new one and cleared by ""; the broker then refuses the login', async () => {
    const { config } = await detail();
    await update({ ...config, password: 'wrong-one' });
    const refused = await waitFor('refused', () => inputStats(svc.base, inend), (s) => s.connection.state !== 'connected' && s.connection.lastError !== null);
    expect(refused.connection.lastError).toMatch(/not authorized|bad user name or password/i);
    await update({ ...config, password: PASSWORD });
    await waitFor('connected again', () => inputStats(svc.base, inend), (s) => s.connection.state === 'connected');
    const cleared = await update({ ...config, password: '' });
    expect(cleared.config.password).toBe('');
    expect(readFileSync(join(svc.dir, 'data', 'inends.json'), 'utf8')).not.toContain(PASSWORD);
    await waitFor('refused without a password', () => inputStats(svc.base, inend), (s) => s.connection.state !== 'connected' && s.connection.lastError !== null);
  });
});
