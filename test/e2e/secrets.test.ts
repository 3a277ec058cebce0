/**
 * The data secret never travels in a URL: every request the page makes while the user reads the Data tab
 * (history table, latest record, paging), exports (CSV and JSON Lines) and sends the quick requests is
 * recorded in a real Chromium; no URL holds the secret or the admin token, the data queries carry the
 * secret in X-Api-Secret, and the downloads come from blob: URLs (a link cannot carry a header).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { SECRET, api, setup, shot, signIn, type Env } from './harness.js';

interface Seen {
  url: string;
  headers: Record<string, string>;
}

let env: Env;

beforeAll(async () => {
  env = await setup();
});

afterAll(async () => {
  await env?.close();
});

/** A published model with `count` records, written through an HTTP input and a rule. */
async function modelWithRecords(base: string, count: number): Promise<string> {
  const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'secrets', description: 'e2e' });
  await api(base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'temp', type: 'FLOAT' });
  await api(base, 'POST', `schema/publish?uuid=${uuid}`);
  const input = await api<{ uuid: string; token: string }>(base, 'POST', 'inends/create', { name: 'plc', type: 'HTTP', description: '' });
  const actions = `Actions = { function(args) local t = json:J2T(args); local e = rds:Save("${uuid}", { temp = t.temp }); if (e ~= nil) then Throw(e); return 0; end; return true, args; end }`;
  await api(base, 'POST', 'rules/create', { name: 'store', description: '', fromSource: [input.uuid], actions, success: '', failed: '' });
  const body = Array.from({ length: count }, (_, i) => JSON.stringify({ temp: 20 + i })).join('\n');
  const res = await fetch(`${base}/api/v1/inends/push?uuid=${input.uuid}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${input.token}`, 'Content-Type': 'application/x-ndjson' },
    body,
  });
  expect(res.status, await res.text()).toBe(200);
  return uuid;
}

