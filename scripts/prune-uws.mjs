#!/usr/bin/env node
/**
 * npm run prune-uws [-- --dry-run] [--dir NODE_MODULES]
 *
 * The uWebSockets.js package (uws-pack) ships one native binary per platform, CPU and Node ABI:
 * about 133 MB, of which the running Node needs one file of about 5 MB. This removes the others
 * from an installed tree (a production install on a gateway). npm never checks installed files
 * against the lock, so `npm ci` still works afterwards (it reinstalls the package whole); after a
 * Node major upgrade (a new ABI) run `npm ci --omit=dev` and this script again. See docs/deploy.md.
 *
 * Plain JavaScript on purpose: it runs in a production install, without TypeScript.
 */
import { readdir, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** The file uws-pack's loader asks for (dist/uws.mjs): uws_<platform>_<arch>_<ABI>.node. */
export function hostBinaryName(platform = process.platform, arch = process.arch, abi = process.versions.modules) {
  return `uws_${platform}_${arch}_${abi}.node`;
}

/** The binaries of `binDir` to delete, and the one kept; throws if the host's binary is not there. */
export async function pruneSelection(binDir, keep = hostBinaryName()) {
  const names = (await readdir(binDir)).filter((name) => name.endsWith('.node'));
  if (!names.includes(keep)) {
    throw new Error(
      `${path.join(binDir, keep)} is missing: uws-pack has no binary for this platform and Node (or it was pruned for another Node); nothing removed`,
    );
  }
  return { keep, remove: names.filter((name) => name !== keep).sort() };
}

async function main() {
  const { values } = parseArgs({
    options: {
      'dry-run': { type: 'boolean', default: false },
      dir: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write('Usage: npm run prune-uws [-- --dry-run] [--dir NODE_MODULES]\n');
    return;
  }
  const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
  const nodeModules = path.resolve(values.dir ?? path.join(root, 'node_modules'));
  const binDir = path.join(nodeModules, 'uWebSockets.js', 'dist', 'bin');
  const { keep, remove } = await pruneSelection(binDir);
  let freedBytes = 0;
  for (const name of remove) {
    const file = path.join(binDir, name);
    freedBytes += (await stat(file)).size;
    if (!values['dry-run']) await unlink(file);
  }
  const verb = values['dry-run'] ? 'would remove' : 'removed';
  process.stdout.write(`prune-uws: kept ${keep}; ${verb} ${remove.length} other binaries (${(freedBytes / 1_048_576).toFixed(1)} MiB) in ${binDir}\n`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`prune-uws: ${err.message}\n`);
    process.exitCode = 1;
  });
}
