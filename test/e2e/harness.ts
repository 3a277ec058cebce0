/**
 * End-to-end harness: the service started as every in-process test starts it (test/support/service.ts:
 * temp data dir, loopback port 0, the test admin token, a data secret of its own) and Debian's headless
 * Chromium driven by playwright-core (never a downloaded browser).
 * The pages are served with the strict Content-Security-Policy the UI must live with, and every request
 * the page makes must stay on the service's origin.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ADMIN, startService, type TestService } from '../support/service.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const RESULTS = path.join(ROOT, 'test-results', 'ui');
export const DOC_IMAGES = path.join(ROOT, 'docs', 'images');
/** Has characters that must be URL-encoded (a space, `&`, `=`, `/`, `+`), so the quick-request URLs are checked for real. */
export const SECRET = 'e2e s3cr&t=1/+';
export const CSP = "default-src 'self'";

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
];

export interface Env {
  base: string;
  service: TestService;
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors, CSP violations and off-origin requests seen so far. */
  problems: string[];
  close(): Promise<void>;
}

/** The service with the harness secret and default limits; `ini`: extra config lines per section. */
export function startServer(ini?: Record<string, string[]>): Promise<TestService> {
  return startService({ secrets: [SECRET], logLevel: 'silent', ...(ini === undefined ? {} : { ini }) });
}

/**
 * Start the service and a browser page on it (expected 400/401/409 resource errors are not counted as
 * problems). The browser's time zone is UTC unless `timezoneId` names another; `ini` adds config lines.
 */
export async function setup(opts: { timezoneId?: string; ini?: Record<string, string[]> } = {}): Promise<Env> {
  const service = await startServer(opts.ini);
  const base = service.base;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
  const context = await browser.newContext({ viewport: { width: 1280, height: 860 }, acceptDownloads: true, locale: 'en-US', timezoneId: opts.timezoneId ?? 'UTC' });
  const problems: string[] = [];
  // The service itself must send the strict CSP on documents: fail on a page served without it.
  context.on('response', (response) => {
    const url = new URL(response.url());
    const isDocument = url.origin === base && (url.pathname === '/' || url.pathname.endsWith('.html'));
    const policy = response.headers()['content-security-policy'] ?? '';
    if (isDocument && !policy.startsWith(CSP)) problems.push(`CSP header missing on ${url.pathname}: "${policy}"`);
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    const text = m.text();
    if (/Content Security Policy|Refused to/i.test(text)) problems.push(`CSP: ${text}`);
    else if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of (400|401|409)/.test(text)) problems.push(`console: ${text}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(`${base}/`) && !u.startsWith('blob:') && !u.startsWith('data:')) problems.push(`off-origin request: ${u}`);
  });
  mkdirSync(RESULTS, { recursive: true });
  return {
    base, service, browser, context, page, problems,
    async close() {
      await browser.close().catch(() => undefined);
      await service.close();
    },
  };
}

/**
 * Save a screenshot into test-results/ui/; `doc` names a copy in docs/images/ (skipped on CI so a CI run
 * never rewrites tracked files).
 */
export async function shot(page: Page, name: string, opts: { fullPage?: boolean; doc?: string } = {}): Promise<string> {
  const file = path.join(RESULTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: opts.fullPage ?? false, animations: 'disabled', caret: 'hide' });
  if (opts.doc && !process.env.CI) {
    mkdirSync(DOC_IMAGES, { recursive: true });
    copyFileSync(file, path.join(DOC_IMAGES, `${opts.doc}.png`));
  }
  return file;
}

export async function signIn(page: Page, base: string, token = ADMIN): Promise<void> {
  await page.goto(`${base}/`);
  await page.evaluate('sessionStorage.clear()');
  await page.reload();
  await page.getByLabel('Admin token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Management API call from the test (to set up or inspect state), with the admin token. */
export async function api<T = unknown>(base: string, method: string, pathAndQuery: string, body?: unknown): Promise<T> {
  const res = await fetch(`${base}/api/v1/${pathAndQuery}`, {
    method,
    headers: { Authorization: `Bearer ${ADMIN}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as { code: number; msg: string; data: T };
  if (!res.ok || json.code !== 200) throw new Error(`${method} ${pathAndQuery}: ${res.status} ${json.msg}`);
  return json.data;
}

/** Controls without an accessible name (label, aria-label or aria-labelledby), and clickable divs/spans. */
export async function unnamedControls(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const bad = [];
    for (const el of document.querySelectorAll('input, select, textarea, button, a[href]')) {
      if (el.closest('[hidden]') || el.type === 'hidden' || el.getAttribute('aria-hidden') === 'true') continue;
      const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
        || ((el.tagName === 'BUTTON' || el.tagName === 'A') && el.textContent.trim());
      if (!named) bad.push(el.outerHTML.slice(0, 120));
    }
    for (const el of document.querySelectorAll('div[tabindex], span[tabindex], div[role=button], span[role=button]')) bad.push('non-button control: ' + el.outerHTML.slice(0, 120));
    return bad;
  })()`);
}
