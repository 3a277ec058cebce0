/**
 * `[uplink]` values (contract 17, docs/uplink.md): each is checked at start with a message naming the
 * key and the rule, so a typo never turns into a gateway that silently ships nothing.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { InvalidArgumentError } from '../errors.js';
import { writeFileAtomic } from '../util/atomic-file.js';
import { describeValue } from '../util/messages.js';
import { keyName, type ListKey } from './keys.js';
import type { Config } from './types.js';
import { splitSecrets } from './values.js';

const SERVER = /^((nats|tls):\/\/)?([^\s/:@]+@)?(\[[0-9a-fA-F:]+\]|[A-Za-z0-9_.-]+)(:\d{1,5})?$/;
const SUBJECT_PREFIX = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
export const GATEWAY_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MODEL_UUID = /^SCHEMA[2-9A-Z]{8}$/;

/** Where a generated gateway id is kept, inside `[main] data_dir`. */
export function gatewayIdPath(dataDir: string): string {
  return join(dataDir, 'uplink', 'gateway-id');
}

export function parseUplinkServers(spec: ListKey, occurrences: readonly string[]): string[] {
  return splitSecrets(occurrences).map((item) => {
    if (!SERVER.test(item)) {
      throw new InvalidArgumentError(`${keyName(spec)} must list nats://host:port, tls://host:port or host:port items, got ${describeValue(item)}`);
    }
    return item;
  });
}

/** `*` (alone) or model uuids; empty means every published model. */
export function parseUplinkModels(spec: ListKey, occurrences: readonly string[]): string[] {
  const items = splitSecrets(occurrences);
  if (items.includes('*')) {
    if (items.length > 1) throw new InvalidArgumentError(`${keyName(spec)} must be * alone or a list of model uuids, got ${describeValue(items.join(', '))}`);
    return [];
  }
  for (const item of items) {
    if (!MODEL_UUID.test(item)) throw new InvalidArgumentError(`${keyName(spec)} must list model uuids such as SCHEMAZ848ZRDG, got ${describeValue(item)}`);
  }
  return items;
}

export function checkUplink(uplink: Config['uplink']): void {
  if (!SUBJECT_PREFIX.test(uplink.subjectPrefix)) {
    throw new InvalidArgumentError(
      `[uplink] subject_prefix must be subject tokens of letters, digits, _ and - separated by dots (no * or >), got ${describeValue(uplink.subjectPrefix)}`,
    );
  }
  if (uplink.gatewayId !== '' && !GATEWAY_ID.test(uplink.gatewayId)) {
    throw new InvalidArgumentError(`[uplink] gateway_id must be 1 to 64 letters, digits, _ or -, got ${describeValue(uplink.gatewayId)}`);
  }
  if (uplink.engine === 'nats' && uplink.servers.length === 0) {
    throw new InvalidArgumentError('[uplink] servers is missing: engine = nats needs at least one hub server');
  }
}

/** The configured id, or the one generated into the data directory the first time (then kept). */
export async function resolveGatewayId(dataDir: string, configured: string): Promise<string> {
  if (configured !== '') return configured;
  const file = gatewayIdPath(dataDir);
  try {
    const kept = (await readFile(file, 'utf8')).trim();
    if (!GATEWAY_ID.test(kept)) throw new InvalidArgumentError(`${file} must hold 1 to 64 letters, digits, _ or -, got ${describeValue(kept)}; fix or delete it`);
    return kept;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const generated = `gw-${randomBytes(6).toString('hex')}`;
  await writeFileAtomic(file, `${generated}\n`);
  return generated;
}
