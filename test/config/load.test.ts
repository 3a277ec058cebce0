import { readFile, readdir, stat, writeFile, chmod, mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useConfigDir } from '../support/config-dir.js';
import { credentialsPath, defaultConfigText, loadConfig } from '../../src/config/index.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { defaultWorkerCount } from '../../src/scripts/pool/worker-count.js';

const tmp = useConfigDir('edc-config-');
const load = tmp.load;

describe('loadConfig defaults', () => {
  it('without a file uses the defaults and ./data under the working directory', async () => {
    const cwd = process.cwd();
    process.chdir(tmp.path);
    try {
      const { config, firstStart } = await loadConfig({ env: {} });
      expect(config.main.dataDir).toBe(join(tmp.path, 'data'));
      expect(config.http).toEqual({
        transport: 'auto', host: '0.0.0.0', port: 2580, urlBytesMax: 8192, bodyBytesMax: 4194304, idleTimeoutS: 60, maxConnections: 1000, authFailuresPerMinute: 20,
        tlsCertFile: '', tlsKeyFile: '', tlsKeyPassphraseFile: '', allowedHosts: [], trustedProxies: [],
      });
      expect(config.store).toEqual({
        sync: 'interval', syncIntervalMs: 1000, segmentBytes: 33554432, segmentAgeHours: 24,
        retentionMaxRecords: 0, retentionMaxBytes: 0, retentionMaxAgeHours: 0, clockJumpMaxS: 300, sealedFdsMax: 64, diskReserveBytes: 268_435_456, compactSealed: 'on',
      });
      expect(config.scripts).toEqual({
        workers: defaultWorkerCount(), workerIdleS: 60, timeoutMs: 200, hardTimeoutMs: 2000, memoryMb: 32, queueMax: 10000,
      });
      expect(config.main.logLevel).toBe('info');
      expect(firstStart).toBe(true);
    } finally {
      process.chdir(cwd);
    }
  });

  it('with a file, the default data_dir is ./data beside the file', async () => {
    const { config } = await load('[main]\nlog_level = warn\n');
    expect(config.main.dataDir).toBe(join(tmp.path, 'data'));
  });

  it('the printed default file parses back to the defaults', async () => {
    const fromText = await load(defaultConfigText());
    const cwd = process.cwd();
    process.chdir(tmp.path);
    try {
      const builtIn = await loadConfig({ env: {} });
      expect(fromText.warnings).toEqual([]);
      expect(fromText.config).toEqual(builtIn.config);
    } finally {
      process.chdir(cwd);
    }
  });
});

