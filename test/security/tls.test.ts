/**
 * Built-in TLS (`[plugin.http_server] tls_cert_file, tls_key_file, tls_key_passphrase_file`) against the
 * real service: the CLI serves HTTPS with a certificate made here by openssl, a client that trusts it
 * reads with the admin token, plain HTTP on that port gets nothing; a missing key, an unreadable or
 * wrong file stops the start with one line naming it. And the one start-up warning for plain HTTP on an
 * address other than loopback.
 */
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService as startInProcess } from '../support/service.js';
import { ADMIN, configIn, serveExpectingExit, startService } from '../reliability/support/service.mjs';
import { makeTlsFiles, type TlsFiles } from './tls-files.js';

let tmp: string;
let tls: TlsFiles;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-tls-'));
  tls = makeTlsFiles(tmp);
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface Answer {
  status: number;
  body: any;
}

/** GET over HTTPS trusting only our self-signed certificate. */
function httpsGet(port: number, urlPath: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.get({ host: '127.0.0.1', port, path: urlPath, headers, ca: fs.readFileSync(tls.cert), agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

/** Plain HTTP; resolves with the status, or with the error code when no HTTP answer came. */
function plainGet(port: number, urlPath: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: urlPath, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.setTimeout(10_000, () => req.destroy(Object.assign(new Error('timeout'), { code: 'TIMEOUT' })));
    req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
}

/** A config with the given lines added under [plugin.http_server]. */
function tlsConfig(name: string, lines: string[]): string {
  const { file } = configIn(tmp, name);
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('port = 0', ['port = 0', ...lines].join('\n')));
  return file;
}

describe('built-in TLS', () => {
  it('serve answers HTTPS: /healthz and an admin read with the certificate trusted; a wrong token is still 401; plain HTTP gets no answer', async () => {
    const svc = await startService(tlsConfig('serve', [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.key}`]));
    try {
      expect(svc.base).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      const port = Number(new URL(svc.base).port);
      const health = await httpsGet(port, '/healthz');
      expect(health.status).toBe(200);
      expect(health.body.data.status).toBe('ok');
      const list = await httpsGet(port, '/api/v1/schema/list', { Authorization: `Bearer ${ADMIN}` });
      expect(list.status).toBe(200);
      expect(list.body.data).toEqual([]);
      expect((await httpsGet(port, '/api/v1/schema/list', { Authorization: 'Bearer wrong-token' })).status).toBe(401);
      const plain = await plainGet(port, '/healthz');
      expect(plain).toBeTypeOf('string');
      expect(['ECONNRESET', 'HPE_INVALID_CONSTANT', 'TIMEOUT']).toContain(plain);
    } finally {
      await svc.kill('SIGTERM');
    }
  }, 60_000);

  it('an encrypted key opens with tls_key_passphrase_file', async () => {
    const svc = await startInProcess({
      ini: { 'plugin.http_server': [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.encryptedKey}`, `tls_key_passphrase_file = ${tls.passphrase}`] },
    });
    try {
      expect((await httpsGet(svc.port, '/healthz')).status).toBe(200);
    } finally {
      await svc.close();
    }
  });

  it('an expired certificate still starts (the UI may be needed to fix things) with a warning naming it', async () => {
    const svc = await startInProcess({ ini: { 'plugin.http_server': [`tls_cert_file = ${tls.expiredCert}`, `tls_key_file = ${tls.key}`] } });
    try {
      const warnings = svc.logs.filter((l) => l.level === 40).map((l) => l.msg);
      expect(warnings).toEqual([`the certificate in ${tls.expiredCert} expired on Jan  2 00:00:00 2020 GMT: clients will refuse it`]);
    } finally {
      await svc.close();
    }
  });

  it.each([
    ['only the certificate', () => [`tls_cert_file = ${tls.cert}`], () => '[plugin.http_server] tls_key_file is missing: tls_cert_file is set, and HTTPS needs both'],
    ['only the key', () => [`tls_key_file = ${tls.key}`], () => '[plugin.http_server] tls_cert_file is missing: tls_key_file is set, and HTTPS needs both'],
    ['a certificate file that does not exist', () => [`tls_cert_file = ${tmp}/none.pem`, `tls_key_file = ${tls.key}`], () => `[plugin.http_server] tls_cert_file ${tmp}/none.pem does not exist`],
    ['a certificate file that is not PEM', () => [`tls_cert_file = ${tls.garbage}`, `tls_key_file = ${tls.key}`], () => `[plugin.http_server] tls_cert_file ${tls.garbage} is not a PEM certificate`],
    ['a key file that is not PEM', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.garbage}`], () => `[plugin.http_server] tls_key_file ${tls.garbage} is not a usable PEM private key`],
    ['a key of another certificate', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.otherKey}`], () => `[plugin.http_server] tls_key_file ${tls.otherKey} is not the private key of the certificate in tls_cert_file ${tls.cert}`],
    ['an encrypted key without passphrase', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.encryptedKey}`], () => 'it is encrypted: set tls_key_passphrase_file'],
    ['an encrypted key with the wrong passphrase', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.encryptedKey}`, `tls_key_passphrase_file = ${tls.garbage}`], () => `[plugin.http_server] tls_key_file ${tls.encryptedKey} is not a usable PEM private key`],
  ])('%s stops the start with one line naming it', async (name, lines, message) => {
    const refused = await serveExpectingExit(tlsConfig(name.replaceAll(' ', '-'), lines()));
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(message());
  }, 30_000);
});

describe('the start-up warning about plain HTTP', () => {
  const plainWarnings = (logs: Array<{ level: number; msg: string }>) => logs.filter((l) => l.msg.startsWith('serving plain HTTP'));

  it('plain HTTP on every interface (0.0.0.0) warns once, naming the address and the way out', async () => {
    const svc = await startInProcess({ ini: { 'plugin.http_server': ['host = 0.0.0.0'] } });
    try {
      const warnings = plainWarnings(svc.logs);
      expect(warnings).toHaveLength(1);
      expect(warnings[0].level).toBe(40);
      expect(warnings[0].msg).toBe(
        `serving plain HTTP on 0.0.0.0:${svc.port}, not loopback: tokens and secrets cross the network in clear text; ` +
          'set tls_cert_file/tls_key_file or put a TLS reverse proxy in front (docs/deploy.md)',
      );
    } finally {
      await svc.close();
    }
  });

  it('loopback without TLS, and every interface with TLS, do not warn', async () => {
    const loopback = await startInProcess();
    const withTls = await startInProcess({
      ini: { 'plugin.http_server': ['host = 0.0.0.0', `tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.key}`] },
    });
    try {
      expect(plainWarnings(loopback.logs)).toEqual([]);
      expect(plainWarnings(withTls.logs)).toEqual([]);
      expect(withTls.logs.some((l) => l.msg.startsWith('serving HTTPS with the certificate for CN=localhost'))).toBe(true);
    } finally {
      await loopback.close();
      await withTls.close();
    }
  });
});
