/**
 * Loads the configuration: built-in defaults, then the ini file, then EDGE_DATACENTER_* environment
 * variables; validates every value; creates the data directory; fills in generated credentials.
 */
import { access, constants, readFile, stat } from 'node:fs/promises';
import { mkdirDurable, removeTempFiles } from '../util/atomic-file.js';
import { dirname, resolve } from 'node:path';
import { InvalidArgumentError } from '../errors.js';
import { mustBe } from '../util/messages.js';
import { defaultWorkerCount } from '../scripts/pool/worker-count.js';
import { credentialsPath, resolveCredentials } from './credentials.js';
import { scanIni } from './ini-text.js';
import { CONFIG_KEYS, envName, keyName, type KeySpec, type ListKey } from './keys.js';
import type { Config } from './types.js';
import { parseEnumValue, parseHostList, parseIntValue, parseProxyList, splitSecrets } from './values.js';
import { checkUplink, parseUplinkModels, parseUplinkServers, resolveGatewayId } from './uplink-values.js';

export interface LoadConfigOptions {
  /** An ini file; without one, the built-in defaults (a missing file given here is an error). */
  file?: string;
  /** Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Receives each warning as it is found and a note when credentials are generated. */
  log?: (msg: string) => void;
}

export interface LoadedConfig {
  config: Config;
  /** Credentials were generated during this call; the caller should say where they are. */
  firstStart: boolean;
  warnings: string[];
}

/** The raw values of one key and the directory a relative path in them is resolved against. */
interface RawValue {
  values: string[];
  baseDir: string;
  /** For messages: where the value came from. */
  origin: string;
}

export async function loadConfig(options: LoadConfigOptions = {}): Promise<LoadedConfig> {
  const warnings: string[] = [];
  const warn = (msg: string): void => {
    warnings.push(msg);
    options.log?.(msg);
  };
  const raw = new Map<KeySpec, RawValue>();
  const file = options.file === undefined ? undefined : resolve(options.file);
  if (file !== undefined) await readConfigFile(file, raw, warn);
  readEnvironment(options.env ?? process.env, raw);

  // The default data_dir is relative too: beside the file, or in the working directory without one.
  const config = defaultConfig(file === undefined ? process.cwd() : dirname(file));
  let configuredToken: string | undefined;
  for (const [spec, { values, baseDir, origin }] of raw) {
    const last = values[values.length - 1];
    switch (spec.kind) {
      case 'list':
        setField(config, spec, parseList(spec, values));
        break;
      case 'int':
        setField(config, spec, parseIntValue(spec, last));
        break;
      case 'enum':
        setField(config, spec, parseEnumValue(spec, last));
        break;
      case 'string':
        if (spec.key === 'admin_token') {
          // Empty means "not configured": the generated token is used, never an empty one.
          if (last !== '') configuredToken = last;
          break;
        }
        if (last === '') throw new InvalidArgumentError(`${keyName(spec)} must not be empty (${origin})`);
        setField(config, spec, spec.path ? resolve(baseDir, last) : last);
        break;
    }
  }
  if (raw.has(secretsSpec) && config.main.secrets.length === 0) {
    warn('[main] dataschema_secrets is empty; a generated secret is used instead (an empty secret never disables the check)');
  }
  if (config.scripts.hardTimeoutMs < config.scripts.timeoutMs) {
    throw new InvalidArgumentError(
      mustBe('[scripts] hard_timeout_ms', `at least timeout_ms (${config.scripts.timeoutMs})`, config.scripts.hardTimeoutMs),
    );
  }
  checkTlsKeys(config.http);
  checkUplink(config.uplink);
  if (config.scripts.workers === 0) config.scripts.workers = defaultWorkerCount();
  if (configuredToken !== undefined && configuredToken.length < 16) {
    warn('[main] admin_token is shorter than 16 characters; anyone who can reach the port may guess it');
  }
  // A right guess passes even while its address is throttled (docs/security.md, "Lockout"): length is
  // what keeps guessing hopeless, also for a web page that reads the CORS answers of the data endpoints.
  const shortSecrets = config.main.secrets.filter((s) => s.length < 16).length;
  if (shortSecrets > 0) {
    warn(`[main] dataschema_secrets: ${shortSecrets} of the secrets are shorter than 16 characters; anyone who can reach the port may guess them`);
  }

  await prepareDataDir(config.main.dataDir);
  const credentials = await resolveCredentials(config.main.dataDir, {
    secrets: config.main.secrets,
    adminToken: configuredToken,
  });
  credentials.warnings.forEach(warn);
  config.main.secrets = credentials.secrets;
  config.main.adminToken = credentials.adminToken;
  if (config.uplink.engine !== 'off') config.uplink.gatewayId = await resolveGatewayId(config.main.dataDir, config.uplink.gatewayId);
  const firstStart = credentials.generated.length > 0;
  if (firstStart) {
    options.log?.(`generated ${credentials.generated.join(' and ')} into ${credentialsPath(config.main.dataDir)}`);
  }
  return { config, firstStart, warnings };
}

