/**
 * The cross-site lockout of issue 20, played for real: a page on another site (a second loopback HTTP
 * server, 127.0.0.2) makes the administrator's Chromium fire wrong data secrets at the service, with
 * image tags, no-cors fetches and CORS fetches carrying X-Api-Secret, at a steady pace. The service sees
 * them from 127.0.0.1, the address the administrator and the test also use. Once those wrong ones are
 * answered 429, the right admin token and the right data secret from 127.0.0.1 (the test's own HTTP
 * client, and a tab on the service's origin in the same browser) must still get 200 every time, while
 * the wrong ones keep getting 401 or 429.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, type TestService } from '../support/service.js';
import { api, CHROMIUM, CHROMIUM_ARGS, SECRET, startServer } from './harness.js';

let service: TestService;
let base: string;
let attackerSite: http.Server;
let attackerOrigin: string;
let browser: Browser;
let model: string;

/** The hostile page: fires three wrong requests every `paceMs` (the first 50 at once) until told to stop. */
function attackerPage(target: string, uuid: string): string {
  return `<!doctype html><meta charset="utf-8"><title>cute cats</title><body><script>
const target = ${JSON.stringify(target)};
const uuid = ${JSON.stringify(uuid)};
window.corsStatuses = [];
window.fired = 0;
let n = 0;
function fire() {
  const i = n++;
  const img = new Image();
  img.src = target + '/api/v1/datacenter/queryLastData?uuid=' + uuid + '&secrets=img-guess-' + i;
  document.body.append(img);
  fetch(target + '/api/v1/datacenter/queryDataList?uuid=' + uuid + '&secrets=nocors-guess-' + i, { mode: 'no-cors' }).catch(() => {});
  fetch(target + '/api/v1/datacenter/queryLastData?uuid=' + uuid, { headers: { 'X-Api-Secret': 'cors-guess-' + i } })
    .then((r) => window.corsStatuses.push(r.status), () => window.corsStatuses.push(0));
  window.fired += 3;
}
for (let k = 0; k < 17; k++) fire();
window.flood = setInterval(fire, 100);
</script></body>`;
}

beforeAll(async () => {
  service = await startServer();
  base = service.base;
  ({ uuid: model } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'lockout', description: 'e2e' }));
  await api(base, 'POST', 'schema/properties/create', {
    schemaId: model, name: 'temp', label: 'temp', type: 'FLOAT', rw: 'R', unit: '', description: '',
    rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
  });
  await api(base, 'POST', `schema/publish?uuid=${model}`);
  attackerSite = http.createServer((_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(attackerPage(base, model));
  });
  await new Promise<void>((resolve) => attackerSite.listen(0, '127.0.0.2', resolve));
  attackerOrigin = `http://127.0.0.2:${(attackerSite.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await new Promise((resolve) => attackerSite?.close(resolve));
  await service?.close();
});

const secretQuery = (secret: string): string =>
  `${base}/api/v1/datacenter/queryLastData?uuid=${model}&secrets=${encodeURIComponent(secret)}`;

describe('a page on another site cannot lock the administrator out', () => {
  it('the right admin token and data secret from the flooded address get 200 on every request', async () => {
    const context = await browser.newContext();
    const hostile: Page = await context.newPage();
    // Every answer the service gave to the hostile page's requests (also the opaque ones).
    const floodStatuses: number[] = [];
    hostile.on('response', (r) => {
      if (r.url().startsWith(`${base}/`)) floodStatuses.push(r.status());
    });
    await hostile.goto(`${attackerOrigin}/`);
    // The flood is under way and the service already throttles its wrong secrets.
    await expect.poll(() => floodStatuses.filter((s) => s === 429).length, { timeout: 20_000 }).toBeGreaterThan(5);

    // The administrator's own tab in the same browser, on the service's origin.
    const adminTab = await context.newPage();
    await adminTab.goto(`${base}/`);

    const fromTest: number[] = [];
    const fromTab: number[] = [];
    const wrongFromTest: number[] = [];
    for (let i = 0; i < 20; i++) {
      const firedBefore = await hostile.evaluate<number>('window.fired');
      fromTest.push((await fetch(`${base}/api/v1/schema/list`, { headers: { Authorization: `Bearer ${ADMIN}` } })).status);
      fromTest.push((await fetch(secretQuery(SECRET))).status);
      wrongFromTest.push((await fetch(secretQuery(`test-guess-${i}`))).status);
      const tab = await adminTab.evaluate(
        async ({ token, secret, uuid }) => {
          const admin = await fetch('/api/v1/schema/list', { headers: { Authorization: `Bearer ${token}` } });
          const data = await fetch(`/api/v1/datacenter/queryLastData?uuid=${uuid}`, { headers: { 'X-Api-Secret': secret } });
          return [admin.status, data.status];
        },
        { token: ADMIN, secret: SECRET, uuid: model },
      );
      fromTab.push(...tab);
      // interleaved: the flood went on between these requests
      await expect.poll(() => hostile.evaluate<number>('window.fired'), { timeout: 5000 }).toBeGreaterThan(firedBefore);
    }
    await hostile.evaluate('clearInterval(window.flood)');

    expect(fromTest).toEqual(new Array(40).fill(200));
    expect(fromTab).toEqual(new Array(40).fill(200));
    expect(wrongFromTest).toEqual(new Array(20).fill(429));
    const fired = await hostile.evaluate<number>('window.fired');
    expect(fired).toBeGreaterThanOrEqual(50 + 60);
    // Every wrong secret from the page was refused: 401 at first, 429 once over the limit.
    expect(floodStatuses.length).toBeGreaterThan(50);
    expect(new Set(floodStatuses)).toEqual(new Set([401, 429]));
    const corsStatuses = await hostile.evaluate<number[]>('window.corsStatuses');
    expect(corsStatuses.length).toBeGreaterThan(20);
    expect(corsStatuses.every((s) => s === 401 || s === 429)).toBe(true);
    expect(corsStatuses).toContain(429);
    await context.close();
  });
});
