/** Turns one raw ini (or environment) string into a typed value, or throws naming the key and the rule. */
import { isIP, isIPv6 } from 'node:net';
import { InvalidArgumentError } from '../errors.js';
import { describeValue, mustBe, oneOf, range } from '../util/messages.js';
import { keyName, type EnumKey, type IntKey, type ListKey } from './keys.js';

const INTEGER = /^[+-]?\d+$/;

export function parseIntValue(spec: IntKey, raw: string): number {
  const value = INTEGER.test(raw) ? Number(raw) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < spec.min || value > spec.max) {
    throw new InvalidArgumentError(mustBe(keyName(spec), `an integer in ${range(spec.min, spec.max)}`, raw));
  }
  return value;
}

/** Case-insensitive; returns the canonical spelling. */
export function parseEnumValue(spec: EnumKey, raw: string): string {
  const value = spec.values.find((v) => v === raw.toLowerCase());
  if (value === undefined) {
    throw new InvalidArgumentError(mustBe(keyName(spec), oneOf(spec.values), raw));
  }
  return value;
}

/** RHILEX's secret list: every occurrence, each split on commas, items trimmed, empty items dropped, duplicates once. */
export function splitSecrets(occurrences: readonly string[]): string[] {
  const secrets = occurrences.flatMap((value) => value.split(',')).map((s) => s.trim()).filter((s) => s !== '');
  return [...new Set(secrets)];
}

const HOST_NAME = /^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$/;

/**
 * `allowed_hosts`: the comma items of every occurrence, lower-cased, without a trailing dot or IPv6
 * brackets (the form the Host check compares). Throws naming an item that is not a host name or address.
 */
export function parseHostList(spec: ListKey, occurrences: readonly string[]): string[] {
  const hosts = splitSecrets(occurrences).map((item) => {
    let host = item.toLowerCase();
    if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
    else if (host.endsWith('.')) host = host.slice(0, -1);
    if (host.includes(':') ? isIPv6(host) : HOST_NAME.test(host)) return host;
    throw new InvalidArgumentError(
      `${keyName(spec)} must list host names or addresses without port, such as gateway.plant.local, 10.1.2.3 or [fd00::1], got ${describeValue(item)}`,
    );
  });
  return [...new Set(hosts)];
}

/** `trusted_proxies`: IP addresses and CIDR ranges (`10.1.2.0/24`, `fd00::/64`). Throws naming a bad item. */
export function parseProxyList(spec: ListKey, occurrences: readonly string[]): string[] {
  return splitSecrets(occurrences).map((item) => {
    const [address, prefix, extra] = item.split('/');
    const version = isIP(address);
    const bits = version === 6 ? 128 : 32;
    const prefixOk = prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= bits);
    if (version === 0 || !prefixOk || extra !== undefined) {
      throw new InvalidArgumentError(
        `${keyName(spec)} must list IP addresses or CIDR ranges, such as 127.0.0.1, 10.1.2.0/24 or fd00::/64, got ${describeValue(item)}`,
      );
    }
    return item.toLowerCase();
  });
}
