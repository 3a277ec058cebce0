/**
 * One service per data directory and per address: a second instance on the same data directory, or on
 * the same host:port, exits 1 with one line that names what is taken; after a kill -9 the next start takes
 * the stale lock over. In process, a second Store on an open directory is refused.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configIn, serveExpectingExit, setupPipeline, startService } from './support/service.mjs';
import { Store } from '../../src/store/store.js';
import { storeOptions } from '../../src/store/base/constants.js';
import { StateError } from '../../src/errors.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-single-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('a single instance per data directory and address', () => {
  it('a second service on the same data directory exits 1 naming it; a kill -9 leaves a lock the next start takes over', async () => {
    const { file, dataDir } = configIn(tmp, 'a');
    const first = await startService(file);
    const second = await serveExpectingExit(file);
    expect(second.code).toBe(1);
    expect(second.stderr.trim().split('\n')).toHaveLength(1);
    expect(second.stderr).toContain(path.join(dataDir, 'store'));
    expect(second.stderr).toContain(String(first.child.pid));
    await first.kill('SIGKILL');
    const again = await startService(file);
    expect((await fetch(`${again.base}/healthz`)).status).toBe(200);
    await again.kill('SIGTERM');
  }, 60_000);

  it('a second service on the same host:port exits 1 naming the address', async () => {
    const first = await startService(configIn(tmp, 'b1').file);
    const port = new URL(first.base).port;
    const { file } = configIn(tmp, 'b2');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('port = 0', `port = ${port}`));
    const second = await serveExpectingExit(file);
    expect(second.code).toBe(1);
    expect(second.stderr).toContain(`127.0.0.1:${port}`);
    await first.kill('SIGTERM');
  }, 60_000);

  it('in one process, a second Store on an open directory is refused until the first closes', async () => {
    const rootDir = path.join(tmp, 'c');
    const store = await Store.open(storeOptions({ rootDir }));
    await expect(Store.open(storeOptions({ rootDir }))).rejects.toThrow(StateError);
    await expect(Store.open(storeOptions({ rootDir }))).rejects.toThrow(rootDir);
    await store.close();
    const again = await Store.open(storeOptions({ rootDir }));
    await again.abandon();
    await (await Store.open(storeOptions({ rootDir }))).close();
  });
});

describe('models.json missing beside model data', () => {
  it('the service refuses to start, in one line that names the file and says how to recover', async () => {
    const { file, dataDir } = configIn(tmp, 'd');
    const svc = await startService(file);
    await setupPipeline(svc.base);
    await svc.kill('SIGTERM');
    fs.rmSync(path.join(dataDir, 'models.json'));
    const refused = await serveExpectingExit(file);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(path.join(dataDir, 'models.json'));
    expect(refused.stderr).toContain('restore models.json from a backup');
    fs.rmSync(path.join(dataDir, 'store'), { recursive: true });
    const fresh = await startService(file);
    await fresh.kill('SIGTERM');
  }, 60_000);
});

describe('damaged metadata files', () => {
  it.each(['rules.json', 'inends.json', 'models.json'])('a corrupt %s stops the start with one line naming the file', async (name) => {
    const { file, dataDir } = configIn(tmp, `meta-${name}`);
    const svc = await startService(file);
    await setupPipeline(svc.base);
    await svc.kill('SIGTERM');
    fs.writeFileSync(path.join(dataDir, name), '{"version": 1, "rules": [');
    const refused = await serveExpectingExit(file);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(`${path.join(dataDir, name)} is not valid JSON`);
  }, 60_000);
});
