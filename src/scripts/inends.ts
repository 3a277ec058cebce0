/**
 * The input list: input checks, inends.json, and HTTP push tokens. Only a SHA-256 of each token is
 * stored; a push compares hashes with timingSafeEqual, so neither the file nor the timing reveals it.
 */
import { randomBytes } from 'node:crypto';
import { digestsEqual, sha256 } from '../util/digest.js';
import { join } from 'node:path';
import { AuthError, InvalidArgumentError, NotFoundError } from '../errors.js';
import { newUniqueId } from '../models/ids.js';
import { SerialQueue } from '../util/atomic-file.js';
import { describeValue, mustBe, named, oneOf, range } from '../util/messages.js';
import { optionalText, readList, requireBody, requireName, requireUuid, writeList } from './metadata-file.js';
import { parseMqttClientConfig, parseMqttServerConfig, parseUdpServerConfig, RHILEX_TYPES_NOT_BUILT } from './input-configs.js';
import { INEND_TYPES, type Inend, type InendType, type SimulatorConfig } from './shared/types.js';

export const INENDS_FILE = 'inends.json';
const DESCRIPTION_CHARS_MAX = 2000;
const SIMULATOR_TAGS_MAX = 256;
const SIMULATOR_INTERVAL_MS_MAX = 3_600_000;
const SIMULATOR_PAYLOADS_PER_TICK_MAX = 10_000;
const SIMULATOR_DECIMALS_MAX = 6;

/** The inputs that carry a push token: HTTP pushes with it, the built-in MQTT broker takes it as the password. */
const TOKEN_TYPES: readonly InendType[] = ['HTTP', 'GENERIC_MQTT_SERVER'];

/** What inends.json holds per input: the public fields and, for HTTP and GENERIC_MQTT_SERVER, the token's hash. */
interface StoredInend extends Inend {
  tokenSha256?: string;
}

type InendFields = Pick<Inend, 'name' | 'type' | 'description' | 'config'>;

export function parseInendFields(input: unknown, current?: Inend): InendFields {
  const body = requireBody(input);
  const name = current && body.name === undefined ? current.name : requireName(body.name);
  const description =
    current && body.description === undefined ? current.description : optionalText(body.description, 'description', DESCRIPTION_CHARS_MAX);
  let type: InendType;
  if (current) {
    if (body.type !== undefined && body.type !== current.type) throw new InvalidArgumentError(`type cannot change: input ${named(current.name, current.uuid)} is ${current.type}, got ${describeValue(body.type)}`);
    type = current.type;
  } else {
    if ((RHILEX_TYPES_NOT_BUILT as readonly unknown[]).includes(body.type)) {
      const instead = body.type === 'HTTP_SERVER' ? ': an HTTP input here is type HTTP (devices push to /api/v1/inends/push)' : '';
      throw new InvalidArgumentError(`type ${String(body.type)} is a RHILEX input type this service does not support${instead}; supported: ${INEND_TYPES.join(', ')}`);
    }
    if (!INEND_TYPES.includes(body.type as InendType)) throw new InvalidArgumentError(mustBe('type', oneOf(INEND_TYPES), body.type));
    type = body.type as InendType;
  }
  const rawConfig = current && body.config === undefined ? current.config : body.config;
  return { name, type, description, config: parseConfig(type, rawConfig, current?.config) };
}

function parseConfig(type: InendType, raw: unknown, current: Record<string, unknown> | undefined): Record<string, unknown> {
  switch (type) {
    case 'SIMULATOR':
      return { ...parseSimulatorConfig(raw) };
    case 'UDP_SERVER':
      return { ...parseUdpServerConfig(raw) };
    case 'GENERIC_MQTT_SERVER':
      return { ...parseMqttServerConfig(raw) };
    case 'GENERIC_MQTT':
      return { ...parseMqttClientConfig(raw, current) };
    case 'HTTP':
      return parseHttpConfig(raw);
  }
}

