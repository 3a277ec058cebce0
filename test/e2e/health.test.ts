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
import { CHROMIUM, CHROMIUM_ARGS, signIn } from './harness.js';
import { ADMIN, call, configIn, startService } from '../reliability/support/service.mjs';

const tmp = mkdtempSync(path.join(tmpdir(), 'edc-e2e-health-'));
let browser: Browser | undefined;
afterAll(async () => {
  await browser?.close();
  rmSync(tmp, { recursive: true, force: true });
});

async function api(base: string, method: string, pathAndQuery: string, body?: unknown): Promise<{ uuid: string }> {
  const r = await call(base, `/api/v1/${pathAndQuery}`, { method, body });
  if (r.status !== 200) throw new Error(`${method} ${pathAndQuery}: ${r.status} ${r.text}`);
  return r.body.data;
}

describe('health banner', () => {
  it('hidden while healthy; names the closed model while /healthz is degraded', async () => {
    const { file, dataDir } = configIn(tmp, 'svc');
    let service = await startService(file);
    const model = await api(service.base, 'POST', 'schema/create', { name: 'boiler', description: '' });
    await api(service.base, 'POST', 'schema/properties/create', { schemaId: model.uuid, name: 'temp', type: 'FLOAT' });
    await api(service.base, 'POST', `schema/publish?uuid=${model.uuid}`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
    const page = await browser.newPage();
    await signIn(page, service.base, ADMIN);
    await page.getByRole('heading', { name: 'Data models' }).waitFor();
    await page.waitForResponse((r) => r.url().endsWith('/healthz'));
    expect(await page.locator('#health').isHidden()).toBe(true);
    await service.kill('SIGTERM');

    rmSync(path.join(dataDir, 'store', model.uuid), { recursive: true });
    service = await startService(file);
    try {
      await signIn(page, service.base, ADMIN);
      const banner = page.locator('#health');
      await banner.waitFor({ state: 'visible', timeout: 15_000 });
      expect(await banner.textContent()).toMatch(new RegExp(`Degraded: .*model boiler \\(${model.uuid}\\) cannot be opened`));
    } finally {
      await service.kill('SIGTERM');
    }
  }, 60_000);
});
