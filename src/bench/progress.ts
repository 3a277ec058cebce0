/**
 * The progress bar on stderr: seconds elapsed of the planned run and the part running. Without a
 * terminal (ssh into a journal, a CI log) cli-progress prints a line every few seconds instead.
 */
import cliProgress from 'cli-progress';

const TICK_MS = 500;

export class Progress {
  private readonly bar: cliProgress.SingleBar;
  private readonly started = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly total: number) {
    this.bar = new cliProgress.SingleBar(
      { stream: process.stderr, format: 'bench [{bar}] {value}/{total} s | {phase}', noTTYOutput: true, notTTYSchedule: 5000, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    this.bar.start(total, 0, { phase: 'starting' });
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  phase(name: string): void {
    this.bar.update(this.elapsed(), { phase: name });
  }

  stop(): void {
    clearInterval(this.timer);
    this.bar.update(this.elapsed(), { phase: 'done' });
    this.bar.stop();
  }

  /** Whole seconds elapsed; the planned total at most (starts and the import vary by device). */
  private elapsed(): number {
    return Math.min(this.total, Math.floor((performance.now() - this.started) / 1000));
  }

  private tick(): void {
    this.bar.update(this.elapsed());
  }
}