describe('secrets stay out of URLs', () => {
  it('the data, history, export and quick-request views send the secret in X-Api-Secret only', async () => {
    const { page, base } = env;
    const uuid = await modelWithRecords(base, 30);
    const seen: Array<Promise<Seen>> = [];
    page.on('request', (r) => seen.push(r.allHeaders().then((headers) => ({ url: r.url(), headers }))));
    const pageUrls: string[] = [];
    page.on('framenavigated', (f) => pageUrls.push(f.url()));

    await signIn(page, base);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${base}/#/models/${uuid}/data`);
    const table = page.locator('#data-table');
    await expect.poll(() => table.locator('tbody tr').count()).toBe(25);
    await expect.poll(() => page.locator('#page-info').textContent()).toContain('30 records');
    // history: paging and order
    await page.getByRole('button', { name: 'Next ›' }).click();
    await expect.poll(() => table.locator('tbody tr').count()).toBe(5);
    await page.getByLabel('Order', { exact: true }).selectOption('asc');
    await expect.poll(() => table.locator('tbody tr').first().locator('td').first().textContent()).toBe('1');

    // export: both formats come from blob: URLs, never from a link with a credential in it
    for (const format of ['csv', 'jsonl']) {
      await page.getByLabel('Format', { exact: true }).selectOption(format);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export' }).click()]);
      expect(download.url()).toMatch(/^blob:/);
      await expect.poll(() => page.locator('#export-status').textContent()).toContain('Exported 30 records');
    }

    // quick request: the page's own requests use the header too
    await page.getByRole('link', { name: 'Quick request' }).click();
    await page.getByRole('button', { name: 'Send history request' }).click();
    await expect.poll(() => page.locator('#qr-response').textContent()).toContain('"total": 30');
    await page.getByRole('button', { name: 'Send latest request' }).click();
    await expect.poll(() => page.locator('#qr-response').textContent()).toContain('"id": 30');

    const requests = await Promise.all(seen);
    const encodings = [SECRET, encodeURIComponent(SECRET), new URLSearchParams({ s: SECRET }).toString().slice(2)];
    for (const { url } of requests) {
      for (const form of [...encodings, ADMIN]) expect(url, `a request URL holds a credential: ${url}`).not.toContain(form);
      expect(url).not.toMatch(/[?&](secrets?|token)=/);
    }
    for (const url of pageUrls) for (const form of [...encodings, ADMIN]) expect(url).not.toContain(form);

    const queries = requests.filter((r) => /\/api\/v1\/datacenter\/query(DataList|LastData)\?/.test(r.url));
    expect(queries.length).toBeGreaterThanOrEqual(8);
    for (const q of queries) {
      expect(q.headers['x-api-secret'], q.url).toBe(SECRET);
      expect(q.headers.authorization, q.url).toBeUndefined();
    }
    const exports = requests.filter((r) => r.url.includes('/api/v1/datacenter/exportData?'));
    expect(exports).toHaveLength(2);
    for (const e of exports) expect(e.headers.authorization).toBe(`Bearer ${ADMIN}`);

    expect(env.problems).toEqual([]);
  });

  it('the Quick request tab shows the secret masked until Show, and its Copy buttons copy the real lines', async () => {
    const { page, base, context } = env;
    const uuid = await modelWithRecords(base, 1);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await signIn(page, base);
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${base}/#/models/${uuid}/request`);
    const listUrl = page.locator('#qr-list-url');
    await expect.poll(() => listUrl.textContent()).toContain('secrets=');
    // the secret is read (the field holds it) before the page is checked
    await expect.poll(() => page.locator('#qr-secret').inputValue()).toBe(SECRET);

    const forms = [SECRET, encodeURIComponent(SECRET)];
    const visible = await page.evaluate<string>('document.body.innerText');
    const markup = await page.evaluate<string>('document.documentElement.outerHTML');
    for (const form of forms) {
      expect(visible, 'the page shows the secret').not.toContain(form);
      expect(markup, 'the markup holds the secret').not.toContain(form);
    }
    expect(await listUrl.textContent()).toContain('secrets=••••••••&current=1');
    expect(await page.locator('#qr-list-url-curl').textContent()).toContain("'X-Api-Secret: ••••••••'");
    await shot(page, 'quick-request-masked', { fullPage: true });

    const copied = async (name: string): Promise<string> => {
      await page.evaluate('navigator.clipboard.writeText("")');
      await page.getByRole('button', { name }).click();
      await expect.poll(() => page.evaluate<string>('navigator.clipboard.readText()')).not.toBe('');
      return page.evaluate<string>('navigator.clipboard.readText()');
    };
    const enc = encodeURIComponent(SECRET);
    const bareList = `${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&current=1&size=25&order=desc`;
    const shq = (text: string): string => `'${text.replace(/'/g, "'\\''")}'`;
    expect(await copied('Copy the History: queryDataList URL')).toBe(`${base}/api/v1/datacenter/queryDataList?uuid=${uuid}&secrets=${enc}&current=1&size=25&order=desc`);
    expect(await copied('Copy the History: queryDataList curl line')).toBe(`curl -s -H 'User-Agent: edge-datacenter' -H ${shq(`X-Api-Secret: ${SECRET}`)} ${shq(bareList)}`);
    expect(await copied('Copy the Latest record: queryLastData URL')).toBe(`${base}/api/v1/datacenter/queryLastData?uuid=${uuid}&secrets=${enc}`);

    // Show reveals the secret in the field and the lines; Hide masks them again
    await page.getByRole('button', { name: 'Show', exact: true }).click();
    await expect.poll(() => listUrl.textContent()).toContain(`secrets=${enc}`);
    expect(await page.locator('#qr-last-url-curl').textContent()).toContain(shq(`X-Api-Secret: ${SECRET}`));
    expect(await page.locator('#qr-secret').getAttribute('type')).toBe('text');
    await page.getByRole('button', { name: 'Hide', exact: true }).click();
    await expect.poll(() => page.evaluate<string>('document.body.innerText')).not.toContain(enc);
    expect(await page.evaluate<string>('document.body.innerText')).not.toContain(SECRET);

    expect(env.problems).toEqual([]);
  });
});
