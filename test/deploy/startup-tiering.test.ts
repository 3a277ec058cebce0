/**
 * `serve` keeps V8's optimizing compiler off until it listens (src/cli.ts, issue 32): the first
 * optimization pages in about 4 MiB of the node binary, and loading the service's modules made Node's
 * loader hot enough for 16 of them. Counted with `--trace-opt` on the real service from dist/: none while
 * it starts and idles, and V8 optimizes again once it has work. The lines are counted once the process has
 * exited (V8 prints them through C stdio, buffered on a pipe), so a run is one start, then work or none.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startService } from '../reliability/support/service.mjs';

let dir: string | undefined;
afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Runs `serve` with `--trace-opt` (and `flags`), `whileUp` once it listens, stops it; the functions V8 optimized. */
async function optimizedBy(flags: string[], whileUp: (base: string) => Promise<void>): Promise<string[]> {
  dir = await mkdtemp(join(tmpdir(), 'edc-tiering-'));
  const ini = join(dir, 'gw.ini');
  await writeFile(ini, `[main]\ndata_dir = ${join(dir, 'data')}\n[plugin.http_server]\nhost = 127.0.0.1\nport = 0\n`);
  const lines: string[] = [];
  const svc = await startService(ini, { nodeArgs: ['--max-semi-space-size=1', '--trace-opt', ...flags], onLine: (line) => lines.push(line) });
  try {
    await whileUp(svc.base);
  } finally {
    await svc.kill('SIGTERM');
  }
  const out = lines.join('\n');
  return [...out.matchAll(/^\[completed optimizing \S+ <JSFunction (.*?) \(sfi/gm)].map((m) => m[1]);
}

const idle = (ms: number) => async (): Promise<void> => {
  await new Promise((resolve) => setTimeout(resolve, ms));
};

describe('serve and the optimizing compiler', () => {
  it('nothing is optimized while the service starts and idles', async () => {
    expect(await optimizedBy([], idle(1000))).toEqual([]);
  }, 120_000);

  it('functions are optimized again once the service has work (requests after it listens)', async () => {
    const optimized = await optimizedBy([], async (base) => {
      for (let i = 0; i < 2500; i++) await (await fetch(`${base}/healthz`)).text();
    });
    expect(optimized.length).toBeGreaterThan(0);
  }, 180_000);

  // Ceilings for a busy machine (2-3 s idle here): the unoptimized 2500 requests are the slowest part.
  it('a compiler flag given to node is left alone (--no-opt: nothing is optimized, even with work)', async () => {
    const optimized = await optimizedBy(['--no-opt'], async (base) => {
      for (let i = 0; i < 2500; i++) await (await fetch(`${base}/healthz`)).text();
    });
    expect(optimized).toEqual([]);
  }, 180_000);
});
