/**
 * UI details of issue 34, in a real Chromium at 1280 px against the real service: every page shows times
 * as the Data page does ('YYYY-MM-DD HH:MM:SS' in the zone in use, js/core/time.js), the Latest record
 * panel shows each value whole, the Storage tab says when a retention limit takes effect, and the
 * sign-in form renders no input without a label.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, setup, shot, signIn, type Env } from './harness.js';

/** The Data page's format (js/core/time.js fmtTime). */
const TIME = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

let env: Env;
let uuid: string;
let ruleUuid: string;

beforeAll(async () => {
  // Not UTC: a format that ignored the zone in use would show the wrong hour, not only the wrong shape.
  env = await setup({ timezoneId: 'America/New_York' });
  const { base } = env;
  // The model of docs/getting-started.md: `dissolved_oxygen` is a long name beside the values.
  ({ uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'water', description: 'e2e' }));
  for (const name of ['temp', 'resistivity', 'conductivity', 'dissolved_oxygen', 'ph_value']) {
    await api(base, 'POST', 'schema/properties/create', { schemaId: uuid, name, type: 'FLOAT' });
  }
  await api(base, 'POST', `schema/publish?uuid=${uuid}`);
  const input = await api<{ uuid: string; token: string }>(base, 'POST', 'inends/create', { name: 'plc line 1', type: 'HTTP', description: '' });
  const actions = `Actions = { function(args) local t = json:J2T(args); local e = rds:Save("${uuid}", t); if (e ~= nil) then Throw(e); return 0; end; return true, args; end }`;
  ({ uuid: ruleUuid } = await api<{ uuid: string }>(base, 'POST', 'rules/create', { name: 'store water', description: '', fromSource: [input.uuid], actions, success: '', failed: '' }));
  const res = await fetch(`${base}/api/v1/inends/push?uuid=${input.uuid}&wait=durable`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${input.token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ temp: 22.75, resistivity: 1.5, conductivity: 2, dissolved_oxygen: 3, ph_value: 7 }),
  });
  expect(res.status, await res.text()).toBe(200);
});

afterAll(async () => {
  await env?.close();
});

describe('UI details', () => {
  it('shows times in one format: Inputs & rules, the rule stats and the Storage tab as the Data page; the retention note', async () => {
    const { page, base } = env;
    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/data`);
    await expect.poll(() => page.locator('#latest').textContent()).toContain('22.75');
    const createAt = (await page.locator('#latest dt', { hasText: 'create_at' }).locator('xpath=following-sibling::dd[1]').textContent())!;
    expect(createAt).toMatch(TIME);

    await page.goto(`${base}/#/models/${uuid}/storage`);
    const oldest = page.locator('.usage dt', { hasText: 'Oldest record' }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => oldest.textContent()).toBe(createAt);
    // Retention: when a limit takes effect, as the service says it (not "at most this much stays").
    const { retention } = await api<{ retention: { note: string } }>(base, 'GET', `schema/detail?uuid=${uuid}`);
    expect(await page.locator('.retention-form > p.hint').textContent()).toBe(retention.note);

    await page.goto(`${base}/#/rules`);
    const payload = page.locator('.health span', { hasText: 'Last payload' }).first();
    await expect.poll(() => payload.textContent()).toMatch(/^Last payload \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · /);
    const run = page.locator(`td[data-rule="${ruleUuid}"] .health span`).first();
    await expect.poll(() => run.textContent()).toMatch(/^Last run \d{4}-\d\d-\d\d \d\d:\d\d:\d\d · /);

    await page.goto(`${base}/#/rules/${ruleUuid}`);
    const lastRun = page.locator('#rule-stats dt', { hasText: 'Last run' }).locator('xpath=following-sibling::dd[1]');
    await expect.poll(() => lastRun.textContent()).toMatch(TIME);
  });

  it('the Latest record panel shows every value whole at 1280 px', async () => {
    const { page, base } = env;
    expect(page.viewportSize()?.width).toBe(1280);
    await page.goto(`${base}/#/models/${uuid}/data`);
    await expect.poll(() => page.locator('#latest').textContent()).toContain('22.75');
    await shot(page, 'latest-record-1280');
    const clipped = await page.locator('#latest dd').evaluateAll((dds) =>
      dds.filter((dd) => dd.scrollWidth > dd.clientWidth).map((dd) => `${dd.previousElementSibling?.textContent}: ${dd.textContent}`));
    expect(clipped).toEqual([]);
  });

  it('the sign-in form renders no input without a label; the password managers\' user name field is not rendered', async () => {
    const { page, base } = env;
    await page.goto(`${base}/`);
    await page.evaluate('sessionStorage.clear()');
    await page.reload();
    await page.getByLabel('Admin token').waitFor();
    const unlabelled = await page.evaluate<string[]>(`[...document.querySelectorAll('form.signin input')]
      .filter((i) => i.getClientRects().length > 0 && !(i.labels && i.labels.length)).map((i) => i.outerHTML)`);
    expect(unlabelled).toEqual([]);
    const username = page.locator('form.signin input[autocomplete="username"]');
    expect(await username.inputValue()).toBe('admin');
    expect(await username.isVisible()).toBe(false);
  });
});
