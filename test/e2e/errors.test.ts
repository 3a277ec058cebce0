/**
 * The error paths a user meets: a wrong token at sign-in, attribute validation shown at the field (client
 * and server), a broken script shown at its line, and a script failing at run time in the rule's stats.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { api, setup, shot, signIn, type Env } from './harness.js';

let env: Env;

beforeAll(async () => {
  env = await setup();
});

afterAll(async () => {
  await env?.close();
});

describe('sign-in', () => {
  it('shows the server message for a wrong token and keeps the user on the sign-in form', async () => {
    const { page, base } = env;
    await signIn(page, base, 'not-the-token');
    const err = page.locator('#token-err');
    await err.waitFor();
    expect(await err.textContent()).toMatch(/^Wrong token: .+/);
    expect(await page.getByLabel('Admin token').getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).not.toContain('not-the-token');
    await shot(page, 'e1-wrong-token', { doc: 'sign-in-wrong-token' });
    // an empty token is refused before any call
    await page.getByLabel('Admin token').fill('');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await err.textContent()).toBe('Enter the admin token.');
    // the right one gets in; signing out forgets it
    await page.getByLabel('Admin token').fill(ADMIN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Admin token').waitFor();
    expect(await page.evaluate<string[]>('Object.values(sessionStorage)')).not.toContain(ADMIN);
  });
});

describe('attribute validation', () => {
  it('shows client and server validation errors at the field', async () => {
    const { page, base } = env;
    const { uuid } = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'validation', description: 'e2e' });
    await api(base, 'POST', 'schema/properties/create', {
      schemaId: uuid, name: 'temp', label: 'temp', type: 'FLOAT', rw: 'R', unit: '', description: '',
      rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
    });
    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/attributes`);
    await page.getByRole('button', { name: '+ Add attribute' }).click();
    const form = page.locator('form.attr-form');
    const name = form.getByLabel('Name', { exact: true });
    const nameErr = form.locator(`#${await name.getAttribute('id')}-err`);
    const save = form.getByRole('button', { name: 'Add attribute' });

    // a bad name, checked in the browser
    await name.fill('1 bad name');
    await save.click();
    expect(await nameErr.isVisible()).toBe(true);
    expect(await nameErr.textContent()).toMatch(/letters, digits and _/i);
    expect(await name.getAttribute('aria-invalid')).toBe('true');
    expect(await page.evaluate<string | null>("document.activeElement && document.activeElement.getAttribute('name')")).toBe('name');
    await shot(page, 'e2-bad-attribute-name', { doc: 'attribute-validation' });

    // a reserved name
    await name.fill('create_at');
    await save.click();
    expect(await nameErr.textContent()).toMatch(/reserved/);

    // a duplicate differing only in case: refused by the server, its message shown at the name field
    await name.fill('TEMP');
    await save.click();
    await expect.poll(() => nameErr.textContent()).toMatch(/TEMP/);
    expect(await nameErr.isVisible()).toBe(true);
    expect(await form.locator('.status-line.error').count()).toBe(0);

    // a default that does not fit the type
    await name.fill('count');
    await form.getByLabel('Type').selectOption('INTEGER');
    await form.getByLabel('Default value', { exact: true }).fill('1.5');
    await save.click();
    const dv = form.getByLabel('Default value', { exact: true });
    expect(await dv.getAttribute('aria-invalid')).toBe('true');
    expect(await nameErr.isVisible()).toBe(false);

    // fixed: it is added and shows in the tree
    await dv.fill('3');
    await save.click();
    await page.waitForSelector('#attr-table tr[data-attr="count"]');
    expect(await page.locator('#model-tree').textContent()).toContain('count');

    // publishing a model without attributes is refused with the server message (another model)
    const empty = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'empty', description: '' });
    const res = await fetch(`${base}/api/v1/schema/publish?uuid=${empty.uuid}`, { method: 'POST', headers: { Authorization: `Bearer ${ADMIN}` } });
    expect(res.status).toBe(400);
  });
});

describe('rule scripts', () => {
  it('shows a broken script error at its line, and run-time errors in the stats', async () => {
    const { page, base } = env;
    const model = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'scripts', description: '' });
    await api(base, 'POST', 'schema/properties/create', {
      schemaId: model.uuid, name: 'level', label: 'level', type: 'INTEGER', rw: 'R', unit: '', description: '',
      rule: { defaultValue: 0, min: 0, max: 0, trueLabel: '', falseLabel: '', round: 0 },
    });
    await api(base, 'POST', `schema/publish?uuid=${model.uuid}`);
    const input = await api<{ uuid: string; token: string }>(base, 'POST', 'inends/create', { name: 'script-in', type: 'HTTP', description: '', config: {} });
    await signIn(page, base);
    await page.goto(`${base}/#/rules/new?schema=${model.uuid}&input=${input.uuid}`);
    const actions = page.locator('#code-actions');
    await actions.waitFor();

    // a syntax error on line 3
    await actions.fill('Actions = {\n  function(args)\n    local x = = 1\n    return true, args\n  end\n}\n');
    await page.getByRole('button', { name: 'Validate' }).click();
    const codeErr = page.locator('.code-editor').first().locator('.code-error');
    await codeErr.waitFor();
    expect(await codeErr.textContent()).toMatch(/^Line 3: /);
    expect(await page.locator('.code-editor').first().locator('.gutter span.err').textContent()).toBe('3');
    expect(await page.locator('.code-editor').first().locator('pre.hl .ln.err').count()).toBe(1);
    expect(await actions.getAttribute('aria-invalid')).toBe('true');
    await shot(page, 'e3-script-error', { doc: 'rule-script-error' });
    // saving is refused while the script does not compile
    await page.getByRole('button', { name: 'Create rule' }).click();
    await codeErr.waitFor();
    expect(page.url()).toContain('#/rules/new');
    // typing clears the mark
    await actions.press('End');
    await actions.type(' ');
    expect(await codeErr.isVisible()).toBe(false);

    // a script that compiles but fails at run time: an unknown attribute
    await actions.fill(`Actions = {\n  function(args)\n    local err = rds:Save("${model.uuid}", { nope = 1 })\n    if err ~= nil then\n      Throw(err)\n      return 0\n    end\n    return true, args\n  end\n}\n`);
    await page.getByRole('button', { name: 'Create rule' }).click();
    await page.waitForURL(/#\/rules\/RULE[2-9A-Z]{8}$/);
    await page.waitForSelector('#rule-stats dl');
    const res = await fetch(`${base}/api/v1/inends/push?uuid=${input.uuid}`, {
      method: 'POST', headers: { Authorization: `Bearer ${input.token}`, 'Content-Type': 'application/json' }, body: '[]',
    });
    expect(res.status).toBe(200);
    await page.getByRole('button', { name: 'Refresh stats' }).click();
    await expect.poll(() => page.locator('#rule-stats').textContent()).toMatch(/Failures\s*1/);
    expect(await page.locator('#rule-stats ol.errors').textContent()).toContain('nope');
    await shot(page, 'e4-rule-stats-errors', { doc: 'rule-stats-errors', fullPage: true });

    // the server's message is shown when a call fails: a query on a draft model answers 409
    const draft = await api<{ uuid: string }>(base, 'POST', 'schema/create', { name: 'draft-model', description: '' });
    await page.goto(`${base}/#/models/${draft.uuid}/request`);
    await page.getByRole('button', { name: 'Send history request' }).click();
    await expect.poll(() => page.locator('#qr-response').textContent()).toMatch(/^Error: .+\(HTTP 409\)$/);

    expect(env.problems).toEqual([]);
  });
});
