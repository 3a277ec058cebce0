/**
 * `[plugin.http_server] trusted_proxies`: which peers may say who the client is. Behind a reverse proxy
 * every request comes from the proxy, so the throttle of failed authentication (and any log of client
 * addresses) would see one client. X-Forwarded-For is written by whoever sends the request, so it is
 * believed only from the listed proxies, and only as far as the chain of listed proxies goes: reading
 * the header from the right, the first address that is not a trusted proxy is the client. Without the key
 * the header is ignored and the peer is the client.
 */
import { BlockList, isIP } from 'node:net';

export class ClientAddress {
  private readonly proxies = new BlockList();

  /** `proxies`: addresses and CIDR ranges as validated by the configuration (`10.0.0.1`, `fd00::/64`). */
  constructor(readonly proxyList: readonly string[]) {
    for (const entry of proxyList) {
      const [address, prefix] = entry.split('/');
      const type = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (prefix === undefined) this.proxies.addAddress(address, type);
      else this.proxies.addSubnet(address, Number(prefix), type);
    }
  }

  get enabled(): boolean {
    return this.proxyList.length > 0;
  }

  /**
   * The client's address: `peer` itself unless it is a trusted proxy; then the rightmost X-Forwarded-For
   * entry that is not a trusted proxy. An entry that is not an IP address ends the walk at the last
   * hop that is known to be right (a proxy passing on garbage is not believed beyond it).
   */
  resolve(peer: string, forwardedFor: string | undefined): string {
    if (!this.enabled || forwardedFor === undefined || !this.isProxy(peer)) return peer;
    let client = peer;
    const hops = forwardedFor.split(',');
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = unmapped(hops[i].trim());
      if (isIP(hop) === 0) return client;
      client = hop;
      if (!this.isProxy(hop)) return hop;
    }
    return client;
  }

  private isProxy(address: string): boolean {
    const version = isIP(address);
    return version !== 0 && this.proxies.check(address, version === 6 ? 'ipv6' : 'ipv4');
  }
}

/** `::ffff:10.1.2.3` as `10.1.2.3`, as RequestCtx shows peers. */
function unmapped(address: string): string {
  return address.toLowerCase().startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
