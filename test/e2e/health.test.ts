/**
 * The UI shows what /healthz says (issue 19): a published model whose data directory is gone stays closed
 * after a restart, /healthz answers "degraded" naming it, and the signed-in UI shows a banner with that
 * reason under the top bar; a healthy service shows none.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { api, CHROMIUM, CHROMIUM_ARGS, signIn, startServer } from './harness.js';

const dataDir = mkdtempSync(path.join(tmpdir(), 'edc-e2e-health-'));
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('health banner', () => {
  it('hidden while healthy; names the closed model while /healthz is degraded', async () => {
    let service = await startServer(dataDir);
    let base = `http://127.0.0.1:${service.port}`;
    const model = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'boiler', description: '' });
    await api(base, 'POST', 'schema/properties/create', { schemaId: model.uuid, name: 'temp', type: 'FLOAT' });
    await api(base, 'POST', `schema/publish?uuid=${model.uuid}`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    const page = await browser.newPage();
    await signIn(page, base);
    await page.getByRole('heading', { name: 'Data models' }).waitFor();
    await page.waitForResponse((r) => r.url().endsWith('/healthz'));
    expect(await page.locator('#health').isHidden()).toBe(true);
    await service.stop();

    rmSync(path.join(dataDir, 'store', model.uuid), { recursive: true });
    service = await startServer(dataDir);
    base = `http://127.0.0.1:${service.port}`;
    try {
      await signIn(page, base);
      const banner = page.locator('#health');
      await banner.waitFor({ state: 'visible', timeout: 15_000 });
      expect(await banner.textContent()).toMatch(new RegExp(`Degraded: .*model boiler \\(${model.uuid}\\) cannot be opened`));
    } finally {
      await service.stop();
    }
  }, 60_000);
});
