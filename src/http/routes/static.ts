/**
 * Serves the management UI from `src/ui/public/` for every path outside `/api/`. The directory is found
 * next to this file's tree whether it runs from src/ (tests) or dist/ (after `tsc`, which does not copy
 * it). Paths are decoded and must stay inside the directory: a `.` or `..` segment or a dot-file is a 404.
 * Unknown paths without an extension get index.html (client-side routes), others a plain 404.
 */
import { existsSync, statSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { InvalidArgumentError } from '../../errors.js';
import { RawReply } from '../core/reply.js';
import type { RequestCtx } from '../core/request.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.wasm': 'application/wasm',
  '.webmanifest': 'application/manifest+json',
};

const FILE_BYTES_MAX = 32 * 1024 * 1024;

/** Every UI asset is ours and same-origin: no inline code, no third-party hosts, no framing. */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; base-uri 'none'; object-src 'none'; frame-ancestors 'none'; form-action 'self'";

/** The first of `src/ui/public` candidates that exists, else undefined. */
export function findPublicDir(): string | undefined {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [
    path.resolve(here, '../../ui/public'), // src/http/routes -> src/ui/public, dist/http/routes -> dist/ui/public
    path.resolve(here, '../../../src/ui/public'), // dist/http/routes -> src/ui/public
  ];
  for (const dir of candidates) {
    try {
      if (existsSync(dir) && statSync(dir).isDirectory()) return dir;
    } catch {
      // unreadable: try the next one
    }
  }
  return undefined;
}

function notFound(headOnly: boolean): RawReply {
  return new RawReply(
    404,
    { 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff' },
    'Not Found\n',
    headOnly,
  );
}

async function regularFile(file: string): Promise<number | undefined> {
  try {
    const info = await stat(file);
    return info.isFile() ? info.size : undefined;
  } catch {
    return undefined;
  }
}

export function staticHandler(dir: string | undefined): (ctx: RequestCtx) => Promise<RawReply> {
  const root = dir === undefined ? undefined : path.resolve(dir);
  return async (ctx) => {
    const headOnly = ctx.method === 'HEAD';
    if (root === undefined) return notFound(headOnly);
    let decoded: string;
    try {
      decoded = decodeURIComponent(ctx.path);
    } catch {
      throw new InvalidArgumentError('malformed percent-encoding in the path');
    }
    if (decoded.includes('\0') || decoded.includes('\\')) return notFound(headOnly);
    // Before normalising, which would turn `/../../etc/passwd` into `/etc/passwd` and so into the
    // client-side-route fallback (200). Browsers resolve `.` and `..` before sending: only probes send them.
    if (decoded.split('/').some((part) => part.startsWith('.'))) return notFound(headOnly);
    let file = path.resolve(root, decoded.replace(/^\/+/, ''));
    // Defence in depth: the checks above already keep the path inside, this holds if they ever change.
    if (file !== root && !file.startsWith(root + path.sep)) return notFound(headOnly);
    let size = await regularFile(file);
    if (size === undefined && (file === root || !path.extname(file))) {
      const index = path.join(file, 'index.html');
      size = await regularFile(index);
      if (size !== undefined) file = index;
      else {
        file = path.join(root, 'index.html');
        size = await regularFile(file);
      }
    }
    if (size === undefined || size > FILE_BYTES_MAX) return notFound(headOnly);
    const body = await readFile(file);
    const type = TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
    return new RawReply(
      200,
      {
        'Content-Type': type,
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': CONTENT_SECURITY_POLICY,
        'X-Frame-Options': 'DENY',
        'Referrer-Policy': 'no-referrer',
        'Cache-Control': type.startsWith('text/html') ? 'no-cache' : 'public, max-age=300',
      },
      body,
      headOnly,
    );
  };
}
