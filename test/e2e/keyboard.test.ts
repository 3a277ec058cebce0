/**
 * Keyboard and screen-reader basics: sign in and work with the keyboard only, and every control on the
 * main screens has an accessible name.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { api, setup, unnamedControls, type Env } from './harness.js';

let env: Env;

beforeAll(async () => {
  env = await setup();
});

afterAll(async () => {
  await env?.close();
});

describe('keyboard and labels', () => {
  it('signs in and reaches the main controls with the keyboard; every control is named', async () => {
    const { page, base } = env;
    const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'kbd', description: '' });
    await api(base, 'POST', 'schema/properties/create', {
      schemaId: uuid, name: 'value', label: 'value', type: 'FLOAT', rw: 'R', unit: '', description: '',
      rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
    });
    await api(base, 'POST', `schema/publish?uuid=${uuid}`);

    await page.goto(`${base}/`);
    expect(await page.evaluate<string | null>('document.activeElement && document.activeElement.id')).toBe('token');
    await page.keyboard.type(ADMIN);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    expect(await unnamedControls(page)).toEqual([]);

    // the tree's fold button works from the keyboard and reports its state
    const toggle = page.getByRole('button', { name: 'Hide attributes of kbd' });
    await toggle.focus();
    await page.keyboard.press('Enter');
    const shown = page.getByRole('button', { name: 'Show attributes of kbd' });
    expect(await shown.getAttribute('aria-expanded')).toBe('false');
    expect(await page.evaluate<string | null>("document.activeElement && document.activeElement.getAttribute('aria-label')")).toBe('Show attributes of kbd');
    await page.keyboard.press('Enter');

    for (const tab of ['attributes', 'data', 'request', 'script']) {
      await page.goto(`${base}/#/models/${uuid}/${tab}`);
      await page.locator('.tabs a[aria-current="page"]').waitFor();
      await page.waitForTimeout(150);
      expect(await unnamedControls(page), tab).toEqual([]);
    }
    await page.goto(`${base}/#/models/new`);
    await page.getByRole('button', { name: 'Create model' }).waitFor();
    expect(await unnamedControls(page)).toEqual([]);
    await page.goto(`${base}/#/rules`);
    await page.getByRole('button', { name: '+ New input' }).click();
    expect(await unnamedControls(page)).toEqual([]);
    await page.goto(`${base}/#/rules/new?schema=${uuid}`);
    await page.locator('#code-actions').waitFor();
    expect(await unnamedControls(page)).toEqual([]);

    // the editor: Tab indents; Escape then Tab moves on
    await page.locator('#code-actions').fill('x');
    await page.locator('#code-actions').press('Home');
    await page.keyboard.press('Tab');
    expect(await page.locator('#code-actions').inputValue()).toBe('  x');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    expect(await page.evaluate<string | null>('document.activeElement && document.activeElement.id')).not.toBe('code-actions');

    // a confirmation dialog takes focus and Escape cancels it
    await page.goto(`${base}/#/models/${uuid}/data`);
    await page.getByRole('button', { name: 'Clear all data…' }).click();
    expect(await page.evaluate<string | null>("document.activeElement && document.activeElement.closest('dialog') ? 'in-dialog' : 'outside'")).toBe('in-dialog');
    await page.keyboard.press('Escape');
    expect(await page.getByRole('dialog').count()).toBe(0);
    expect(await page.evaluate<string | null>('document.activeElement && document.activeElement.id')).toBe('clear');

    expect(env.problems).toEqual([]);
  });
});
