/**
 * `[plugin.http_server] allowed_hosts`: the defence against DNS rebinding. A page on a hostile site can
 * make its own name resolve to the gateway's address and then read the gateway's answers as same-origin;
 * its requests still carry the hostile name in `Host`. Checking `Host` against the names the plant uses
 * refuses them (421) before any credential is looked at, so they cannot guess secrets or spend the
 * throttle of the operator's address either.
 */
import { MisdirectedRequestError } from '../../errors.js';

const SHOWN_CHARS_MAX = 100;

/** The host part of a Host header, lower-case, without port, IPv6 brackets or a trailing dot. */
export function hostOfHeader(header: string): string {
  let host = header.trim().toLowerCase();
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end < 0 ? host : host.slice(1, end);
  }
  const colon = host.indexOf(':');
  // Exactly one colon: name:port. More than one is an unbracketed IPv6 literal, which no client sends.
  if (colon >= 0 && host.indexOf(':', colon + 1) < 0) host = host.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/** Throws 421 unless `header` names one of `allowed` (which holds names in the form hostOfHeader returns). */
export function checkHost(header: string | undefined, allowed: ReadonlySet<string>): void {
  if (header === undefined) throw new MisdirectedRequestError('the request has no Host header; this server answers only requests that name it');
  if (allowed.has(hostOfHeader(header))) return;
  const shown = header.length > SHOWN_CHARS_MAX ? `${header.slice(0, SHOWN_CHARS_MAX)}...` : header;
  throw new MisdirectedRequestError(
    `Host ${JSON.stringify(shown)} is not a name of this server ([plugin.http_server] allowed_hosts)`,
  );
}

/**
 * An absolute-form request target (`http://host:port/path?query`, RFC 9112 3.2.2) split into its authority
 * and the origin-form rest (`/` when it names no path); undefined for any other form. A server must take
 * the target's authority instead of `Host`, so that is what allowed_hosts checks: else `GET
 * http://evil.example/` would pass under an allowed `Host`.
 */
export function splitAbsoluteForm(target: string): { authority: string; originForm: string } | undefined {
  const m = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/([^/?#]*)(.*)$/s.exec(target);
  if (m === null) return undefined;
  return { authority: m[1], originForm: m[2].startsWith('/') ? m[2] : `/${m[2]}` };
}