function parseList(spec: ListKey, values: string[]): string[] {
  if (spec.key === 'allowed_hosts') return parseHostList(spec, values);
  if (spec.key === 'trusted_proxies') return parseProxyList(spec, values);
  if (spec.section === 'uplink' && spec.key === 'servers') return parseUplinkServers(spec, values);
  if (spec.section === 'uplink' && spec.key === 'models') return parseUplinkModels(spec, values);
  return splitSecrets(values);
}

/** HTTPS needs the certificate and its key; a passphrase alone is a mistake, not a wish for plain HTTP. */
function checkTlsKeys(http: Config['http']): void {
  const cert = http.tlsCertFile !== '';
  const key = http.tlsKeyFile !== '';
  if (cert && !key) throw new InvalidArgumentError('[plugin.http_server] tls_key_file is missing: tls_cert_file is set, and HTTPS needs both');
  if (key && !cert) throw new InvalidArgumentError('[plugin.http_server] tls_cert_file is missing: tls_key_file is set, and HTTPS needs both');
  if (http.tlsKeyPassphraseFile !== '' && !key) {
    throw new InvalidArgumentError('[plugin.http_server] tls_key_passphrase_file is set without tls_cert_file and tls_key_file');
  }
}

const secretsSpec = CONFIG_KEYS.find((s) => s.key === 'dataschema_secrets') as KeySpec;

/** Every default filled in; `secrets` and `adminToken` stay empty until credentials are resolved. */
function defaultConfig(baseDir: string): Config {
  const config = { main: {}, http: {}, store: {}, scripts: {}, uplink: {} } as Config;
  for (const spec of CONFIG_KEYS) {
    if (spec.kind === 'list') setField(config, spec, []);
    else if (spec.kind === 'string' && spec.default === undefined) setField(config, spec, '');
    else if (spec.kind === 'string' && spec.path) setField(config, spec, resolve(baseDir, spec.default as string));
    else setField(config, spec, spec.default as string | number);
  }
  return config;
}

function setField(config: Config, spec: KeySpec, value: unknown): void {
  const [group, field] = spec.target;
  (config[group] as unknown as Record<string, unknown>)[field] = value;
}

async function readConfigFile(
  path: string,
  raw: Map<KeySpec, RawValue>,
  warn: (msg: string) => void,
): Promise<void> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : (error as Error).message;
    throw new InvalidArgumentError(`configuration file ${path} ${reason}`);
  }
  const { entries, sections, malformed } = scanIni(text);
  const knownSections = new Set(CONFIG_KEYS.map((s) => s.section));
  for (const section of sections) {
    if (!knownSections.has(section)) warn(`${path}: unknown section [${section}] ignored`);
  }
  for (const { line, text: content } of malformed) {
    warn(`${path}:${line}: not "key = value", ignored: ${content}`);
  }
  const lines = new Map<KeySpec, number[]>();
  for (const entry of entries) {
    const spec = CONFIG_KEYS.find((s) => s.section === entry.section && s.key === entry.key);
    if (!spec) {
      if (entry.section === '') warn(`${path}:${entry.line}: key ${entry.key} outside any section ignored`);
      else if (knownSections.has(entry.section)) warn(`${path}:${entry.line}: unknown key [${entry.section}] ${entry.key} ignored`);
      continue;
    }
    const seen = raw.get(spec);
    if (seen) seen.values.push(entry.value);
    else raw.set(spec, { values: [entry.value], baseDir: dirname(path), origin: path });
    lines.set(spec, [...(lines.get(spec) ?? []), entry.line]);
  }
  for (const [spec, at] of lines) {
    if (spec.kind !== 'list' && at.length > 1) {
      warn(`${path}: ${keyName(spec)} is set ${at.length} times (lines ${at.join(', ')}); the last one counts`);
    }
  }
}

/** An environment variable replaces the file's value of its key; relative paths start at the working directory. */
function readEnvironment(env: NodeJS.ProcessEnv, raw: Map<KeySpec, RawValue>): void {
  for (const spec of CONFIG_KEYS) {
    const name = envName(spec);
    const value = env[name];
    if (value !== undefined) raw.set(spec, { values: [value], baseDir: process.cwd(), origin: `environment ${name}` });
  }
}

/** Creates `[main] data_dir` when missing; one clear error when it cannot hold the data. */
async function prepareDataDir(dir: string): Promise<void> {
  try {
    await mkdirDurable(dir);
  } catch (err) {
    throw new InvalidArgumentError(`[main] data_dir ${dir} cannot be created (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!(await stat(dir)).isDirectory()) throw new InvalidArgumentError(`[main] data_dir ${dir} is not a directory`);
  try {
    await access(dir, constants.W_OK);
  } catch {
    throw new InvalidArgumentError(`[main] data_dir ${dir} is not writable by this user`);
  }
  await removeTempFiles(dir);
}
