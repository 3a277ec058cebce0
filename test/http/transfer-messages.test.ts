/**
 * What the transfer doors say about a wrong request, in the words of the door it came through:
 * `importData&format=xlsx` names the parameter as every query parameter's 400 does (docs/api.md), the
 * CLI's `import --format xlsx` names its flag, and the CLI's `restore` of a model that exists names its
 * flag `--replace`, not the HTTP parameter `replace=true`.
 */
import { spawnSync } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { ModelTransfers } from '../../src/models/backup.js';
import { openData } from '../../src/server.js';
import { admin, publishedModel } from '../support/client.js';
import { startService, writeTestConfig, type TestService } from '../support/service.js';

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

describe('importData over HTTP', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ logLevel: 'silent' });
  }, 60_000);
  afterAll(async () => svc?.close());

  it("a format it cannot read: 400 parameter 'format' must be csv or jsonl", async () => {
    const model = await publishedModel(svc.port, 'imports', ['v']);
    const r = await admin(svc.port, 'POST', `/api/v1/datacenter/importData?uuid=${model}&format=xlsx`, 'id,create_at,v\n');
    expect(r.status).toBe(400);
    expect(r.body.msg).toBe(`parameter 'format' must be csv or jsonl, got "xlsx"`);
  });
});

describe('the offline CLI', () => {
  let dir: string;
  let file: string;
  let backupFile: string;
  beforeAll(async () => {
    ({ dir, file } = await writeTestConfig());
    const { config } = await loadConfig({ file, env: {} });
    const { store, registry } = await openData(config);
    const model = await registry.create({ name: 'kept' });
    await registry.createAttribute({ schemaId: model.uuid, name: 'v', type: 'INTEGER' });
    await registry.publish(model.uuid);
    let backup = '';
    for await (const chunk of new ModelTransfers(store, registry).backup(model.uuid).chunks) backup += chunk;
    await store.close();
    backupFile = join(dir, 'kept.ndjson');
    await writeFile(backupFile, backup);
  }, 60_000);
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  it('restore of a model that exists says to give --replace', () => {
    const r = spawnSync(process.execPath, [CLI, 'restore', '--in', backupFile, '--config', file], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('restore with --replace to replace it and its records');
    expect(r.stderr).not.toContain('replace=true');
  });

  it('import --format xlsx names the flag', () => {
    const r = spawnSync(process.execPath, [CLI, 'import', '--model', 'SCHEMA22222222', '--format', 'xlsx', '--in', backupFile, '--config', file], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe('edge-datacenter: --format must be csv or jsonl, got "xlsx"\n');
  });
});
