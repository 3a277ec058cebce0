/**
 * A SIMULATOR input: emits payloads shaped like RHILEX's Modbus input (a JSON array of {tag, value})
 * on a timer, for demos and benchmarks. A sample that finds its input's queue full is dropped and
 * counted: a simulator has nobody to answer 503 to.
 */
import type { SimulatorConfig } from './types.js';

/** Returns how many of the payloads the queue took. */
export type PayloadSink = (payloads: string[]) => number;

export function simulatedPayload(config: SimulatorConfig, random: () => number = Math.random): string {
  const rows = config.tags.map(({ tag, min, max }) => ({ tag, value: Math.round((min + (max - min) * random()) * 100) / 100 }));
  return JSON.stringify(rows);
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
