/**
 * TLS files that are not small regular files: `/dev/zero`, a FIFO, a directory, a file of many MiB. Read
 * as they were, `/dev/zero` filled memory for minutes and a FIFO blocked the start for ever, deaf to
 * SIGTERM. Now the start stops at once with one line naming the key, the file and the rule. A symlink to a
 * regular file is still fine (certbot's `live/` files are symlinks).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TLS_FILE_BYTES_MAX } from '../../src/http/transport/tls.js';
import { configIn, serveExpectingExit } from '../reliability/support/service.mjs';
import { startService } from '../support/service.js';
import { makeTlsFiles, type TlsFiles } from './tls-files.js';

let tmp: string;
let tls: TlsFiles;
let fifo: string;
let huge: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'edc-tls-kinds-'));
  tls = makeTlsFiles(tmp);
  fifo = path.join(tmp, 'key.fifo');
  execFileSync('mkfifo', [fifo]);
  huge = path.join(tmp, 'huge.pem');
  fs.writeFileSync(huge, fs.readFileSync(tls.cert));
  fs.truncateSync(huge, 64 * 1024 * 1024); // sparse: no disk spent
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A config with the given lines added under [plugin.http_server]. */
function tlsConfig(name: string, lines: string[]): string {
  const { file } = configIn(tmp, name);
  fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('port = 0', ['port = 0', ...lines].join('\n')));
  return file;
}

const RULE = `it must be a regular file of at most ${TLS_FILE_BYTES_MAX} bytes`;

it.each([
  ['tls_cert_file /dev/zero', () => ['tls_cert_file = /dev/zero', `tls_key_file = ${tls.key}`], () => `[plugin.http_server] tls_cert_file /dev/zero is a character device: ${RULE}`],
  ['tls_key_file a FIFO', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${fifo}`], () => `[plugin.http_server] tls_key_file ${fifo} is a FIFO: ${RULE}`],
  ['tls_key_passphrase_file /dev/zero', () => [`tls_cert_file = ${tls.cert}`, `tls_key_file = ${tls.encryptedKey}`, 'tls_key_passphrase_file = /dev/zero'], () => `[plugin.http_server] tls_key_passphrase_file /dev/zero is a character device: ${RULE}`],
  ['tls_cert_file a directory', () => [`tls_cert_file = ${tmp}`, `tls_key_file = ${tls.key}`], () => `[plugin.http_server] tls_cert_file ${tmp} is a directory: ${RULE}`],
  ['tls_cert_file of 64 MiB', () => [`tls_cert_file = ${huge}`, `tls_key_file = ${tls.key}`], () => `[plugin.http_server] tls_cert_file ${huge} is ${64 * 1024 * 1024} bytes: ${RULE}`],
])('%s stops the start with one line naming the key and the rule', async (name, lines, message) => {
  const refused = await serveExpectingExit(tlsConfig(name.replace(/\W+/g, '-'), lines()));
  expect(refused.code).toBe(1);
  expect(refused.stderr.trim().split('\n')).toHaveLength(1);
  expect(refused.stderr).toContain(message());
}, 30_000);

it('a symlink to a regular certificate and key still serves', async () => {
  const certLink = path.join(tmp, 'cert-link.pem');
  const keyLink = path.join(tmp, 'key-link.pem');
  fs.symlinkSync(tls.cert, certLink);
  fs.symlinkSync(tls.key, keyLink);
  const svc = await startService({ ini: { 'plugin.http_server': [`tls_cert_file = ${certLink}`, `tls_key_file = ${keyLink}`] } });
  await svc.close();
});
