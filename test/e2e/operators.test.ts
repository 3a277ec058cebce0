/**
 * Integrators and operators in a real browser (contract 18, issue 16): the example curl and the simulator
 * fit the model's bounds, the inputs and rules lists show health, push tokens rotate, the delete-input
 * dialog says what the server does, the rule editor runs a script on a payload without storing anything,
 * the sign-in page says where the token is, and toasts never cover a button.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET, api, setup, shot, signIn, type Env } from './harness.js';

let env: Env;
let model: string;

interface Stats { accepted: number; failed: number; queued: number; lastPayloadAtMs: number | null }

const pushTo = (base: string, input: string, token: string, body: string) =>
  fetch(`${base}/api/v1/inends/push?uuid=${input}`, { method: 'POST', headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' }, body });

const storedTotal = async (base: string, uuid: string): Promise<number> => {
  const res = await fetch(`${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&size=1`, { headers: { 'X-Api-Secret': SECRET } });
  return ((await res.json()) as { data: { total: number } }).data.total;
};

/** The generic sample of the UI (one tag per attribute), for rules made through the API. */
const tagRule = (uuid: string) => `Actions = { function(args)
  local rows = json:J2T(args)
  local t = {}
  for _, row in ipairs(rows) do t[row.tag] = row.value end
  local err = rds:Save("${uuid}", t)
  if err ~= nil then Throw(err) end
  return true, args
end }`;

/** The inputs & rules page, rendered afresh (a goto to the hash already shown renders nothing). */
async function openRules(page: Page, base: string): Promise<void> {
  await page.goto(`${base}/#/rules`);
  await page.reload();
  await page.locator('#inputs-table').waitFor();
}

/** Boxes of the visible buttons that a visible notice overlaps. */
async function coveredButtons(page: Page): Promise<string[]> {
  return page.evaluate(`(() => {
    const notices = [...document.querySelectorAll('.notice')].map((n) => n.getBoundingClientRect()).filter((r) => r.width > 0);
    const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    return [...document.querySelectorAll('button, a.button')].filter((b) => !b.closest('.notice')).filter((b) => {
      const r = b.getBoundingClientRect();
      return r.width > 0 && notices.some((n) => hit(n, r));
    }).map((b) => b.textContent.trim());
  })()`);
}

beforeAll(async () => {
  env = await setup();
  const { base } = env;
  model = (await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'water', description: '' })).uuid;
  await api(base, 'POST', `schema/genTemplate?schemaId=${model}&templateId=WATER_QUALITY`);
  await api(base, 'POST', `schema/publish?uuid=${model}`);
});

afterAll(async () => {
  await env?.close();
});

