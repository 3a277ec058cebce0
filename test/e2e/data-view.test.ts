/**
 * The Data tab as a dashboard, in a real Chromium set to Asia/Tokyo against the real service: the time
 * window picker drives queryAggregate and queryDataList (from/to/interval), the chart draws the
 * buckets, records pushed while the view is open arrive over the stream without a reload, the stream
 * reconnects and reloads the window after a gap, times follow the browser's zone or UTC, an empty model
 * shows an empty state, and no request URL holds the data secret.
 */
import type { Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { SECRET, api, setup, shot, signIn, type Env } from './harness.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const TOKYO_MS = 9 * HOUR;

let env: Env;
const seen: Array<{ url: string; headers: Promise<Record<string, string>> }> = [];

beforeAll(async () => {
  env = await setup({ timezoneId: 'Asia/Tokyo' });
  env.page.on('request', (r) => seen.push({ url: r.url(), headers: r.allHeaders() }));
  await signIn(env.page, env.base);
  await env.page.getByRole('button', { name: 'Sign out' }).waitFor();
});

afterAll(async () => {
  await env?.close();
});

interface Model {
  uuid: string;
  push(temp: number): Promise<void>;
}

/** A published model with a FLOAT `temp`, an HTTP input and a rule that stores pushes; `history` imported first. */
async function model(name: string, history: Array<{ atMs: number; temp: number }>): Promise<Model> {
  const { base } = env;
  const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name, description: 'e2e' });
  await api(base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'temp', type: 'FLOAT', unit: '℃' });
  await api(base, 'POST', `schema/publish?uuid=${uuid}`);
  if (history.length) {
    const res = await fetch(`${base}/api/v1/datacenter/importData?uuid=${uuid}&format=jsonl`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN}` },
      body: history.map((r) => JSON.stringify({ create_at: r.atMs, temp: r.temp })).join('\n'),
    });
    expect(res.status, await res.text()).toBe(200);
  }
  const input = await api<{ uuid: string; token: string }>(base, 'POST', 'inends/create', { name: `${name}-plc`, type: 'HTTP', description: '' });
  const actions = `Actions = { function(args) local t = json:J2T(args); local e = rds:Save("${uuid}", { temp = t.temp }); if (e ~= nil) then Throw(e); return 0; end; return true, args; end }`;
  await api(base, 'POST', 'rules/create', { name: `${name}-store`, description: '', fromSource: [input.uuid], actions, success: '', failed: '' });
  return {
    uuid,
    async push(temp) {
      const res = await fetch(`${base}/api/v1/inends/push?uuid=${input.uuid}&wait=durable`, {
        method: 'POST', headers: { Authorization: `Bearer ${input.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ temp }),
      });
      const body = (await res.json()) as { data: { accepted: number; failed: number } };
      expect(res.status).toBe(200);
      expect(body.data.failed).toBe(0);
    },
  };
}

/** The query parameters of the next request to `endpoint` made while `action` runs. */
async function paramsOf(endpoint: string, action: () => Promise<unknown>): Promise<URLSearchParams> {
  const [request] = await Promise.all([
    env.page.waitForRequest((r) => r.url().includes(`/api/v1/datacenter/${endpoint}?`) && new URL(r.url()).searchParams.has('from')),
    action(),
  ]);
  return new URL(request.url()).searchParams;
}

/** `5m` -> 300000 */
function intervalMs(text: string): number {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(text);
  expect(m, text).not.toBeNull();
  return Number(m![1]) * { ms: 1, s: 1000, m: MINUTE, h: HOUR, d: DAY }[m![2] as 'ms' | 's' | 'm' | 'h' | 'd'];
}

/** The bucket width fits the chart: at most one bucket per 3 px of plot, and not far fewer. */
function expectFitted(spanMs: number, interval: string, chartWidthPx: number): void {
  const buckets = spanMs / intervalMs(interval);
  const most = (chartWidthPx - 60) / 3;
  expect(buckets, `${interval} over ${spanMs} ms on ${chartWidthPx} px`).toBeLessThanOrEqual(most);
  expect(buckets, `${interval} over ${spanMs} ms on ${chartWidthPx} px`).toBeGreaterThan(most / 3);
}

