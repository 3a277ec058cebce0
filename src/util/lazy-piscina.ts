/**
 * piscina, loaded with the pool's first task (issue 32, memory of an idle gateway): its 14 modules cost
 * about 0.7 MiB of RSS, and the Lua workers start on demand anyway (`worker_idle_s`), so a gateway that
 * never runs a rule never needs it. A stand-in for the part of piscina's API that src/scripts/pool/pool.ts
 * uses; it creates the real pool at the first `run`, or at once (a synchronous require, so that its
 * threads are there when the constructor returns, as before) when `minThreads` asks for workers from the
 * start (`worker_idle_s = 0`). The first task waits for the import, once (a few ms; the worker's own
 * start takes far longer). `test/deploy/lazy-imports.test.ts` checks that `serve` loads it only then.
 */
import { createRequire } from 'node:module';
import type { Piscina as RealPiscina } from 'piscina';

type Options = NonNullable<ConstructorParameters<typeof RealPiscina>[0]>;
type RunOptions = Parameters<RealPiscina['run']>[1];

const NO_THREADS: readonly unknown[] = Object.freeze([]);

export class Piscina {
  private real: RealPiscina | undefined;
  private loading: Promise<RealPiscina> | undefined;
  private destroyed = false;

  constructor(private readonly options: Options) {
    if ((options.minThreads ?? 0) > 0) {
      const { Piscina: Real } = createRequire(import.meta.url)('piscina') as typeof import('piscina');
      this.real = new Real(options);
    }
  }

  /** The worker threads running or starting now; none before the first task. */
  get threads(): readonly unknown[] {
    return this.real?.threads ?? NO_THREADS;
  }

  async run(task: unknown, options?: RunOptions): Promise<unknown> {
    const real = this.real ?? (await this.load());
    return real.run(task, options);
  }

  async destroy(): Promise<void> {
    this.destroyed = true;
    const real = this.real ?? (this.loading === undefined ? undefined : await this.loading.catch(() => undefined));
    await real?.destroy();
  }

  private load(): Promise<RealPiscina> {
    this.loading ??= import('piscina').then(({ Piscina: Real }) => {
      if (this.destroyed) throw new Error('the worker pool is closed');
      this.real ??= new Real(this.options);
      return this.real;
    });
    return this.loading;
  }
}