describe('loadConfig values', () => {
  it('reads every section and resolves data_dir against the file directory', async () => {
    const { config, warnings } = await load([
      '[main]', 'data_dir = store-here', 'admin_token = a-very-long-admin-token', 'log_level = DEBUG',
      '[plugin.http_server]', 'host = 127.0.0.1', 'port = 0',
      '[store]', 'sync = always', 'segment_bytes = 65536', 'retention_max_age_hours = 48',
      '[scripts]', 'workers = 3', 'timeout_ms = 50', 'hard_timeout_ms = 50', 'queue_max = 5',
    ].join('\n'));
    expect(warnings).toEqual([]);
    expect(config.main.dataDir).toBe(join(tmp.path, 'store-here'));
    expect(config.main.adminToken).toBe('a-very-long-admin-token');
    expect(config.main.logLevel).toBe('debug');
    expect(config.http.host).toBe('127.0.0.1');
    expect(config.http.port).toBe(0);
    expect(config.store.sync).toBe('always');
    expect(config.store.segmentBytes).toBe(65536);
    expect(config.store.retentionMaxAgeHours).toBe(48);
    expect(config.scripts).toMatchObject({ workers: 3, timeoutMs: 50, hardTimeoutMs: 50, queueMax: 5 });
  });

  it('collects dataschema_secrets from repeated keys and comma lists, trimmed, empty items dropped', async () => {
    const { config } = await load([
      '[main]',
      'dataschema_secrets = rhilex-secret',
      'dataschema_secrets = one , two,,',
      'dataschema_secrets[] = three',
      'dataschema_secrets = ',
      'dataschema_secrets = one',
    ].join('\n'));
    expect(config.main.secrets).toEqual(['rhilex-secret', 'one', 'two', 'three']);
  });

  it('warns about short data secrets without naming them', async () => {
    const { warnings } = await load('[main]\ndataschema_secrets = short-one, a-secret-long-enough-1\nadmin_token = 0123456789abcdefXYZ\n');
    expect(warnings).toEqual([
      '[main] dataschema_secrets: 1 of the secrets are shorter than 16 characters; anyone who can reach the port may guess them',
    ]);
  });

  it('an empty dataschema_secrets never disables the check: a secret is generated', async () => {
    const { config, warnings, firstStart } = await load('[main]\ndataschema_secrets = , ,\nadmin_token = 0123456789abcdefXYZ\n');
    expect(config.main.secrets).toHaveLength(1);
    expect(config.main.secrets[0]).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(firstStart).toBe(true);
    expect(warnings.join('\n')).toContain('dataschema_secrets is empty');
  });

  it.each([
    ['[store]\nsync = fast', '[store] sync must be one of none, interval or always, got "fast"'],
    ['[plugin.http_server]\ntransport = express', '[plugin.http_server] transport must be one of auto, uws or node, got "express"'],
    ['[plugin.http_server]\nport = 65536', '[plugin.http_server] port must be an integer in 0..65535, got "65536"'],
    ['[plugin.http_server]\nport = 80.5', '[plugin.http_server] port must be an integer in 0..65535, got "80.5"'],
    ['[plugin.http_server]\nport = abc', '[plugin.http_server] port must be an integer in 0..65535, got "abc"'],
    ['[store]\nsegment_bytes = 1024', '[store] segment_bytes must be an integer in 65536..1073741824, got "1024"'],
    ['[store]\nretention_max_records = -1', '[store] retention_max_records must be an integer in 0..9007199254740991, got "-1"'],
    ['[main]\nlog_level = loud', '[main] log_level must be one of fatal, error, warn, info, debug, trace or silent, got "loud"'],
    ['[main]\ndata_dir =', '[main] data_dir must not be empty'],
    ['[scripts]\ntimeout_ms = 500\nhard_timeout_ms = 100', '[scripts] hard_timeout_ms must be at least timeout_ms (500), got 100'],
    ['[plugin.http_server]\ntls_cert_file = cert.pem', '[plugin.http_server] tls_key_file is missing: tls_cert_file is set, and HTTPS needs both'],
    ['[plugin.http_server]\ntls_key_file = key.pem', '[plugin.http_server] tls_cert_file is missing: tls_key_file is set, and HTTPS needs both'],
    ['[plugin.http_server]\ntls_key_passphrase_file = pass.txt', '[plugin.http_server] tls_key_passphrase_file is set without tls_cert_file and tls_key_file'],
    ['[plugin.http_server]\ntls_cert_file =', '[plugin.http_server] tls_cert_file must not be empty'],
    ['[plugin.http_server]\nallowed_hosts = gw.plant:2580', '[plugin.http_server] allowed_hosts must list host names or addresses without port, such as gateway.plant.local, 10.1.2.3 or [fd00::1], got "gw.plant:2580"'],
    ['[plugin.http_server]\nallowed_hosts = http://gw.plant', ', got "http://gw.plant"'],
    ['[plugin.http_server]\nallowed_hosts = gw plant', ', got "gw plant"'],
    ['[plugin.http_server]\ntrusted_proxies = proxy.plant', '[plugin.http_server] trusted_proxies must list IP addresses or CIDR ranges, such as 127.0.0.1, 10.1.2.0/24 or fd00::/64, got "proxy.plant"'],
    ['[plugin.http_server]\ntrusted_proxies = 10.0.0.0/33', ', got "10.0.0.0/33"'],
    ['[plugin.http_server]\ntrusted_proxies = fd00::/129', ', got "fd00::/129"'],
  ])('refuses %j', async (text, message) => {
    const error = await load(text).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).toContain(message);
  });

  it('warns about unknown sections, unknown keys, stray lines and repeated keys', async () => {
    const { warnings, config } = await load([
      'top = 1',
      '[main]', 'debug_mode = true', 'not a pair',
      '[plugin.http_server]', 'port = 1000', 'port = 2000',
      '[mqtt]', 'host = x',
    ].join('\n'));
    expect(config.http.port).toBe(2000);
    expect(warnings).toHaveLength(5);
    expect(warnings.join('\n')).toMatch(/unknown section \[mqtt\]/);
    expect(warnings.join('\n')).toMatch(/:1: key top outside any section/);
    expect(warnings.join('\n')).toMatch(/:3: unknown key \[main\] debug_mode ignored/);
    expect(warnings.join('\n')).toMatch(/:4: not "key = value", ignored: not a pair/);
    expect(warnings.join('\n')).toMatch(/\[plugin.http_server\] port is set 2 times \(lines 6, 7\)/);
  });

  it('resolves the TLS files against the file directory and normalises allowed_hosts', async () => {
    const { config } = await load([
      '[plugin.http_server]',
      'tls_cert_file = tls/cert.pem', 'tls_key_file = /etc/edge/key.pem', 'tls_key_passphrase_file = pass.txt',
      'allowed_hosts = Gateway.Plant.Local., 10.1.2.3', 'allowed_hosts = [FD00::1], localhost, 10.1.2.3',
    ].join('\n'));
    expect(config.http.tlsCertFile).toBe(join(tmp.path, 'tls', 'cert.pem'));
    expect(config.http.tlsKeyFile).toBe('/etc/edge/key.pem');
    expect(config.http.tlsKeyPassphraseFile).toBe(join(tmp.path, 'pass.txt'));
    expect(config.http.allowedHosts).toEqual(['gateway.plant.local', '10.1.2.3', 'fd00::1', 'localhost']);
    const proxies = await load('[plugin.http_server]\ntrusted_proxies = 127.0.0.1, 10.1.2.0/24, FD00::/64\n');
    expect(proxies.config.http.trustedProxies).toEqual(['127.0.0.1', '10.1.2.0/24', 'fd00::/64']);
  });

  it('honours ini quoting and inline comments', async () => {
    const { config } = await load('[main]\nadmin_token = "with;semicolon-and-long" \ndataschema_secrets = plain ; comment\n');
    expect(config.main.adminToken).toBe('with;semicolon-and-long');
    expect(config.main.secrets).toEqual(['plain']);
  });

  it('a missing configuration file stops the start', async () => {
    await expect(loadConfig({ file: join(tmp.path, 'nope.ini'), env: {} })).rejects.toThrow(/nope.ini does not exist/);
  });

  it('environment variables override the file', async () => {
    const { config } = await load('[plugin.http_server]\nport = 1000\n', {
      EDGE_DATACENTER_HTTP_PORT: '3000',
      EDGE_DATACENTER_STORE_SYNC: 'none',
      EDGE_DATACENTER_MAIN_DATASCHEMA_SECRETS: 'a,b',
    });
    expect(config.http.port).toBe(3000);
    expect(config.store.sync).toBe('none');
    expect(config.main.secrets).toEqual(['a', 'b']);
    await expect(load('', { EDGE_DATACENTER_HTTP_PORT: 'x' })).rejects.toThrow('[plugin.http_server] port');
  });
});