/** Two listeners of this service on one port: the second would fail at start; refused here with the holder's name. */
function listenerKey(inend: Pick<Inend, 'type' | 'config'>): string | undefined {
  if (inend.type !== 'UDP_SERVER' && inend.type !== 'GENERIC_MQTT_SERVER') return undefined;
  return `${inend.type === 'UDP_SERVER' ? 'udp' : 'tcp'}:${String(inend.config.port)}`;
}

function parseHttpConfig(value: unknown): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new InvalidArgumentError(mustBe('config', 'an object', value));
  return { ...(value as Record<string, unknown>) };
}

export function parseSimulatorConfig(value: unknown): SimulatorConfig {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new InvalidArgumentError(mustBe('config', 'an object {intervalMs, tags: [{tag, min, max}]}', value));
  }
  const c = value as Record<string, unknown>;
  const intervalMs = c.intervalMs;
  if (typeof intervalMs !== 'number' || !Number.isInteger(intervalMs) || intervalMs < 1 || intervalMs > SIMULATOR_INTERVAL_MS_MAX) {
    throw new InvalidArgumentError(mustBe('config.intervalMs', `an integer in ${range(1, SIMULATOR_INTERVAL_MS_MAX)}`, intervalMs));
  }
  const payloadsPerTick = c.payloadsPerTick ?? 1;
  if (typeof payloadsPerTick !== 'number' || !Number.isInteger(payloadsPerTick) || payloadsPerTick < 1 || payloadsPerTick > SIMULATOR_PAYLOADS_PER_TICK_MAX) {
    throw new InvalidArgumentError(mustBe('config.payloadsPerTick', `an integer in ${range(1, SIMULATOR_PAYLOADS_PER_TICK_MAX)}`, payloadsPerTick));
  }
  if (!Array.isArray(c.tags) || c.tags.length === 0 || c.tags.length > SIMULATOR_TAGS_MAX) {
    const given = Array.isArray(c.tags) ? `${c.tags.length} tags` : describeValue(c.tags);
    throw new InvalidArgumentError(`config.tags must be an array of ${range(1, SIMULATOR_TAGS_MAX)} {tag, min, max}, got ${given}`);
  }
  const tags = c.tags.map((t: unknown, i: number) => {
    const tag = (t ?? {}) as Record<string, unknown>;
    if (typeof tag.tag !== 'string' || tag.tag === '') throw new InvalidArgumentError(mustBe(`config.tags[${i}].tag`, 'a non-empty string', tag.tag));
    if (typeof tag.min !== 'number' || !Number.isFinite(tag.min)) throw new InvalidArgumentError(mustBe(`config.tags[${i}].min`, 'a number', tag.min));
    if (typeof tag.max !== 'number' || !Number.isFinite(tag.max) || tag.max < tag.min) {
      throw new InvalidArgumentError(mustBe(`config.tags[${i}].max`, `a number at least min (${tag.min})`, tag.max));
    }
    if (tag.decimals === undefined) return { tag: tag.tag, min: tag.min, max: tag.max };
    if (typeof tag.decimals !== 'number' || !Number.isInteger(tag.decimals) || tag.decimals < 0 || tag.decimals > SIMULATOR_DECIMALS_MAX) {
      throw new InvalidArgumentError(mustBe(`config.tags[${i}].decimals`, `an integer in ${range(0, SIMULATOR_DECIMALS_MAX)}`, tag.decimals));
    }
    return { tag: tag.tag, min: tag.min, max: tag.max, decimals: tag.decimals };
  });
  return { intervalMs, payloadsPerTick, tags };
}

export class InendBook {
  private inends: StoredInend[] = [];
  private readonly writes = new SerialQueue();

  private constructor(private readonly path: string) {}

  static async open(dataDir: string): Promise<InendBook> {
    const book = new InendBook(join(dataDir, INENDS_FILE));
    book.inends = await readList<StoredInend>(book.path, 'inends');
    return book;
  }

  list(): Inend[] {
    return this.inends.map(publicView);
  }

  get(uuid: unknown): Inend {
    return publicView(this.find(requireUuid(uuid)));
  }

  nameOf(uuid: string): string | undefined {
    return this.inends.find((i) => i.uuid === uuid)?.name;
  }

  has(uuid: string): boolean {
    return this.inends.some((i) => i.uuid === uuid);
  }

