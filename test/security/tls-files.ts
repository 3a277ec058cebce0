/**
 * Certificates and keys for the TLS tests, made with the `openssl` command (node:crypto cannot issue
 * certificates). P-256 keys: quick to generate on a shared machine.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TlsFiles {
  /** Self-signed for localhost and 127.0.0.1; also the CA a client trusts. */
  cert: string;
  key: string;
  /** A key that does not belong to `cert`. */
  otherKey: string;
  /** `key`, encrypted with the passphrase in `passphrase`. */
  encryptedKey: string;
  passphrase: string;
  /** Text that is neither a certificate nor a key. */
  garbage: string;
  /** A certificate for `key` that expired on 2 January 2020 (signed by a throwaway CA). */
  expiredCert: string;
}

function openssl(args: string[]): void {
  try {
    execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    throw new Error(missing ? 'the TLS tests need the openssl command (apt-get install openssl)' : `openssl ${args[0]} failed: ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
  }
}

export function makeTlsFiles(dir: string): TlsFiles {
  const files: TlsFiles = {
    cert: join(dir, 'cert.pem'),
    key: join(dir, 'key.pem'),
    otherKey: join(dir, 'other-key.pem'),
    encryptedKey: join(dir, 'key-encrypted.pem'),
    passphrase: join(dir, 'passphrase.txt'),
    garbage: join(dir, 'garbage.pem'),
    expiredCert: join(dir, 'expired.pem'),
  };
  openssl([
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', files.key, '-out', files.cert, '-days', '2',
    '-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
  ]);
  openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', files.otherKey]);
  writeFileSync(files.passphrase, 'correct horse battery staple\n', { mode: 0o600 });
  openssl(['pkey', '-in', files.key, '-aes256', '-passout', `file:${files.passphrase}`, '-out', files.encryptedKey]);
  writeFileSync(files.garbage, 'not a PEM file\n');
  makeExpiredCert(join(dir, 'old-ca'), files.key, files.expiredCert);
  return files;
}

/** `openssl ca` is the command that takes any validity dates (`x509 -req` counts days from now). */
function makeExpiredCert(caDir: string, key: string, out: string): void {
  mkdirSync(caDir);
  const at = (name: string): string => join(caDir, name);
  writeFileSync(at('index.txt'), '');
  writeFileSync(at('serial'), '01\n');
  writeFileSync(at('ca.cnf'), [
    '[ca]', 'default_ca = old', '[old]', `database = ${at('index.txt')}`, `new_certs_dir = ${caDir}`,
    `serial = ${at('serial')}`, 'policy = any', 'default_md = sha256', '[any]', 'commonName = supplied', '',
  ].join('\n'));
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', at('ca.key'), '-out', at('ca.crt'), '-days', '2', '-subj', '/CN=old CA']);
  openssl(['req', '-new', '-key', key, '-out', at('req.csr'), '-subj', '/CN=localhost']);
  openssl([
    'ca', '-batch', '-config', at('ca.cnf'), '-cert', at('ca.crt'), '-keyfile', at('ca.key'), '-in', at('req.csr'),
    '-out', out, '-startdate', '20200101000000Z', '-enddate', '20200102000000Z', '-notext',
  ]);
}