describe('first start credentials', () => {
  it('generates a secret and an admin token once, mode 0600, and reuses them', async () => {
    const first = await load('[main]\ndata_dir = d\n');
    expect(first.firstStart).toBe(true);
    const file = credentialsPath(join(tmp.path, 'd'));
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const text = await readFile(file, 'utf8');
    expect(text).toContain(`dataschema_secrets = ${first.config.main.secrets[0]}`);
    expect(text).toContain(`admin_token = ${first.config.main.adminToken}`);
    expect(first.config.main.adminToken.length).toBeGreaterThanOrEqual(40);

    const second = await load('[main]\ndata_dir = d\n');
    expect(second.firstStart).toBe(false);
    expect(second.config.main.secrets).toEqual(first.config.main.secrets);
    expect(second.config.main.adminToken).toBe(first.config.main.adminToken);
  });

  it('configured values win over generated ones and nothing is generated when all are set', async () => {
    await load('[main]\ndata_dir = d\n');
    const configured = await load('[main]\ndata_dir = d\ndataschema_secrets = mine\nadmin_token = my-admin-token-1234\n');
    expect(configured.firstStart).toBe(false);
    expect(configured.config.main.secrets).toEqual(['mine']);
    expect(configured.config.main.adminToken).toBe('my-admin-token-1234');

    const fresh = await load('[main]\ndata_dir = other\ndataschema_secrets = mine\nadmin_token = my-admin-token-1234\n');
    expect(fresh.firstStart).toBe(false);
    await expect(stat(credentialsPath(join(tmp.path, 'other')))).rejects.toThrow(/ENOENT/);
  });

  it('generates only what is missing, keeping what is stored', async () => {
    const onlyToken = await load('[main]\ndata_dir = d\ndataschema_secrets = mine\n');
    expect(onlyToken.firstStart).toBe(true);
    expect(onlyToken.config.main.secrets).toEqual(['mine']);
    const both = await load('[main]\ndata_dir = d\n');
    expect(both.firstStart).toBe(true);
    expect(both.config.main.adminToken).toBe(onlyToken.config.main.adminToken);
    expect(both.config.main.secrets[0]).not.toBe('mine');
  });

  it('tightens a credentials file readable by others', async () => {
    await mkdir(join(tmp.path, 'd'));
    await writeFile(credentialsPath(join(tmp.path, 'd')), '[main]\ndataschema_secrets = s1\nadmin_token = t1\n');
    await chmod(credentialsPath(join(tmp.path, 'd')), 0o644);
    const { config, warnings, firstStart } = await load('[main]\ndata_dir = d\n');
    expect(firstStart).toBe(false);
    expect(config.main.secrets).toEqual(['s1']);
    expect(config.main.adminToken).toBe('t1');
    expect(warnings.join()).toContain('mode is now 0600');
    expect((await stat(credentialsPath(join(tmp.path, 'd')))).mode & 0o777).toBe(0o600);
  });
});