describe('inputs', () => {
  let input: string;
  let token: string;

  it('the sign-in page says where the admin token is', async () => {
    const { page, base } = env;
    await page.goto(`${base}/`);
    const hint = await page.locator('#token-hint').textContent();
    expect(hint).toContain('<data_dir>/credentials.ini');
    expect(hint).not.toMatch(/printed once/);
  });

  it('a new HTTP input shows an example curl whose payload fits the model (pH within 0..14); the toast covers no button', async () => {
    const { page, base } = env;
    await signIn(page, base);
    await page.goto(`${base}/#/rules`);
    await page.getByRole('button', { name: '+ New input' }).click();
    await page.getByLabel('Name', { exact: true }).fill('plc line 1');
    await page.getByRole('button', { name: 'Create input' }).click();
    await page.locator('#created-push-curl').waitFor();
    expect(await page.locator('.notice.ok').count()).toBe(1);
    expect(await coveredButtons(page)).toEqual([]);
    input = (await page.locator('#created-input-uuid').textContent())!;
    token = (await page.locator('#created-push-token').textContent())!;
    const curl = (await page.locator('#created-push-curl').textContent())!;
    const body = /-d '([^']*)'/.exec(curl)![1];
    const rows = JSON.parse(body) as Array<{ tag: string; value: unknown }>;
    expect(rows.find((r) => r.tag === 'ph')?.value).toBe(7);
    expect(rows.find((r) => r.tag === 'temperature')?.value).toBe(40);
    await shot(page, 'op-01-input-created', { doc: 'input-created-example' });

    await api(base, 'POST', 'rules/create', { name: 'store water', fromSource: [input], actions: tagRule(model) });
    const pushed = await pushTo(base, input, token, body);
    expect(((await pushed.json()) as { data: unknown }).data).toMatchObject({ accepted: 1, failed: 0 });
  });

  it('the simulator form takes the bounds of the model, and its payloads are stored', async () => {
    const { page, base } = env;
    await page.goto(`${base}/#/rules`);
    await page.getByRole('button', { name: '+ New input' }).click();
    await page.getByLabel('Name', { exact: true }).fill('sim');
    await page.getByLabel('Type').selectOption('SIMULATOR');
    // The tag rows fill in once the model's attributes have loaded.
    const readTags = () => page.locator('.sim tbody tr').evaluateAll((rows) => rows.map((r) => [...r.querySelectorAll('input')].map((i) => (i as unknown as { value: string }).value).slice(0, 4)));
    await expect.poll(readTags).toContainEqual(['ph', '0', '14', '2']);
    expect(await readTags()).toContainEqual(['dissolved_oxygen', '0', '50', '2']);
    await page.getByLabel('Interval (ms)').fill('100');
    await shot(page, 'op-02-simulator-defaults', { doc: 'simulator-defaults' });
    await page.getByRole('button', { name: 'Create input' }).click();
    // The panel of the input made by the test before may still be on the page: wait for this one's.
    await page.locator('#input-created h3', { hasText: 'Input "sim" created' }).waitFor();
    const sim = (await api<Array<{ uuid: string; name: string }>>(base, 'GET', 'inends/list')).find((i) => i.name === 'sim')!.uuid;
    await api(base, 'POST', 'rules/create', { name: 'store simulated', fromSource: [sim], actions: tagRule(model) });
    await expect.poll(async () => (await api<Stats>(base, 'GET', `inends/stats?uuid=${sim}`)).accepted, { timeout: 15_000 }).toBeGreaterThanOrEqual(10);
    expect((await api<Stats>(base, 'GET', `inends/stats?uuid=${sim}`)).failed).toBe(0);
    await api(base, 'PUT', 'inends/update', { uuid: sim, config: { intervalMs: 3_600_000, tags: [{ tag: 'ph', min: 0, max: 14 }] } });
  });

  it('the lists show health: last payload, stored and failed, queue, last error', async () => {
    const { page, base } = env;
    await pushTo(base, input, token, JSON.stringify([{ tag: 'ph', value: 21.5 }]));
    await openRules(page, base);
    const cell = page.locator(`#inputs-table td[data-input="${input}"]`);
    await expect.poll(() => cell.textContent()).toMatch(/1 stored · 1 failed · 0 queued/);
    expect(await cell.textContent()).toMatch(/Last payload \d/);
    expect(await cell.locator('.health-error').textContent()).toMatch(/rule store water \(RULE[2-9A-Z]{8}\): line \d+: model water \(SCHEMA[2-9A-Z]{8}\): attribute 'ph' must be in 0\.\.14, got 21\.5/);
    const ruleCell = page.locator('#rules-table td.health-cell').first();
    await expect.poll(() => ruleCell.textContent()).toMatch(/Last run \d.*1 ok · 1 failed · 0 queued/);
    expect(await ruleCell.locator('.health-error').textContent()).toContain("attribute 'ph' must be in 0..14, got 21.5");
    await shot(page, 'op-03-lists-health', { doc: 'inputs-rules-health', fullPage: true });
  });

  it('the delete dialog says the server refuses while a rule reads the input, naming the rule', async () => {
    const { page, base } = env;
    await openRules(page, base);
    await page.getByRole('button', { name: 'Delete input plc line 1' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.waitFor();
    const text = await dialog.textContent();
    expect(text).toContain('The gateway refuses to delete an input that a rule reads');
    expect(text).toMatch(/store water \(RULE[2-9A-Z]{8}\)/);
    expect(text).not.toContain('stop receiving');
    await shot(page, 'op-04-delete-input-refused', { doc: 'delete-input-dialog' });
    await dialog.getByRole('button', { name: 'Try to delete' }).click();
    await expect.poll(() => dialog.locator('.status-line.error').textContent()).toContain(`input plc line 1 (${input}) is read by rule store water`);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  it('rotates the push token after a confirmation: the old one stops at once', async () => {
    const { page, base } = env;
    await openRules(page, base);
    await page.getByRole('button', { name: 'Rotate the push token of plc line 1' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toContain('the current one stops working at once');
    await shot(page, 'op-05-rotate-confirm', { doc: 'rotate-token-confirm' });
    await dialog.getByRole('button', { name: 'Rotate token' }).click();
    await page.locator('#rotated-push-token').waitFor();
    const fresh = (await page.locator('#rotated-push-token').textContent())!;
    expect(fresh).not.toBe(token);
    expect((await pushTo(base, input, token, '[]')).status).toBe(401);
    expect((await pushTo(base, input, fresh, '[]')).status).toBe(200);
    expect(await coveredButtons(page)).toEqual([]);
    expect(env.problems).toEqual([]);
  });
});

describe('rule editor', () => {
  it('runs the script on a prefilled payload that fits, and shows the records; nothing is stored', async () => {
    const { page, base } = env;
    const before = await storedTotal(base, model);
    const countBefore = (await api<Array<{ uuid: string }>>(base, 'GET', 'rules/list')).length;
    await page.goto(`${base}/#/rules/new?schema=${model}`);
    const box = page.getByLabel('Payload (the push body)');
    await box.waitFor();
    const payload = JSON.parse(await box.inputValue()) as Array<{ tag: string; value: unknown }>;
    expect(payload.find((r) => r.tag === 'ph')?.value).toBe(7);
    expect(payload.find((r) => r.tag === 'device_id')?.value).toBe('dev-1');
    await page.getByRole('button', { name: 'Run with this payload' }).click();
    const status = page.locator('.dry-run .status-line');
    await expect.poll(() => status.textContent()).toBe('1 of 1 payload would be stored (1 record), 0 would fail. Nothing was stored.');
    const records = await page.locator('#dry-run-records').textContent();
    expect(records).toContain(`water (${model})`);
    expect(records).toContain('rds:Save');
    expect(records).toContain('"ph":7');
    await shot(page, 'op-06-rule-dry-run', { doc: 'rule-dry-run', fullPage: true });

    // a payload out of bounds: the error at its line, marked in the editor
    await box.fill(JSON.stringify([{ tag: 'ph', value: 21.5 }]));
    await page.getByRole('button', { name: 'Run with this payload' }).click();
    await expect.poll(() => status.textContent()).toBe('0 of 1 payload would be stored (0 records), 1 would fail. Nothing was stored.');
    expect(await page.locator('#dry-run-errors').textContent()).toMatch(/^line \d+: model water \(SCHEMA[2-9A-Z]{8}\): attribute 'ph' must be in 0\.\.14, got 21\.5$/);
    await expect.poll(() => page.locator('.code-editor').first().locator('.code-error').textContent()).toMatch(/^Line \d+: model water \(SCHEMA[2-9A-Z]{8}\): attribute 'ph'/);
    await shot(page, 'op-07-rule-dry-run-error', { doc: 'rule-dry-run-error', fullPage: true });

    // NDJSON: one line per payload
    await page.getByLabel('Body type').selectOption('application/x-ndjson');
    await box.fill(`${JSON.stringify([{ tag: 'ph', value: 6 }])}\n${JSON.stringify([{ tag: 'ph', value: 15 }])}`);
    await page.getByRole('button', { name: 'Run with this payload' }).click();
    await expect.poll(() => status.textContent()).toBe('1 of 2 payloads would be stored (1 record), 1 would fail. Nothing was stored.');
    expect(await page.locator('#dry-run-errors').textContent()).toMatch(/^payload 2: line \d+: /);

    // nothing stored, no rule created
    expect((await api<Array<{ uuid: string }>>(base, 'GET', 'rules/list')).length).toBe(countBefore);
    expect(await storedTotal(base, model)).toBe(before);
    expect(env.problems).toEqual([]);
  });
});
