/**
 * `[plugin.http_server] tls_cert_file, tls_key_file, tls_key_passphrase_file`: checks the files before
 * the transport sees them. uWS reads them itself and, for a missing file, a file that is not PEM or a key
 * that does not belong to the certificate, only throws "App construction failed"; node:crypto says which
 * file is wrong and why, so the start fails with one line naming it. The files are read once, at start:
 * a renewed certificate takes a restart (docs/deploy.md). Each must be a regular file of at most
 * TLS_FILE_BYTES_MAX: read whole, `/dev/zero` filled memory for minutes and a FIFO blocked the start.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import type { Config } from '../../config/types.js';
import { InvalidArgumentError } from '../../errors.js';

/** A certificate chain, a key or a passphrase takes a few KiB; a chain with a CA bundle some hundred. */
export const TLS_FILE_BYTES_MAX = 1024 * 1024;

export interface TlsSetup {
  /** Absolute paths, for uWS, which reads the files itself. */
  certFile: string;
  keyFile: string;
  /** The PEM contents, for node:https. */
  cert: Buffer;
  key: Buffer;
  passphrase: string | undefined;
  /** For the start-up log: subject, issuer and expiry of the certificate. */
  certificate: X509Certificate;
}

/** undefined when TLS is not configured; loadConfig has already refused a certificate without key and the reverse. */
export async function loadTls(http: Config['http']): Promise<TlsSetup | undefined> {
  if (http.tlsCertFile === '' || http.tlsKeyFile === '') return undefined;
  const cert = await readConfiguredFile('tls_cert_file', http.tlsCertFile);
  const certificate = parseCertificate(http.tlsCertFile, cert);
  const passphrase = http.tlsKeyPassphraseFile === '' ? undefined : await readPassphrase(http.tlsKeyPassphraseFile);
  const keyPem = await readConfiguredFile('tls_key_file', http.tlsKeyFile);
  const key = parseKey(http.tlsKeyFile, keyPem, passphrase);
  if (!certificate.checkPrivateKey(key)) {
    throw new InvalidArgumentError(
      `[plugin.http_server] tls_key_file ${http.tlsKeyFile} is not the private key of the certificate in tls_cert_file ${http.tlsCertFile}`,
    );
  }
  return { certFile: http.tlsCertFile, keyFile: http.tlsKeyFile, cert, key: keyPem, passphrase, certificate };
}

async function readConfiguredFile(key: string, file: string): Promise<Buffer> {
  let handle: FileHandle;
  try {
    // O_NONBLOCK: opening a FIFO that has no writer would otherwise wait for one; a regular file ignores it.
    handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw unreadable(key, file, err);
  }
  try {
    // fstat of the opened file, not stat of the path: what is read is what was checked.
    const info = await handle.stat();
    const kind = notRegular(info);
    if (kind !== undefined) throw notAllowed(key, file, `is ${kind}`);
    if (info.size > TLS_FILE_BYTES_MAX) throw notAllowed(key, file, `is ${info.size} bytes`);
    const bytes = await readAtMost(handle, TLS_FILE_BYTES_MAX);
    // A file that grew past the bound since the fstat, or one that reports no size (/proc).
    if (bytes === undefined) throw notAllowed(key, file, `is more than ${TLS_FILE_BYTES_MAX} bytes`);
    return bytes;
  } catch (err) {
    throw err instanceof InvalidArgumentError ? err : unreadable(key, file, err);
  } finally {
    await handle.close();
  }
}

function unreadable(key: string, file: string, err: unknown): InvalidArgumentError {
  const code = (err as NodeJS.ErrnoException).code;
  const why = code === 'ENOENT' ? 'does not exist' : code === 'EACCES' ? 'is not readable by this user' : `cannot be read (${code ?? (err as Error).message})`;
  return new InvalidArgumentError(`[plugin.http_server] ${key} ${file} ${why}`);
}

function notAllowed(key: string, file: string, what: string): InvalidArgumentError {
  return new InvalidArgumentError(`[plugin.http_server] ${key} ${file} ${what}: it must be a regular file of at most ${TLS_FILE_BYTES_MAX} bytes`);
}

/** What a file that is not a regular one is, for the message; undefined for a regular file. */
function notRegular(info: Stats): string | undefined {
  if (info.isFile()) return undefined;
  if (info.isDirectory()) return 'a directory';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isFIFO()) return 'a FIFO';
  return 'not a regular file';
}

/** The whole file, or undefined as soon as it has more than `max` bytes. */
async function readAtMost(handle: FileHandle, max: number): Promise<Buffer | undefined> {
  const buf = Buffer.allocUnsafe(max + 1);
  let length = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buf, length, buf.length - length, null);
    if (bytesRead === 0) return Buffer.from(buf.subarray(0, length));
    length += bytesRead;
    if (length > max) return undefined;
  }
}

function parseCertificate(file: string, pem: Buffer): X509Certificate {
  try {
    // The first certificate of the file is the server's; intermediates may follow it.
    return new X509Certificate(pem);
  } catch (err) {
    throw new InvalidArgumentError(`[plugin.http_server] tls_cert_file ${file} is not a PEM certificate (${reason(err)})`);
  }
}

function parseKey(file: string, pem: Buffer, passphrase: string | undefined): KeyObject {
  try {
    return createPrivateKey({ key: pem, format: 'pem', passphrase });
  } catch (err) {
    const hint = passphrase === undefined && pem.includes('ENCRYPTED') ? '; it is encrypted: set tls_key_passphrase_file' : '';
    throw new InvalidArgumentError(`[plugin.http_server] tls_key_file ${file} is not a usable PEM private key (${reason(err)})${hint}`);
  }
}

/** The first line of the file, without its line end. */
async function readPassphrase(file: string): Promise<string> {
  const text = (await readConfiguredFile('tls_key_passphrase_file', file)).toString('utf8');
  const passphrase = text.split(/\r?\n/, 1)[0];
  if (passphrase === '') throw new InvalidArgumentError(`[plugin.http_server] tls_key_passphrase_file ${file} is empty`);
  return passphrase;
}

function reason(err: unknown): string {
  return String((err as Error)?.message ?? err).split('\n', 1)[0];
}
