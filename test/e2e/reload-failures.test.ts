/**
 * An action that succeeded, then the reload of what it changed failed: the page would go on showing the
 * data from before the action, so it says so in an error notification naming what could not be reloaded
 * (instead of swallowing the failure). Only the reload's GET is made to fail (the gateway answering 503
 * as while it restarts); the action itself reaches the real service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { api, setup, signIn, type Env } from './harness.js';

let env: Env;

const UNAVAILABLE = {
  status: 503, contentType: 'application/json', headers: { 'Retry-After': '1' },
  body: '{"code":503,"msg":"the gateway is restarting","data":null}',
};

/** The browser logs each 503 it is given; those are expected here, anything else is a problem. */
function takeLogged503s(): number {
  const logged = 'console: Failed to load resource: the server responded with a status of 503 (Service Unavailable)';
  const before = env.problems.length;
  env.problems.splice(0, env.problems.length, ...env.problems.filter((p) => p !== logged));
  return before - env.problems.length;
}

beforeAll(async () => {
  env = await setup();
}, 60_000);

afterAll(async () => env?.close());

describe('a reload that fails after a successful action', () => {
  it('publishing: the model is published, and the failed reload of the model is shown as an error', async () => {
    const { page, base } = env;
    const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'pump', description: '' });
    await api(base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'flow', type: 'FLOAT' });
    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/attributes`);
    await page.getByRole('button', { name: 'Publish…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Publish "pump"?' });
    await dialog.waitFor();
    // The page reads the model again only after the publish: its detail is what fails.
    await page.route((url) => url.pathname.endsWith('/api/v1/schema/detail'), (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await dialog.getByRole('button', { name: 'Publish' }).click();

    const error = page.locator('#notices .notice.error');
    await error.waitFor();
    expect(await error.textContent()).toContain('Reloading the model "pump" failed: the gateway is restarting (HTTP 503)');
    expect(await page.locator('#notices .notice.ok').textContent()).toContain('"pump" is published.');
    expect((await api<{ published: boolean }>(base, 'GET', `schema/detail?uuid=${uuid}`)).published).toBe(true);
    expect(takeLogged503s()).toBe(1);
    expect(env.problems).toEqual([]);
  }, 60_000);

  it('restoring from the home page: the model is restored, and the failed reload of the models is shown as an error', async () => {
    const { page, base } = env;
    const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'valve', description: '' });
    await api(base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'open', type: 'BOOL' });
    await api(base, 'POST', `schema/publish?uuid=${uuid}`);
    const res = await fetch(`${base}/api/v1/datacenter/backup?uuid=${uuid}`, { headers: { Authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(200);
    const backup = Buffer.from(await res.arrayBuffer());
    await api(base, 'DELETE', `schema/del?uuid=${uuid}`);

    await page.goto(`${base}/#/models`);
    await page.reload();
    await page.getByRole('heading', { name: 'Restore a model from a backup' }).waitFor();
    await page.getByLabel('Backup file').setInputFiles({ name: 'valve.backup.jsonl', mimeType: 'application/x-ndjson', buffer: backup });
    // The model list is read again only after the restore: that is what fails.
    await page.route((url) => url.pathname.endsWith('/api/v1/schema/list'), (route) => route.fulfill(UNAVAILABLE), { times: 1 });
    await page.getByRole('button', { name: 'Restore…' }).click();

    await page.getByText(/^Restored 0 records into model "valve"/).waitFor();
    const error = page.locator('#notices .notice.error');
    await error.waitFor();
    expect(await error.textContent()).toContain('Reloading the data models failed: the gateway is restarting (HTTP 503)');
    expect((await api<{ name: string }>(base, 'GET', `schema/detail?uuid=${uuid}`)).name).toBe('valve');
    expect(takeLogged503s()).toBe(1);
    expect(env.problems).toEqual([]);
  }, 60_000);
});