/** `YYYY-MM-DD HH:MM:SS` of an instant at a UTC offset. */
const wallClock = (ms: number, offsetMs: number): string => new Date(ms + offsetMs).toISOString().slice(0, 19).replace('T', ' ');

describe('the data view', () => {
  it('draws the chosen window from queryAggregate, pages it with from/to and shows times in one zone', async () => {
    const { page, base } = env;
    const now = Date.now();
    // Two records three days ago, then one every 2 minutes for most of the last day, the newest 90 s
    // old (7 of them in the last 15 minutes, whichever second the page loads in).
    const wave = (i: number): number => Math.round((21 + 4 * Math.sin(i / 60) + 0.8 * Math.sin(i * 1.7)) * 100) / 100;
    const history = [
      { atMs: now - 3 * DAY, temp: 10 },
      { atMs: now - 3 * DAY + MINUTE, temp: 11 },
      ...Array.from({ length: 700 }, (_, i) => ({ atMs: now - 90_000 - (699 - i) * 2 * MINUTE, temp: wave(i) })),
    ];
    const boiler = await model('boiler', history);

    // the default window: the last 24 h, bucket width fitted to the chart
    const aggregate = page.waitForResponse((r) => r.url().includes('/datacenter/queryAggregate?'));
    const day = await paramsOf('queryDataList', () => page.goto(`${base}/#/models/${boiler.uuid}/data`));
    const answer = (await (await aggregate).json()) as { data: { interval_ms: number; buckets: unknown[] } };
    const aggUrl = new URL((await aggregate).url()).searchParams;
    expect(Date.parse(day.get('to')!) - Date.parse(day.get('from')!)).toBe(DAY);
    expect(aggUrl.get('from')).toBe(day.get('from'));
    expect(aggUrl.get('to')).toBe(day.get('to'));
    expect(aggUrl.get('fn')).toBe('min,max,avg,count');
    const width = await page.locator('#chart').evaluate((el) => el.clientWidth);
    expectFitted(DAY, aggUrl.get('interval')!, width);
    expect(answer.data.interval_ms).toBe(intervalMs(aggUrl.get('interval')!));
    const buckets = answer.data.buckets.length;
    expect(buckets).toBeGreaterThan(50);
    await page.waitForSelector('#chart canvas');
    await expect.poll(() => page.locator('#chart').getAttribute('data-buckets')).toBe(String(buckets));
    expect(await page.locator('#chart').getAttribute('aria-label')).toMatch(
      new RegExp(`^Chart of temp over the last 24 h: 700 records, average per \\d+ (min|h) with its min–max band in ${buckets} buckets, times in Asia/Tokyo, UTC\\+09:00$`),
    );
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/^of 28 · 700 records from /);
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Live');
    await page.waitForTimeout(300);
    await shot(page, 'data-view-window', { doc: 'data-view', fullPage: true });

    // the last 15 minutes: a narrower bucket, the table within the same window
    const quarter = await paramsOf('queryAggregate', () => page.getByLabel('Window').selectOption('15m'));
    expect(Date.parse(quarter.get('to')!) - Date.parse(quarter.get('from')!)).toBe(15 * MINUTE);
    expectFitted(15 * MINUTE, quarter.get('interval')!, width);
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/^of 1 · 7 records from /);
    await expect.poll(() => page.locator('#chart').getAttribute('data-buckets')).toBe('7');

    // the last 7 days: the two old records come in
    const week = await paramsOf('queryDataList', () => page.getByLabel('Window').selectOption('7d'));
    expect(Date.parse(week.get('to')!) - Date.parse(week.get('from')!)).toBe(7 * DAY);
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/ 702 records from /);
    // paging stays inside the window
    const page2 = await paramsOf('queryDataList', () => page.getByRole('button', { name: 'Next ›' }).click());
    expect(page2.get('current')).toBe('2');
    expect(Date.parse(page2.get('to')!) - Date.parse(page2.get('from')!)).toBe(7 * DAY);

    // a custom window, typed in the browser's zone (Tokyo): around the two old records
    await page.getByLabel('Window').selectOption('custom');
    const fromMs = Math.floor((now - 3 * DAY - HOUR) / 1000) * 1000;
    const toMs = Math.floor((now - 2 * DAY) / 1000) * 1000;
    await page.getByLabel('From (Asia/Tokyo, UTC+09:00)').fill(wallClock(fromMs, TOKYO_MS).replace(' ', 'T'));
    await page.getByLabel('To (Asia/Tokyo, UTC+09:00)').fill(wallClock(toMs, TOKYO_MS).replace(' ', 'T'));
    const custom = await paramsOf('queryAggregate', () => page.getByRole('button', { name: 'Apply' }).click());
    expect(custom.get('from')).toBe(new Date(fromMs).toISOString().replace('.000Z', 'Z'));
    expect(custom.get('to')).toBe(new Date(toMs).toISOString().replace('.000Z', 'Z'));
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/^of 1 · 2 records from /);
    const rows = page.locator('#data-table tbody tr');
    expect(await rows.count()).toBe(2);

    // one zone everywhere: the browser's, or UTC
    const newestOld = history[1].atMs;
    const createAt = rows.first().locator('td').nth(1);
    expect(await page.locator('#data-table thead').textContent()).toContain('create_at (Asia/Tokyo, UTC+09:00)');
    expect(await createAt.textContent()).toBe(wallClock(Math.floor(newestOld / 1000) * 1000, TOKYO_MS));
    await page.getByRole('checkbox', { name: 'Times in UTC' }).check();
    await expect.poll(() => page.locator('#data-table thead').textContent()).toContain('create_at (UTC)');
    expect(await createAt.textContent()).toBe(wallClock(Math.floor(newestOld / 1000) * 1000, 0));
    expect(await page.locator('#chart').getAttribute('aria-label')).toMatch(/times in UTC$/);
    expect(await page.locator('#tz-name').textContent()).toBe('Times: UTC');
    // The same instant; Chromium leaves out ':00' seconds from the value (1 run in 60 picks such a second).
    expect(Date.parse(`${await page.getByLabel('From (UTC)').inputValue()}Z`)).toBe(fromMs);
    expect(await page.locator('#latest').textContent()).toContain(wallClock(Math.floor(history.at(-1)!.atMs / 1000) * 1000, 0));
    await page.getByRole('checkbox', { name: 'Times in UTC' }).uncheck();
    await expect.poll(() => createAt.textContent()).toBe(wallClock(Math.floor(newestOld / 1000) * 1000, TOKYO_MS));

    // a window without records says so and offers all records
    await page.getByLabel('From (Asia/Tokyo, UTC+09:00)').fill(wallClock(now - 10 * DAY, TOKYO_MS).slice(0, 16).replace(' ', 'T'));
    await page.getByLabel('To (Asia/Tokyo, UTC+09:00)').fill(wallClock(now - 9 * DAY, TOKYO_MS).slice(0, 16).replace(' ', 'T'));
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(() => page.locator('#chart-empty').textContent()).toContain('No temp values in the chosen window.');
    expect(await page.locator('#chart').isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Show all records' }).click();
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/ 702 records$/);
    expect(await page.getByLabel('Window').inputValue()).toBe('all');
    await page.waitForSelector('#chart canvas');

    expect(env.problems).toEqual([]);
  });

  it('shows records pushed while the view is open without a reload, and stops the stream on leaving', async () => {
    const { page, base } = env;
    const now = Date.now();
    const tank = await model('tank', Array.from({ length: 30 }, (_, i) => ({ atMs: now - HOUR + i * MINUTE, temp: 40 + i })));
    await page.goto(`${base}/#/models/${tank.uuid}/data`);
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/ 30 records from /);
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Live');
    const streams = seen.filter((s) => s.url.includes(`/datacenter/stream?`) && s.url.includes(tank.uuid));
    expect(streams).toHaveLength(1);
    expect(new URL(streams[0].url).searchParams.get('after')).toBe(`${tank.uuid}:30`);
    expect((await streams[0].headers)['x-api-secret']).toBe(SECRET);

    // no polling: an idle view asks for nothing
    const queried: string[] = [];
    const onRequest = (r: Request): void => { if (/\/datacenter\/query/.test(r.url())) queried.push(r.url()); };
    page.on('request', onRequest);
    await page.waitForTimeout(2500);
    expect(queried).toEqual([]);

    const pushedAt = Date.now();
    await tank.push(99.5);
    await expect.poll(() => page.locator('#data-table tbody tr').first().locator('td').allTextContents(), { timeout: 3000 }).toEqual([
      '31', expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/), '99.5',
    ]);
    expect(Date.now() - pushedAt).toBeLessThan(3000);
    await expect.poll(() => page.locator('#latest').textContent()).toContain('99.5');
    await expect.poll(() => page.locator('#page-info').textContent()).toMatch(/ 31 records from /);
    await expect.poll(() => page.locator('#chart').getAttribute('aria-label')).toContain(': 31 records,');
    await tank.push(12.25);
    await expect.poll(() => page.locator('#data-table tbody tr').first().locator('td').first().textContent(), { timeout: 3000 }).toBe('32');
    expect(queried).toEqual([]);
    page.off('request', onRequest);

    // leaving the view ends the stream
    const [failed] = await Promise.all([
      page.waitForEvent('requestfailed', (r) => r.url().includes('/datacenter/stream?')),
      page.getByRole('link', { name: 'Attributes' }).click(),
    ]);
    expect(failed.url()).toContain(tank.uuid);
    expect(env.problems).toEqual([]);
  });

  it('reconnects with back-off after an error and reloads the window after a gap', async () => {
    const { page, base } = env;
    const pump = await model('pump', [{ atMs: Date.now() - MINUTE, temp: 1 }]);
    // the first stream answers 503: the page says it will retry and comes back
    await page.route('**/api/v1/datacenter/stream?**', (route) => route.fulfill({
      status: 503, contentType: 'application/json', headers: { 'Retry-After': '1' }, body: '{"code":503,"msg":"busy right now","data":null}',
    }), { times: 1 });
    await page.goto(`${base}/#/models/${pump.uuid}/data`);
    await expect.poll(() => page.locator('#live-status').textContent()).toMatch(/^Reconnecting in 1 s \(busy right now \(HTTP 503\)\)$/);
    await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 5000 }).toBe('Live');

    // the window cannot be read (the gateway restarts): the page retries it the same way
    await page.route((url) => url.pathname.endsWith('/datacenter/queryDataList') && url.searchParams.get('select') === 'id', (route) => route.fulfill({
      status: 503, contentType: 'application/json', body: '{"code":503,"msg":"starting up","data":null}',
    }), { times: 1 });
    await page.getByRole('button', { name: 'Refresh' }).click();
    await expect.poll(() => page.locator('#live-status').textContent()).toMatch(/^Reconnecting in 1 s \(starting up \(HTTP 503\)\)$/);
    await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 5000 }).toBe('Live');

    // the browser logs the 503s it was given
    for (let i = 0; i < 2; i++) {
      const logged = env.problems.indexOf('console: Failed to load resource: the server responded with a status of 503 (Service Unavailable)');
      expect(logged).toBeGreaterThanOrEqual(0);
      env.problems.splice(logged, 1);
    }

    // a gap: the records skipped are read again with the window
    let gapSentAt = Infinity;
    await page.route('**/api/v1/datacenter/stream?**', async (route) => {
      gapSentAt = Date.now();
      await route.fulfill({ status: 200, contentType: 'text/event-stream', body: `: stream open\n\nevent: gap\ndata: {"uuid":"${pump.uuid}","from":2,"to":9}\n\n` });
    }, { times: 1 });
    const reads: number[] = [];
    const onRequest = (r: Request): void => { if (r.url().includes(`/datacenter/queryAggregate?uuid=${pump.uuid}`)) reads.push(Date.now()); };
    page.on('request', onRequest);
    // drop the live stream so the next connection meets the gap
    await page.getByLabel('Live updates').uncheck();
    await page.getByLabel('Live updates').check();
    await expect.poll(() => reads.filter((t) => t > gapSentAt).length, { timeout: 5000 }).toBeGreaterThan(0);
    page.off('request', onRequest);
    await expect.poll(() => page.locator('#live-status').textContent(), { timeout: 5000 }).toBe('Live');
    expect(env.problems).toEqual([]);
  });

  it('shows an empty state for a model without records, then the first record', async () => {
    const { page, base } = env;
    const fresh = await model('fresh', []);
    await page.goto(`${base}/#/models/${fresh.uuid}/data`);
    await expect.poll(() => page.locator('#chart-empty').textContent()).toContain('No records yet.');
    expect(await page.locator('#chart canvas').count()).toBe(0);
    expect(await page.locator('#data-table').textContent()).toContain('No records stored yet.');
    expect(await page.locator('#latest').textContent()).toContain('No record yet.');
    expect(await page.locator('main').textContent()).not.toContain('1970');
    await expect.poll(() => page.locator('#live-status').textContent()).toBe('Live');
    await shot(page, 'data-view-empty', { doc: 'data-view-empty' });

    await fresh.push(7.5);
    await expect.poll(() => page.locator('#data-table tbody tr').first().locator('td').allTextContents(), { timeout: 3000 }).toContain('7.5');
    await page.waitForSelector('#chart canvas', { timeout: 5000 });
    expect(await page.locator('#chart-empty').isHidden()).toBe(true);
    expect(env.problems).toEqual([]);
  });

  it('parses the event stream the same wherever the network splits it', async () => {
    const text = ': stream open\r\n\r\nevent: record\r\nid: A:1\r\ndata: {"a":1}\r\n\r\nevent: gap\ndata: {"from":2,\ndata: "to":3}\n\n: keepalive\n\n';
    // A string, so vitest's transform leaves the browser's own dynamic import alone.
    const splits = await env.page.evaluate<string[]>(`(async (body) => {
      const { eventParser } = await import('/js/data/live.js');
      const out = [];
      for (let i = 0; i <= body.length; i++) {
        const events = [];
        const parse = eventParser((e) => events.push(e));
        parse(body.slice(0, i));
        parse(body.slice(i));
        out.push(JSON.stringify(events));
      }
      return out;
    })(${JSON.stringify(text)})`);
    const expected = JSON.stringify([
      { event: 'record', id: 'A:1', data: '{"a":1}' },
      { event: 'gap', id: 'A:1', data: '{"from":2,\n"to":3}' },
    ]);
    expect(new Set(splits)).toEqual(new Set([expected]));
  });

  it('never puts the secret in a request URL', async () => {
    const encodings = [SECRET, encodeURIComponent(SECRET), new URLSearchParams({ s: SECRET }).toString().slice(2)];
    expect(seen.length).toBeGreaterThan(20);
    for (const { url } of seen) {
      for (const form of [...encodings, ADMIN]) expect(url, url).not.toContain(form);
      expect(url).not.toMatch(/[?&](secrets?|token)=/);
    }
    const data = seen.filter((s) => /\/api\/v1\/datacenter\/(query\w+|stream)\?/.test(s.url));
    expect(data.length).toBeGreaterThan(20);
    for (const d of data) expect((await d.headers)['x-api-secret'], d.url).toBe(SECRET);
  });
});
