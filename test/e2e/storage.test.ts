/**
 * The Storage tab (contract 14) in a real browser: the model's usage, the free disk and the reserve, and
 * its own retention, saved through PUT schema/retention and validated in the form.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, setup, shot, signIn, type Env } from './harness.js';

let env: Env;
let uuid: string;

beforeAll(async () => {
  env = await setup();
  uuid = (await api<{ uuid: string }>(env.base, 'POST', 'schema/create', { name: 'tank', description: '' })).uuid;
  await api(env.base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'level', type: 'FLOAT' });
  await api(env.base, 'POST', `schema/publish?uuid=${uuid}`);
}, 60_000);

afterAll(async () => env?.close());

describe('Storage tab', () => {
  it('shows usage and disk, and saves the model retention', async () => {
    const { page, base } = env;
    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/storage`);
    await page.getByRole('heading', { name: 'Retention' }).waitFor();
    expect(await page.locator('#usage-records').textContent()).toBe('0');
    expect(await page.getByText(/^Free disk: .* of /).textContent()).toContain('writes stop below 256.0 MB');
    // No [uplink] in the config: the tab says so.
    expect(await page.locator('#uplink-state').textContent()).toBe('Uplink off.');

    const records = page.getByLabel('Keep at most (records)');
    await records.fill('-3');
    await page.getByRole('button', { name: 'Save retention' }).click();
    expect(await page.locator('form.retention-form .field-error').first().textContent()).toContain('A whole number');

    await records.fill('500');
    await page.getByLabel('Keep for (hours)').fill('720');
    await page.getByRole('button', { name: 'Save retention' }).click();
    await expect.poll(() => page.locator('form.retention-form .status-line').textContent()).toContain('Saved. Applied: 500 records, unlimited, 720 hours.');
    const detail = await api<{ retention: { own: unknown } }>(base, 'GET', `schema/detail?uuid=${uuid}`);
    expect(detail.retention.own).toEqual({ maxRecords: 500, maxBytes: null, maxAgeHours: 720 });
    await shot(page, 'storage-tab', { doc: 'storage-tab' });
    expect(env.problems).toEqual([]);
  }, 60_000);
});
