/**
 * Backup, restore and import (contract 15) in a real browser: a model's backup downloaded from the
 * Storage tab, restored over the model after it changed (the confirmation names what is replaced),
 * a CSV imported on the Data tab, and bad files reported with their line, nothing changed. Every upload
 * carries the admin token in the Authorization header, never in a URL.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN } from '../support/service.js';
import { api, setup, shot, signIn, type Env } from './harness.js';

let env: Env;
let uuid: string;
/** Every request the page made: URL and its Authorization header. */
const requests: Array<{ url: string; method: string; auth: string | undefined }> = [];

/** Rows appended through the API, as the import of a CSV export. */
async function importCsv(csv: string): Promise<void> {
  const res = await fetch(`${env.base}/api/v1/datacenter/importData?uuid=${uuid}&format=csv`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN}` },
    body: csv,
  });
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Notices from earlier steps would cover the screenshots. */
async function dismissNotices(): Promise<void> {
  for (const b of await env.page.getByRole('button', { name: 'Dismiss notification' }).all()) await b.click();
}

async function storedRecords(): Promise<number> {
  return (await api<{ usage: { records: number } }>(env.base, 'GET', `schema/detail?uuid=${uuid}`)).usage.records;
}

beforeAll(async () => {
  env = await setup();
  uuid = (await api<{ uuid: string }>(env.base, 'POST', 'schema/create', { name: 'boiler', description: '' })).uuid;
  await api(env.base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'temp', type: 'FLOAT' });
  await api(env.base, 'POST', 'schema/properties/create', { schemaId: uuid, name: 'note', type: 'STRING' });
  await api(env.base, 'POST', `schema/publish?uuid=${uuid}`);
  await importCsv('id,create_at,temp,note\n1,2026-01-01T00:00:01Z,20.5,first\n2,2026-01-01T00:00:02Z,21.5,"with, comma"\n3,2026-01-01T00:00:03Z,22.5,third\n');
  env.page.on('request', (r) => requests.push({ url: r.url(), method: r.method(), auth: r.headers().authorization }));
}, 60_000);

afterAll(async () => env?.close());

describe('backup, restore and import in the UI', () => {
  /** The downloaded backup, as the file the user picks again. */
  let backup = { name: '', mimeType: 'application/x-ndjson', buffer: Buffer.alloc(0) };

  it('downloads a backup of the model from the Storage tab', async () => {
    const { page, base } = env;
    await signIn(page, base);
    await page.goto(`${base}/#/models/${uuid}/storage`);
    await page.getByRole('heading', { name: 'Backup and restore' }).waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download backup' }).click()]);
    expect(download.url()).toMatch(/^blob:/);
    expect(download.suggestedFilename()).toMatch(/^boiler-\d{8}-\d{6}\.backup\.jsonl$/);
    backup = { ...backup, name: download.suggestedFilename(), buffer: readFileSync((await download.path())!) };
    const lines = backup.buffer.toString('utf8').trimEnd().split('\n');
    expect(JSON.parse(lines[0])).toMatchObject({ format: 'edge-datacenter-backup/1', records: 3, model: { uuid } });
    expect(lines.slice(1).map((l) => JSON.parse(l).note)).toEqual(['first', 'with, comma', 'third']);
    await expect.poll(() => page.locator('section.transfers .status-line').first().textContent()).toMatch(/^Backed up 3 records \(.*\) to boiler-.*\.backup\.jsonl\.$/);
  }, 60_000);

  it('restores it over the changed model after a confirmation naming what is replaced', async () => {
    const { page } = env;
    await importCsv('id,create_at,temp,note\n9,2026-01-01T00:00:09Z,30,later\n');
    expect(await storedRecords()).toBe(4);
    await page.getByLabel('Backup file').setInputFiles(backup);
    await page.getByRole('button', { name: 'Restore…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Replace "boiler" with the backup?' });
    await dialog.waitFor();
    expect(await dialog.textContent()).toContain('replaces it and its 4 stored records');
    expect(await dialog.textContent()).toContain('with 3 records');
    const replace = dialog.getByRole('button', { name: 'Replace with the backup' });
    expect(await replace.isDisabled()).toBe(true);
    await dialog.getByLabel('Type boiler to confirm').fill('boiler');
    await shot(page, 'restore-confirm', { doc: 'restore-confirm' });
    await replace.click();
    await page.getByText(/^Restored 3 records into model "boiler"/).waitFor();
    expect(await storedRecords()).toBe(3);
    // The tab shows the restored model's figures (it re-renders after restoring this model).
    await expect.poll(() => page.locator('#usage-records').textContent()).toBe('3');
  }, 60_000);

  it('a cancelled confirmation changes nothing; a bad backup names its line and changes nothing', async () => {
    const { page } = env;
    await page.getByLabel('Backup file').setInputFiles(backup);
    await page.getByRole('button', { name: 'Restore…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    await page.getByText('Restore not started: nothing was changed.').waitFor();

    const lines = backup.buffer.toString('utf8').trimEnd().split('\n');
    lines[3] = lines[3].replace('"temp":22.5', '"temp":"hot"');
    await page.getByLabel('Backup file').setInputFiles({ name: 'edited.backup.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(`${lines.join('\n')}\n`) });
    await page.getByRole('button', { name: 'Restore…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByLabel('Type boiler to confirm').fill('boiler');
    await dialog.getByRole('button', { name: 'Replace with the backup' }).click();
    const error = page.locator('.restore .status-line.error');
    await error.waitFor();
    expect(await error.textContent()).toBe("Restore failed: line 4: attribute 'temp' expects FLOAT, got \"hot\" (HTTP 400). Nothing was changed.");
    expect(await storedRecords()).toBe(3);
    await dismissNotices();
    await shot(page, 'backup-restore', { doc: 'backup-restore', fullPage: true });
  }, 60_000);

  it('imports a CSV on the Data tab; a bad row is reported with its line and nothing is added', async () => {
    const { page, base } = env;
    await page.goto(`${base}/#/models/${uuid}/data`);
    await page.getByRole('heading', { name: 'Import' }).waitFor();
    const good = 'id,create_at,temp,note\n,2026-01-02T00:00:00Z,23.5,imported one\n,2026-01-02T00:00:01Z,24.5,imported two\n';
    await page.getByLabel('File to import').setInputFiles({ name: 'rows.csv', mimeType: 'text/csv', buffer: Buffer.from(good) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    await page.getByText('Imported 2 rows from rows.csv as records 4–5.').waitFor();
    expect(await storedRecords()).toBe(5);
    // The imported rows are from January: the default window (24 h) does not show them, all records do.
    await page.getByLabel('Window', { exact: true }).selectOption('all');
    await expect.poll(() => page.locator('#page-info').textContent()).toContain('5 records');

    const bad = 'id,create_at,temp,note\n,2026-01-03T00:00:00Z,25.5,fine\n,2026-01-03T00:00:01Z,warm,broken\n';
    await page.getByLabel('File to import').setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from(bad) });
    await page.getByRole('button', { name: 'Import', exact: true }).click();
    const error = page.locator('section[aria-labelledby="import-title"] .status-line.error');
    await error.waitFor();
    expect(await error.textContent()).toMatch(/^Import failed: line 3: .*temp.* \(HTTP 400\)\. Nothing was changed\.$/);
    expect(await storedRecords()).toBe(5);
    await dismissNotices();
    await error.scrollIntoViewIfNeeded();
    await shot(page, 'import-error', { doc: 'import-error' });
  }, 60_000);

  it('every upload carried the admin token in the header, none in a URL', () => {
    const uploads = requests.filter((r) => r.method === 'POST' && /datacenter\/(restore|importData)/.test(r.url));
    expect(uploads.length).toBe(4);
    for (const r of requests) expect(r.url).not.toContain(ADMIN);
    for (const r of uploads) expect(r.auth).toBe(`Bearer ${ADMIN}`);
    expect(env.problems).toEqual([]);
  });
});