describe('data_dir that cannot hold the data', () => {
  it('a file, a path through a file, and a symlink loop each stop the start with one line naming data_dir', async () => {
    await writeFile(join(tmp.path, 'file'), '');
    await symlink(join(tmp.path, 'loop'), join(tmp.path, 'loop'));
    const cases: Array<[string, string]> = [
      [join(tmp.path, 'file'), 'is not a directory'],
      [join(tmp.path, 'file', 'sub'), 'cannot be created (ENOTDIR)'],
      [join(tmp.path, 'loop', 'x'), 'cannot be created (ELOOP)'],
    ];
    for (const [dataDir, why] of cases) {
      const err = await load(`[main]\ndata_dir = ${dataDir}\n`).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidArgumentError);
      expect((err as Error).message).toBe(`[main] data_dir ${dataDir} ${why}`);
    }
  });
});

describe('temp files of failed metadata writes', () => {
  it('are removed at start; other files stay', async () => {
    const dataDir = join(tmp.path, 'data');
    await mkdir(dataDir, { recursive: true });
    await writeFile(join(dataDir, '.models.json.4242.1795440000000.tmp'), 'half');
    await writeFile(join(dataDir, 'notes.tmp'), 'mine');
    await load(`[main]\ndata_dir = ${dataDir}\n`);
    expect((await readdir(dataDir)).sort()).toEqual(['credentials.ini', 'notes.tmp']);
  });
});
