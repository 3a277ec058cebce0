/**
 * The user's working order, end to end, in a real browser against the real service:
 * template model -> attributes -> publish -> HTTP input -> rule (sample script) -> push data with the token
 * shown in the UI -> table, latest record and chart -> quick request -> export -> clear.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { SECRET, api, setup, shot, signIn, type Env } from './harness.js';

let env: Env;

beforeAll(async () => {
  env = await setup();
});

afterAll(async () => {
  await env?.close();
});

describe('working order', () => {
  it('goes from a template model to stored, charted, exported and cleared data', async () => {
    const { page, base } = env;

    // --- sign in: the token is kept in sessionStorage, never in the URL
    await page.goto(`${base}/`);
    await shot(page, '01-sign-in', { doc: 'sign-in' });
    await signIn(page, base);
    await expect.poll(() => page.getByRole('heading', { name: 'Working order' }).isVisible()).toBe(true);
    expect(page.url()).not.toContain(ADMIN);
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).toContain(ADMIN);

    // --- a model from the quick-select template, with the preview of its attributes
    await page.getByRole('link', { name: '+ New model' }).first().click();
    await page.getByLabel('Name', { exact: true }).fill('greenhouse');
    await page.getByLabel('A quick-select template').check();
    await page.getByLabel('Template', { exact: true }).selectOption('TEMP_HUMIDITY');
    const preview = page.locator('.tpl-preview table');
    await expect.poll(() => preview.textContent()).toContain('temperature');
    expect(await preview.textContent()).toContain('humidity');
    await shot(page, '02-new-model-template', { doc: 'new-model-template' });
    await page.getByRole('button', { name: 'Create model' }).click();
    await page.waitForSelector('#attr-table tr[data-attr="temperature"]');
    const uuid = (await page.locator('#model-uuid').textContent())!.trim();
    expect(uuid).toMatch(/^SCHEMA[2-9A-Z]{8}$/);
    // the tree on the left lists the attributes and the draft state
    const tree = page.locator('#model-tree');
    expect(await tree.textContent()).toMatch(/greenhouse.*draft/i);
    for (const name of ['device_id', 'temperature', 'humidity']) expect(await tree.textContent()).toContain(name);

    // --- add an attribute, then edit it, while in draft
    await page.getByRole('button', { name: '+ Add attribute' }).click();
    const form = page.locator('form.attr-form');
    await form.getByLabel('Name', { exact: true }).fill('battery');
    await form.getByLabel('Type').selectOption('INTEGER');
    await form.getByLabel('Unit').fill('%');
    await form.getByLabel('Minimum').fill('0');
    await form.getByLabel('Maximum').fill('100');
    await form.getByRole('button', { name: 'Add attribute' }).click();
    await page.waitForSelector('#attr-table tr[data-attr="battery"]');
    await page.getByRole('button', { name: 'Edit attribute battery' }).click();
    await page.locator('form.attr-form').getByLabel('Label', { exact: true }).fill('Battery level');
    await page.locator('form.attr-form').getByRole('button', { name: 'Save attribute' }).click();
    await expect.poll(() => page.locator('#attr-table tr[data-attr="battery"]').textContent()).toContain('Battery level');
    expect(await tree.textContent()).toContain('battery');
    await shot(page, '03-attributes', { doc: 'attributes' });

    // --- publish, with a confirmation that says what may still change (contract 13)
    await page.getByRole('button', { name: 'Publish…' }).click();
    const dialog = page.getByRole('dialog');
    expect(await dialog.textContent()).toMatch(/an attribute keeps its name and type/i);
    await shot(page, '04-publish-confirm', { doc: 'publish-confirm' });
    await dialog.getByRole('button', { name: 'Publish' }).click();
    await page.waitForSelector('.model-head .badge.pub');
    // Published: attributes can still be added; an existing one keeps its name and type.
    expect(await page.locator('#add-attr').count()).toBe(1);
    await page.locator('#attr-table tr[data-attr="battery"]').getByRole('button', { name: /^Edit/ }).click();
    expect(await page.locator('form.attr-form').getByLabel('Name', { exact: true }).getAttribute('readonly')).not.toBeNull();
    expect(await page.locator('form.attr-form').getByLabel('Type').isDisabled()).toBe(true);
    await page.locator('form.attr-form').getByRole('button', { name: 'Cancel' }).click();
    const detail = await api<{ published: boolean }>(base, 'GET', `schema/detail?uuid=${uuid}`);
    expect(detail.published).toBe(true);

    // --- an HTTP input: its push URL and token are shown
    await page.getByRole('link', { name: 'Inputs & rules' }).click();
    await page.getByRole('button', { name: '+ New input' }).click();
    await page.locator('form.attr-form').getByLabel('Name', { exact: true }).fill('greenhouse-gw');
    await page.getByRole('button', { name: 'Create input' }).click();
    await page.waitForSelector('#created-push-token');
    const inputUuid = (await page.locator('#created-input-uuid').textContent())!.trim();
    const pushToken = (await page.locator('#created-push-token').textContent())!.trim();
    const pushText = (await page.locator('#created-push-url').textContent())!.trim();
    expect(inputUuid).toMatch(/^INEND[2-9A-Z]{8}$/);
    expect(pushToken.length).toBeGreaterThan(10);
    expect(pushText).toBe(`POST ${base}/api/v1/inends/push?uuid=${inputUuid}`);
    expect(await page.locator('#inputs-table').textContent()).toContain('greenhouse-gw');
    await shot(page, '05-input-created', { doc: 'input-created' });

    // --- a rule from the sample script, prefilled with the model's uuid
    await page.getByRole('link', { name: 'Write a rule for this input' }).click();
    const actions = page.locator('#code-actions');
    await actions.waitFor();
    expect(await actions.inputValue()).toContain(`rds:Save("${uuid}"`);
    expect(await page.locator(`input.src-box[value="${inputUuid}"]`).isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Validate' }).click();
    // The first validate of a fresh service may wait for a worker on a busy machine: more than poll's 1 s.
    await expect.poll(() => page.locator('form .status-line').first().textContent(), { timeout: 10_000 }).toContain('compiles');
    await shot(page, '06-rule-editor', { doc: 'rule-editor', fullPage: true });
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/#\/rules\/RULE[2-9A-Z]{8}$/);
    await page.waitForSelector('#rule-stats dl');

    // --- push data with the token the UI showed
    const temps = [21.5, 22, 22.75, 23.5, 22.25, 24];
    for (let i = 0; i < temps.length; i++) {
      const payload = [
        { tag: 'device_id', value: 'gh-1' }, { tag: 'temperature', value: temps[i] },
        { tag: 'humidity', value: 40 + i }, { tag: 'battery', value: 90 - i },
      ];
      const res = await fetch(`${base}/api/v1/inends/push?uuid=${encodeURIComponent(inputUuid)}`, {
        method: 'POST', headers: { Authorization: `Bearer ${pushToken}`, 'Content-Type': 'application/json' }, body: JSON.stringify(payload),
      });
      const body = (await res.json()) as { code: number; msg: string; data: { accepted: number; failed: number } };
      expect(res.status, body.msg).toBe(200);
      expect(body.data.failed, JSON.stringify(body.data)).toBe(0);
    }
    await page.getByRole('button', { name: 'Refresh stats' }).click();
    await expect.poll(() => page.locator('#rule-stats').textContent()).toMatch(/Successes\s*6/);
    await shot(page, '07-rule-stats', { fullPage: true });

    // --- the data view: table, latest record, chart
    await page.goto(`${base}/#/models/${uuid}/data`);
    const table = page.locator('#data-table');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(6);
    expect(await page.locator('#page-info').textContent()).toContain('6 records');
    const firstRow = await table.locator('tbody tr').first().locator('td').allTextContents();
    expect(firstRow[0]).toBe('6'); // newest first
    expect(firstRow).toContain('24');
    await expect.poll(() => page.locator('#latest').textContent()).toContain('24');
    expect(await page.locator('#latest').textContent()).toMatch(/create_at\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/);
    await page.waitForSelector('#chart canvas');
    await expect.poll(() => page.locator('#chart').getAttribute('aria-label')).toMatch(
      /^Chart of temperature over the last 24 h: 6 records, average per 10 min with its min–max band in 1 bucket, times in UTC$/,
    );
    await page.waitForTimeout(200);
    await shot(page, '08-data', { fullPage: true });

    // paging, order and field selection
    await page.getByLabel('Page size').fill('4');
    await page.getByLabel('Page size').press('Enter');
    await expect.poll(() => page.locator('#page-info').textContent()).toContain('of 2');
    await page.getByRole('button', { name: 'Next ›' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    await page.getByLabel('Order', { exact: true }).selectOption('asc');
    await expect.poll(async () => (await table.locator('tbody tr').first().locator('td').first().textContent())).toBe('1');
    await page.locator('.fields-pick summary').click();
    await page.locator('.fields-pick').getByLabel('humidity').uncheck();
    await expect.poll(() => table.locator('thead').textContent()).not.toContain('humidity');
    expect(await table.locator('thead').textContent()).toContain('temperature');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Live');
    await page.getByLabel('Live updates').uncheck();
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Off: Refresh to update');
    await page.getByLabel('Live updates').check();
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Live');

    // --- quick request: exact URLs with the secret encoded (for HMIs given only a URL), curl lines with
    // the secret in X-Api-Secret, and they work as given (Show reveals the secret the lines mask)
    await page.getByRole('link', { name: 'Quick request' }).click();
    await expect.poll(() => page.locator('#qr-secret').inputValue()).toBe(SECRET);
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    const enc = encodeURIComponent(SECRET);
    await expect.poll(() => page.locator('#qr-list-url').textContent()).toContain(`secrets=${enc}`);
    const listUrl = (await page.locator('#qr-list-url').textContent())!;
    const lastUrl = (await page.locator('#qr-last-url').textContent())!;
    expect(listUrl).toBe(`${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${enc}&current=1&size=25&order=desc`);
    expect(lastUrl).toBe(`${base}/api/v1/datacenter/queryLastData?uuid=${uuid}&secrets=${enc}`);
    const shq = (text: string): string => `'${text.replace(/'/g, "'\\''")}'`;
    const bareList = `${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&current=1&size=25&order=desc`;
    expect(await page.locator('#qr-list-url-curl').textContent()).toBe(`curl -s -H 'User-Agent: edge-datacenter' -H ${shq(`X-Api-Secret: ${SECRET}`)} ${shq(bareList)}`);
    const listed = (await (await fetch(listUrl)).json()) as { data: { total: number; records: Array<{ id: number }> } };
    expect(listed.data.total).toBe(6);
    const last = (await (await fetch(lastUrl)).json()) as { data: { id: number; temperature: number } };
    expect(last.data).toMatchObject({ id: 6, temperature: 24 });
    await page.getByRole('button', { name: 'Hide', exact: true }).click();
    await page.getByRole('button', { name: 'Send latest request' }).click();
    await expect.poll(() => page.locator('#qr-response').textContent()).toContain('"temperature": 24');
    await shot(page, '09-quick-request', { doc: 'quick-request', fullPage: true });

    // --- export with progress, saved as a download
    await page.getByRole('link', { name: 'Data', exact: true }).click();
    await page.waitForSelector('#data-table tbody tr td');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()]);
    await expect.poll(() => page.locator('#export-status').textContent()).toContain('Exported 6 records');
    const csv = readFileSync((await download.path())!, 'utf8').replace(/^\uFEFF/, '');
    const lines = csv.trim().split(/\r?\n/);
    expect(lines[0]).toBe('id,create_at,device_id,temperature,humidity,battery');
    expect(lines).toHaveLength(7);
    expect(download.suggestedFilename()).toMatch(/\.csv$/);
    await page.getByLabel('Format', { exact: true }).selectOption('jsonl');
    const [download2] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()]);
    const jsonl = readFileSync((await download2.path())!, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id: number });
    expect(jsonl.map((r) => r.id)).toEqual([1, 2, 3, 4, 5, 6]);
    await shot(page, '10-exported');

    // --- clear: the confirmation offers an export first, and needs the model's name
    await page.getByRole('button', { name: 'Clear all data…' }).click();
    const offered = page.getByRole('dialog');
    const exported = page.waitForEvent('download');
    await offered.getByRole('button', { name: 'Export now' }).click();
    expect((await exported).suggestedFilename()).toMatch(/^greenhouse-\d{8}-\d{6}\./);
    expect(await page.getByRole('dialog').count()).toBe(0);
    await page.getByRole('button', { name: 'Clear all data…' }).click();
    const clear = page.getByRole('dialog');
    expect(await clear.textContent()).toMatch(/export/i);
    const confirm = clear.getByRole('button', { name: 'Clear all data' });
    expect(await confirm.isDisabled()).toBe(true);
    await clear.getByRole('textbox').fill('greenhous');
    expect(await confirm.isDisabled()).toBe(true);
    await clear.getByRole('textbox').fill('greenhouse');
    await shot(page, '11-clear-confirm', { doc: 'clear-confirm' });
    await confirm.click();
    await expect.poll(() => page.locator('#data-table').textContent()).toContain('No records stored yet.');
    const res = await fetch(`${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${enc}`);
    expect(((await res.json()) as { data: { total: number } }).data.total).toBe(0);

    expect(env.problems).toEqual([]);
  });
});
