/**
 * The audit log: security events as single log lines at info or above, in a shape an outside tool such
 * as fail2ban can match (docs/security.md, "Audit log"). Every line carries `audit` (the action) and
 * `client` (the address as uWS reports it); actions on an object add `object`, `name` and `uuid`.
 *
 * Failed authentication is aggregated: per client address one warn line per window (a minute) with the
 * count and the credential kinds, so a flood of wrong guesses cannot flood the log. The window starts
 * at the first failure after a quiet period; the lines are written when it ends, or when the table of
 * addresses is full, or at shutdown.
 */
import type { Logger } from 'pino';
import type { CredentialKind } from './throttle.js';

export interface AuditCtx {
  readonly remoteAddress: string;
}

export type AuditAction =
  | 'data.backup'
  | 'data.export'
  | 'data.clear'
  | 'data.restore'
  | 'data.import'
  | 'model.delete'
  | 'model.fix'
  | 'model.publish'
  | 'model.recovery-ack'
  | 'model.retention'
  | 'attribute.delete'
  | 'rule.create'
  | 'rule.update'
  | 'rule.delete'
  | 'inend.create'
  | 'inend.delete'
  | 'inend.rotate-token'
  | 'secret.read';

export interface AuditObject {
  type: 'model' | 'attribute' | 'rule' | 'inend' | 'secret';
  name: string;
  uuid: string;
}

interface FailureTally {
  count: number;
  kinds: Set<CredentialKind>;
}

export const AUDIT_WINDOW_MS = 60_000;
export const AUDIT_ADDRESSES_MAX = 10_000;

export class Audit {
  private readonly failures = new Map<string, FailureTally>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    readonly windowMs = AUDIT_WINDOW_MS,
    readonly addressesMax = AUDIT_ADDRESSES_MAX,
  ) {}

  /** A destructive, code-changing, credential-revealing or data-exporting admin action that succeeded. */
  event(action: AuditAction, ctx: AuditCtx, object: AuditObject): void {
    const client = ctx.remoteAddress;
    this.log.info(
      { audit: action, client, object: object.type, name: object.name, uuid: object.uuid },
      `${action}: ${object.type} ${object.name} (${object.uuid}) by ${client}`,
    );
  }

  /** One wrong credential; written later, summed per address over the window. */
  authFailed(ctx: AuditCtx, kind: CredentialKind): void {
    const client = ctx.remoteAddress;
    let tally = this.failures.get(client);
    if (tally === undefined) {
      if (this.failures.size >= this.addressesMax) this.flush();
      tally = { count: 0, kinds: new Set() };
      this.failures.set(client, tally);
    }
    tally.count++;
    tally.kinds.add(kind);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), this.windowMs);
      this.timer.unref();
    }
  }

  /** Writes the pending failure lines now (the window's end, a full table, shutdown). */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const windowS = Math.round(this.windowMs / 1000);
    for (const [client, { count, kinds }] of this.failures) {
      const kindList = [...kinds].sort();
      this.log.warn(
        { audit: 'auth.failed', client, count, kinds: kindList, windowS },
        `auth.failed: ${count} wrong credentials (${kindList.join(', ')}) from ${client} within ${windowS} s`,
      );
    }
    this.failures.clear();
  }
}

/** Loopback names and addresses: only this host can reach a server bound to them. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '');
  return h === 'localhost' || h === '::1' || /^(::ffff:)?127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/**
 * Warns once at start when credentials would cross the network in clear text: the server listens on a
 * non-loopback host without TLS. Returns whether it warned.
 */
export function warnIfPlainNonLoopback(host: string, port: number, tlsEnabled: boolean, log: Logger): boolean {
  if (tlsEnabled || isLoopbackHost(host)) return false;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  log.warn(
    { audit: 'start.plain-http', client: '', host },
    `serving plain HTTP on ${where}, not loopback: tokens and secrets cross the network in clear text; ` +
      'set tls_cert_file/tls_key_file or put a TLS reverse proxy in front (docs/deploy.md)',
  );
  return true;
}