  /** Throws NotFoundError for an unknown input, AuthError for a wrong token or an input without a token. */
  authenticate(uuid: string, token: string): void {
    const inend = this.find(uuid);
    // Hash first so the comparison has a fixed length whatever the caller sent.
    const given = sha256(typeof token === 'string' ? token : '');
    const expected = inend.tokenSha256 === undefined ? undefined : Buffer.from(inend.tokenSha256, 'hex');
    if (!digestsEqual(given, expected)) {
      throw new AuthError(`missing or wrong push token for input ${uuid}`);
    }
  }

  create(input: unknown): Promise<{ inend: Inend; token?: string }> {
    return this.writes.run(async () => {
      const fields = parseInendFields(input);
      this.refusePortTaken(fields);
      const token = TOKEN_TYPES.includes(fields.type) ? newPushToken() : undefined;
      const stored: StoredInend = {
        uuid: newUniqueId('INEND', (id) => this.has(id)),
        ...fields,
        createdAtMs: Date.now(),
        ...(token !== undefined ? { tokenSha256: sha256(token).toString('hex') } : {}),
      };
      await this.commit([...this.inends, stored]);
      return token === undefined ? { inend: publicView(stored) } : { inend: publicView(stored), token };
    });
  }

  update(input: unknown): Promise<Inend> {
    return this.writes.run(async () => {
      const current = this.find(requireUuid(requireBody(input).uuid));
      const fields = parseInendFields(input, publicView(current));
      this.refusePortTaken(fields, current.uuid);
      const stored: StoredInend = { ...current, ...fields };
      await this.commit(this.inends.map((i) => (i === current ? stored : i)));
      return publicView(stored);
    });
  }

  /**
   * A new push token for an HTTP input. The old one is refused from the moment the new hash is on disk
   * and in memory (authenticate reads the hash in memory on every push); a push already authenticated
   * finishes.
   */
  rotateToken(uuid: unknown): Promise<{ inend: Inend; token: string }> {
    return this.writes.run(async () => {
      const current = this.find(requireUuid(uuid));
      if (!TOKEN_TYPES.includes(current.type)) {
        throw new InvalidArgumentError(`input ${current.name} (${current.uuid}) is a ${current.type} input: only ${TOKEN_TYPES.join(' and ')} inputs have a push token`);
      }
      const token = newPushToken();
      const stored: StoredInend = { ...current, tokenSha256: sha256(token).toString('hex') };
      await this.commit(this.inends.map((i) => (i === current ? stored : i)));
      return { inend: publicView(stored), token };
    });
  }

  /** `check` runs inside the write queue, right before the delete, to refuse it (inputs still read by a rule). */
  delete(uuid: unknown, check: (uuid: string) => void): Promise<void> {
    return this.writes.run(async () => {
      const current = this.find(requireUuid(uuid));
      check(current.uuid);
      await this.commit(this.inends.filter((i) => i !== current));
    });
  }

  private refusePortTaken(fields: InendFields, self?: string): void {
    const key = listenerKey(fields);
    if (key === undefined) return;
    const holder = this.inends.find((i) => i.uuid !== self && listenerKey(i) === key);
    if (holder !== undefined) {
      throw new InvalidArgumentError(`config.port ${String(fields.config.port)} is already the port of input ${named(holder.name, holder.uuid)} (${holder.type}): choose another port`);
    }
  }

  private find(uuid: string): StoredInend {
    const inend = this.inends.find((i) => i.uuid === uuid);
    if (!inend) throw new NotFoundError(`input ${uuid} not found`);
    return inend;
  }

  private async commit(inends: StoredInend[]): Promise<void> {
    await writeList(this.path, 'inends', inends, this.inends);
    this.inends = inends;
  }
}

/** 24 random bytes: 192 bits, as base64url (32 characters) for a header or a URL. */
function newPushToken(): string {
  return randomBytes(24).toString('base64url');
}

function publicView(stored: StoredInend): Inend {
  const { tokenSha256: _hash, ...inend } = stored;
  return { ...inend, config: structuredClone(inend.config) };
}
