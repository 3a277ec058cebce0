#!/usr/bin/env node
/**
 * npm start / npm run serve [-- --config FILE]
 *
 * Serves: `node --max-semi-space-size=1 dist/cli.js serve ARGS` as a child process, with MALLOC_ARENA_MAX=2.
 * In a checkout whose dist/ is older than src/, it builds first (tsc); a production install (the `npm pack`
 * tarball, without TypeScript or the .ts sources) serves the dist/ it ships.
 *
 * A wrapper rather than `npm run build && node dist/cli.js serve`, because npm passes a SIGTERM to the
 * shell of the script, which dies without passing it on: the service went on serving, holding the port
 * and the data lock (docs/deploy.md). The package.json scripts `exec` this file, so npm's signal reaches
 * it; it relays the first SIGTERM, SIGINT or SIGHUP to the service and exits with the service's code.
 *
 * Plain JavaScript on purpose: it runs in a production install, without TypeScript.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { constants } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * V8 flags of the service: a young generation of about 3 MB (and every worker's) keeps RSS near 100 MiB at
 * 10,000 records/s instead of about 150 MiB (docs/performance.md, Memory).
 */
const NODE_FLAGS = ['--max-semi-space-size=1'];

/**
 * The service's environment, under what the caller sets (which wins): glibc gives every thread that
 * allocates an arena of its own, up to 8 per core, and each keeps what its thread freed. Two arenas held
 * RSS at 10,000 records/s about 8 MiB lower, at the same CPU per record (docs/performance.md, Memory).
 */
const SERVE_ENV = { MALLOC_ARENA_MAX: '2' };

/** The src/ .ts files whose dist/ output is missing or older; none in a production install. */
function staleSources(dir = path.join(ROOT, 'src')) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const source = path.join(dir, entry.name);
    if (entry.isDirectory()) return staleSources(source);
    if (!entry.name.endsWith('.ts') || entry.name.endsWith('.d.ts')) return [];
    const output = path.join(ROOT, 'dist', path.relative(path.join(ROOT, 'src'), source).replace(/\.ts$/, '.js'));
    try {
      return statSync(output).mtimeMs < statSync(source).mtimeMs ? [source] : [];
    } catch {
      return [source];
    }
  });
}

/** Builds dist/ with the installed TypeScript; false (after saying why) when that is not possible or fails. */
function build(stale) {
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    process.stderr.write(`dist/ is older than ${path.relative(ROOT, stale[0])} and TypeScript is not installed: run npm install\n`);
    return false;
  }
  return spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.json')], { stdio: 'inherit' }).status === 0;
}

function serve() {
  // Its own process group: a Ctrl-C then reaches the service once, through this relay. Under npm the
  // terminal's SIGINT comes here twice (from the terminal and again from npm), and the service takes a
  // second signal as "exit now, without a clean shutdown"; so only the first signal is relayed.
  const child = spawn(process.execPath, [...NODE_FLAGS, path.join(ROOT, 'dist', 'cli.js'), 'serve', ...process.argv.slice(2)], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: { ...SERVE_ENV, ...process.env },
    detached: true,
  });
  let relayed = false;
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.on(signal, () => {
      if (relayed) return;
      relayed = true;
      child.kill(signal);
    });
  }
  child.on('error', (err) => {
    process.stderr.write(`cannot start the service: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => process.exit(code ?? 128 + constants.signals[signal]));
}

const stale = staleSources();
if (stale.length === 0 || build(stale)) serve();
else process.exitCode = 1;
