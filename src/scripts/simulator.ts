/**
 * A SIMULATOR input: emits payloads shaped like RHILEX's Modbus input (a JSON array of {tag, value})
 * on a timer, for demos and benchmarks. A sample that finds its input's queue full is dropped and
 * counted: a simulator has nobody to answer 503 to.
 */
import type { SimulatorConfig, SimulatorTag } from './shared/types.js';

/** Returns how many of the payloads the queue took. */
export type PayloadSink = (payloads: string[]) => number;

/** Decimal places of a simulated value when a tag does not say (0 gives whole numbers, for INTEGER attributes). */
export const SIMULATOR_DECIMALS_DEFAULT = 2;

/** A value in [min, max] with the tag's decimal places; rounding never leaves the bounds. */
export function simulatedValue(tag: SimulatorTag, random: () => number = Math.random): number {
  const scale = 10 ** (tag.decimals ?? SIMULATOR_DECIMALS_DEFAULT);
  const value = Math.round((tag.min + (tag.max - tag.min) * random()) * scale) / scale;
  return Math.min(tag.max, Math.max(tag.min, value));
}

export function simulatedPayload(config: SimulatorConfig, random: () => number = Math.random): string {
  return JSON.stringify(config.tags.map((tag) => ({ tag: tag.tag, value: simulatedValue(tag, random) })));
}

export class Simulator {
  private timer: NodeJS.Timeout | undefined;
  dropped = 0;

  constructor(
    private readonly config: SimulatorConfig,
    private readonly sink: PayloadSink,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), this.config.intervalMs);
    // Samples are not work worth keeping the process alive for.
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tick(): void {
    const payloads: string[] = [];
    for (let i = 0; i < this.config.payloadsPerTick; i++) payloads.push(simulatedPayload(this.config));
    this.dropped += payloads.length - this.sink(payloads);
  }
}
